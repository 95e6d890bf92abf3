package keyledger

import (
	"testing"
	"time"
)

func TestParseHeadroom(t *testing.T) {
	now := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	hr, ok := parseHeadroom(hdr(
		"x-ratelimit-remaining-requests", "59", "x-ratelimit-reset-requests", "1s",
		"x-ratelimit-remaining-tokens", "149984", "x-ratelimit-reset-tokens", "6m0s"), now)
	if !ok || hr[dimRequests] != (limit{true, 59, now.Add(time.Second)}) || hr[dimTokens] != (limit{true, 149984, now.Add(6 * time.Minute)}) ||
		hr[dimInputTokens].known || hr[dimOutputTokens].known {
		t.Fatalf("OpenAI headers: %+v", hr)
	}
	reset := "2026-03-01T12:00:42Z"
	hr, ok = parseHeadroom(hdr(
		"anthropic-ratelimit-requests-remaining", "49", "anthropic-ratelimit-requests-reset", reset,
		"anthropic-ratelimit-input-tokens-remaining", "20000", "anthropic-ratelimit-input-tokens-reset", reset,
		"anthropic-ratelimit-output-tokens-remaining", "0", "anthropic-ratelimit-output-tokens-reset", reset), now)
	want := now.Add(42 * time.Second)
	if !ok || hr[dimRequests] != (limit{true, 49, want}) || hr[dimInputTokens] != (limit{true, 20000, want}) ||
		hr[dimOutputTokens] != (limit{true, 0, want}) || hr[dimTokens].known {
		t.Fatalf("Anthropic headers: %+v", hr)
	}
	if _, ok := parseHeadroom(hdr("x-ratelimit-remaining-requests", "lots"), now); ok {
		t.Fatal("an unparseable count was read")
	}
}

func TestCooldown(t *testing.T) {
	now := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	cases := []struct {
		name string
		h    map[string]string
		want time.Duration
	}{
		{"retry-after wins", map[string]string{"Retry-After": "3", "anthropic-ratelimit-requests-remaining": "0",
			"anthropic-ratelimit-requests-reset": "2026-03-01T12:00:30Z"}, 3 * time.Second},
		{"exhausted anthropic limit", map[string]string{"anthropic-ratelimit-requests-remaining": "10",
			"anthropic-ratelimit-requests-reset": "2026-03-01T12:00:50Z", "anthropic-ratelimit-tokens-remaining": "0",
			"anthropic-ratelimit-tokens-reset": "2026-03-01T12:00:20Z"}, 20 * time.Second},
		{"latest reset when none is exhausted", map[string]string{"anthropic-ratelimit-requests-remaining": "10",
			"anthropic-ratelimit-requests-reset": "2026-03-01T12:00:50Z"}, 50 * time.Second},
		{"openai reset", map[string]string{"x-ratelimit-remaining-requests": "0", "x-ratelimit-reset-requests": "6m0s"}, 6 * time.Minute},
		{"nothing", nil, 0},
	}
	for _, c := range cases {
		h := hdr()
		for k, v := range c.h {
			h.Set(k, v)
		}
		if got := cooldown(h, now); got != c.want {
			t.Errorf("%s: %v, want %v", c.name, got, c.want)
		}
	}
}
