package retryafter

import (
	"net/http"
	"testing"
	"time"
)

func TestParse(t *testing.T) {
	now := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	for _, c := range []struct {
		name string
		h    []string
		want time.Duration
	}{
		{"seconds", []string{"Retry-After", "7"}, 7 * time.Second},
		{"fractional seconds", []string{"Retry-After", "1.5"}, 1500 * time.Millisecond},
		{"http date", []string{"Retry-After", "Sun, 01 Mar 2026 12:00:30 GMT"}, 30 * time.Second},
		{"http date in the past", []string{"Retry-After", "Sun, 01 Mar 2026 11:00:00 GMT"}, 0},
		{"milliseconds win", []string{"retry-after-ms", "250", "Retry-After", "7"}, 250 * time.Millisecond},
		{"openai resets, the latest", []string{"x-ratelimit-reset-requests", "1s", "x-ratelimit-reset-tokens", "6m0s"}, 6 * time.Minute},
		{"retry-after before resets", []string{"Retry-After", "3", "x-ratelimit-reset-tokens", "6m0s"}, 3 * time.Second},
		{"garbage", []string{"Retry-After", "soon", "retry-after-ms", "-1"}, 0},
		{"nothing", nil, 0},
	} {
		h := http.Header{}
		for i := 0; i+1 < len(c.h); i += 2 {
			h.Set(c.h[i], c.h[i+1])
		}
		if got := Parse(h, now); got != c.want {
			t.Errorf("%s: Parse = %v, want %v", c.name, got, c.want)
		}
	}
}

func TestReset(t *testing.T) {
	now := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	for v, want := range map[string]time.Duration{
		"20ms": 20 * time.Millisecond, "2m59.56s": 2*time.Minute + 59560*time.Millisecond, "7": 7 * time.Second,
		"2026-03-01T12:00:42Z": 42 * time.Second,
	} {
		if got := Reset(v, now).Sub(now); got != want {
			t.Errorf("Reset(%q) = +%v, want +%v", v, got, want)
		}
	}
	for _, v := range []string{"", "  ", "later", "-3"} {
		if got := Reset(v, now); !got.IsZero() {
			t.Errorf("Reset(%q) = %v, want the zero time", v, got)
		}
	}
}
