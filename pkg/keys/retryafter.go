package keys

import (
	"net/http"
	"strconv"
	"strings"
	"time"
)

// RetryAfter reads how long an upstream asks callers to wait: Retry-After
// (seconds or an HTTP date), retry-after-ms, or OpenAI's
// x-ratelimit-reset-requests / -tokens (e.g. "1s", "6m0s"). It returns 0
// when none is present or parseable.
func RetryAfter(h http.Header, now time.Time) time.Duration {
	if v := h.Get("retry-after-ms"); v != "" {
		if ms, err := strconv.ParseFloat(v, 64); err == nil && ms > 0 {
			return time.Duration(ms * float64(time.Millisecond))
		}
	}
	if v := strings.TrimSpace(h.Get("Retry-After")); v != "" {
		if s, err := strconv.ParseFloat(v, 64); err == nil && s >= 0 {
			return time.Duration(s * float64(time.Second))
		}
		if t, err := http.ParseTime(v); err == nil {
			return max(t.Sub(now), 0)
		}
	}
	var d time.Duration
	for _, name := range []string{"x-ratelimit-reset-requests", "x-ratelimit-reset-tokens"} {
		if v := h.Get(name); v != "" {
			if x, err := time.ParseDuration(v); err == nil && x > d {
				d = x
			}
		}
	}
	return d
}
