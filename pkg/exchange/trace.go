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
	// Continues marks an attempt at continuing a stream cut mid-way.
	Continues bool          `json:"continues,omitempty"`
	Latency   time.Duration `json:"-"`
	LatencyM  float64       `json:"latency_ms"`
	// Start is when the attempt began (or the target was skipped): the
	// start of its trace span. Not stored.
	Start time.Time `json:"-"`
	// Stage is "" for an attempt at generating the answer, or the stage
	// that made the call: StageModerationInput, StageModerationOutput.
	Stage string `json:"stage,omitempty"`
	// InputTokens and OutputTokens are a stage call's usage (a chat-based
	// moderation check), or the tokens of a generation attempt discarded
	// inside the head buffer (it streamed content, then failed before the
	// client saw any, and the next target served); either way not in the
	// record's own totals, and priced into the request's cost.
	InputTokens  int `json:"input_tokens,omitempty"`
	OutputTokens int `json:"output_tokens,omitempty"`
	// ToolCalls is the server-side tool use (searches, containers, ...)
	// of a generation attempt discarded inside the head buffer, priced
	// into the request's cost like its tokens.
	ToolCalls ToolCalls `json:"tool_calls,omitzero"`
	// Decision is a moderation layer's outcome on its call: allow, block,
	// error_allowed (fail_open) or error_blocked (fail_closed); Reason is
	// why (the category violated, or the error), never the text.
	Decision string `json:"decision,omitempty"`
	Reason   string `json:"reason,omitempty"`
	// TextUnits are the text units a guardrail call was billed for (every
	// policy's); CostUSD is a stage call's own price (guardrail text
	// units at the configured prices), added to the request's cost.
	TextUnits int     `json:"text_units,omitempty"`
	CostUSD   float64 `json:"cost_usd,omitempty"`
	// Calls counts the calls this attempt stands for when output
	// moderation checked the answer window by window (one attempt per
	// layer and outcome, its latency, units and cost summed); 0 means 1.
	Calls int `json:"calls,omitempty"`
}

// Stages that make calls of their own, recorded as attempts.
const (
	StageModerationInput  = "moderation_input"
	StageModerationOutput = "moderation_output"
)

// GenerationAttempts counts the attempts at generating the answer (stage
// calls left out): x-gateway-attempts.
func (t *Trace) GenerationAttempts() int {
	n := 0
	for i := range t.Attempts {
		if t.Attempts[i].Stage == "" {
			n++
		}
	}
	return n
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
	// Continued lists the targets that continued the stream after a cut
	// (mid-stream continuation), in order.
	Continued []string
	// Dropped lists the request features translating targets went
	// without because the route's translate_without allowed it
	// (provider.Refuse), by target.
	Dropped []Drop
}

// Drop is one feature (Key, as translate_without names it) that target
// Target went without.
type Drop struct{ Target, Key string }

// NoteDrop records that target went without feature key (once).
func (t *Trace) NoteDrop(target, key string) {
	d := Drop{Target: target, Key: key}
	for _, x := range t.Dropped {
		if x == d {
			return
		}
	}
	t.Dropped = append(t.Dropped, d)
}

// DroppedBy returns the keys target went without, in the order noted.
func (t *Trace) DroppedBy(target string) []string {
	var out []string
	for _, d := range t.Dropped {
		if d.Target == target {
			out = append(out, d.Key)
		}
	}
	return out
}

// Millis converts a duration to fractional milliseconds, the unit of every
// latency the gateway records.
func Millis(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }
