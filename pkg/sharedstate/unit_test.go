package sharedstate

import (
	"testing"
	"time"

	"github.com/llmgw/llmgw/pkg/store"
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
	for v, want := range map[string]time.Duration{"20ms": 20 * time.Millisecond, "2m59.56s": 2*time.Minute + 59560*time.Millisecond, "7": 7 * time.Second} {
		if got := parseReset(v, now).Sub(now); got != want {
			t.Errorf("parseReset(%q) = +%v, want +%v", v, got, want)
		}
	}
}

func TestRetryDelay(t *testing.T) {
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
		{"openai reset", map[string]string{"x-ratelimit-remaining-requests": "0", "x-ratelimit-reset-requests": "6m0s"}, 6 * time.Minute},
		{"nothing", nil, 0},
	}
	for _, c := range cases {
		h := hdr()
		for k, v := range c.h {
			h.Set(k, v)
		}
		if got := retryDelay(h, now); got != c.want {
			t.Errorf("%s: %v, want %v", c.name, got, c.want)
		}
	}
}

// The key shapes this package added to pkg/store/keys.go.
func TestKeyShapes(t *testing.T) {
	at := time.Date(2024, 5, 1, 21, 59, 58, 500, time.UTC)
	for _, c := range []struct{ got, want store.Key }{
		{store.BreakerProbeKey("openai-eu/gpt", at), store.Key{PK: "breaker#openai-eu/gpt", SK: "probe#2024-05-01T21:59:58.000000500Z"}},
		{store.LedgerCredentialKey("a#b", "k-1"), store.Key{PK: "ledger#a%23b#k-1", SK: "credential"}},
	} {
		if c.got != c.want {
			t.Errorf("got %v, want %v", c.got, c.want)
		}
		if err := c.got.Validate(); err != nil {
			t.Errorf("%v: %v", c.got, err)
		}
	}
	if store.LedgerCredentialKey("p", "k").PK != store.LedgerKey("p", "k", "m").PK {
		t.Error("a key's credential item must share the partition of its model items")
	}
	probe := store.BreakerProbeKey("t", at).SK
	if lo, hi := store.BreakerWindowSK(at.Add(-time.Hour)), store.BreakerWindowSK(at.Add(time.Hour)); probe >= lo && probe < hi {
		t.Error("a window range query would select probe items")
	}
}
