package keyledger

import (
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/llmgw/llmgw/pkg/retryafter"
)

// dimension is one rate limit a provider reports headroom for.
type dimension int

// The dimensions read from rate-limit headers.
const (
	dimRequests     dimension = iota // requests (OpenAI and Anthropic)
	dimTokens                        // tokens (OpenAI; Anthropic's combined limit)
	dimInputTokens                   // Anthropic input tokens
	dimOutputTokens                  // Anthropic output tokens
	numDims
)

// dimNames are the dimensions' names in reports and attribute names.
var dimNames = [numDims]string{"requests", "tokens", "input_tokens", "output_tokens"}

// limit is the headroom of one dimension as last reported.
type limit struct {
	known     bool
	remaining float64
	reset     time.Time // zero: the provider did not say
}

// headroom is what one response's headers said about every dimension.
type headroom [numDims]limit

// headerNames lists, per dimension, the remaining and reset headers of
// each provider family. OpenAI (and OpenAI-compatible upstreams such as
// Groq or Azure) sends resets as durations ("1s", "6m0s"); Anthropic sends
// RFC 3339 times.
var headerNames = [numDims][]struct{ remaining, reset string }{
	dimRequests: {
		{"x-ratelimit-remaining-requests", "x-ratelimit-reset-requests"},
		{"anthropic-ratelimit-requests-remaining", "anthropic-ratelimit-requests-reset"},
	},
	dimTokens: {
		{"x-ratelimit-remaining-tokens", "x-ratelimit-reset-tokens"},
		{"anthropic-ratelimit-tokens-remaining", "anthropic-ratelimit-tokens-reset"},
	},
	dimInputTokens: {
		{"anthropic-ratelimit-input-tokens-remaining", "anthropic-ratelimit-input-tokens-reset"},
	},
	dimOutputTokens: {
		{"anthropic-ratelimit-output-tokens-remaining", "anthropic-ratelimit-output-tokens-reset"},
	},
}

// parseHeadroom reads the rate-limit headers of a response received at now.
// ok is false when there were none.
func parseHeadroom(h http.Header, now time.Time) (hr headroom, ok bool) {
	for d := range numDims {
		for _, n := range headerNames[d] {
			v := strings.TrimSpace(h.Get(n.remaining))
			if v == "" {
				continue
			}
			rem, err := strconv.ParseFloat(v, 64)
			if err != nil || rem < 0 {
				continue
			}
			hr[d] = limit{known: true, remaining: rem, reset: retryafter.Reset(h.Get(n.reset), now)}
			ok = true
			break
		}
	}
	return hr, ok
}

// cooldown is how long a 429 asks to wait: Retry-After (and the other
// hints retryafter.Parse reads), else the reset of an exhausted dimension,
// else the latest reset reported; 0 if the response says nothing.
func cooldown(h http.Header, now time.Time) time.Duration {
	if d := retryafter.Parse(h, now); d > 0 {
		return d
	}
	hr, _ := parseHeadroom(h, now)
	var exhausted, any time.Time
	for _, l := range hr {
		if !l.known || l.reset.IsZero() {
			continue
		}
		any = later(any, l.reset)
		if l.remaining <= 0 {
			exhausted = later(exhausted, l.reset)
		}
	}
	if !exhausted.IsZero() {
		return max(exhausted.Sub(now), 0)
	}
	if !any.IsZero() {
		return max(any.Sub(now), 0)
	}
	return 0
}
