package exchange

import (
	"time"

	"github.com/llmgw/llmgw/pkg/gwerr"
)

// Attempt records one try (or one skip) of one target.
type Attempt struct {
	Target   string         `json:"target"`
	Key      string         `json:"key,omitempty"` // fingerprint, never the key
	Status   int            `json:"status,omitempty"`
	Category gwerr.Category `json:"category,omitempty"` // empty on success
	Phase    string         `json:"phase,omitempty"`    // where it failed: first_byte, first_token
	Skipped  string         `json:"skipped,omitempty"`  // breaker_open, no_key
	Latency  time.Duration  `json:"-"`
	LatencyM float64        `json:"latency_ms"`
}

// Trace is what happened while serving one request.
type Trace struct {
	Attempts []Attempt
	// FallbackDepth is the chain index of the target that served (or was
	// tried last).
	FallbackDepth int
	// Target is the target that served ("" if none); Provider its
	// provider id.
	Target   string
	Provider string
	// Variant names the prompt variant of the target that served ("" if
	// none).
	Variant string
	// MalformedFrames counts upstream frames that were not valid JSON:
	// skipped, never forwarded to the client.
	MalformedFrames int
}

// Millis converts a duration to fractional milliseconds, the unit of every
// latency the gateway records.
func Millis(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }
