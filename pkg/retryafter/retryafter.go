// Package retryafter is the gateway's one parser of the wait hints
// upstreams send: Retry-After (seconds or an HTTP date), retry-after-ms,
// and the reset values of rate-limit headers (OpenAI's
// x-ratelimit-reset-* durations such as "6m0s", Anthropic's RFC 3339
// anthropic-ratelimit-*-reset times). Provider adapters use [Parse] for
// the retry hint of an error; the key ledger uses it, and [Reset], for
// rate-limit cooldowns and headroom.
package retryafter

import (
	"net/http"
	"strconv"
	"strings"
	"time"
)

// resetHeaders are OpenAI's reset headers, read when a response carries
// no Retry-After.
var resetHeaders = []string{"x-ratelimit-reset-requests", "x-ratelimit-reset-tokens"}

// Parse reads how long a response received at now asks callers to wait:
// retry-after-ms, else Retry-After (seconds or an HTTP date), else the
// latest of OpenAI's x-ratelimit-reset-requests / -tokens. It returns 0
// when none is present or parseable (or the wait is already over).
func Parse(h http.Header, now time.Time) time.Duration {
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
	for _, name := range resetHeaders {
		if t := Reset(h.Get(name), now); !t.IsZero() {
			d = max(d, t.Sub(now))
		}
	}
	return d
}

// Reset reads a rate-limit reset value received at now: a Go duration
// ("1s", "6m0s", "20ms"), a number of seconds, or an RFC 3339 time. It
// returns the zero time when v is empty or unparseable.
func Reset(v string, now time.Time) time.Time {
	v = strings.TrimSpace(v)
	if v == "" {
		return time.Time{}
	}
	if d, err := time.ParseDuration(v); err == nil && d >= 0 {
		return now.Add(d)
	}
	if s, err := strconv.ParseFloat(v, 64); err == nil && s >= 0 {
		return now.Add(time.Duration(s * float64(time.Second)))
	}
	if t, err := time.Parse(time.RFC3339, v); err == nil {
		return t
	}
	return time.Time{}
}
