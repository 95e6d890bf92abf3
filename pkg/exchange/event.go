package exchange

import "strings"

// Kind says what an [Event] carries.
type Kind uint8

// The kinds of event. Text, Reasoning, ToolCall and ToolArgs carry generated
// output: the first of them commits a response to its target.
const (
	// Start opens a response: ID and Model are the upstream's, Created its
	// Unix time (0: unknown).
	Start Kind = iota + 1
	// Text is a piece of the answer (Text).
	Text
	// Reasoning is a piece of visible reasoning (Text).
	Reasoning
	// Signature is the signature of the reasoning block just sent (Text):
	// Anthropic's thinking signature, which clients must send back.
	Signature
	// RedactedReasoning is an opaque, encrypted reasoning block (Text
	// holds its data).
	RedactedReasoning
	// ToolCall starts tool call Index (0, 1, 2, ... in output order) with
	// its ID and Name; its arguments follow as ToolArgs.
	ToolCall
	// ToolArgs is a fragment of tool call Index's JSON arguments (Text).
	ToolArgs
	// Finish carries the finish reason (Finish).
	Finish
	// Usage carries the upstream's token counts (Usage).
	Usage
	// Raw is an upstream frame passed through untouched: Raw holds the
	// bytes, RawAPI their API, Flags what they carry. Only an ingress of
	// the same API receives Raw events.
	Raw
)

// Flags describe a Raw event: what the untouched bytes carry.
type Flags uint8

// The flags of a Raw event.
const (
	// HasContent: the frame carries generated output.
	HasContent Flags = 1 << iota
	// HasFinish: the frame carries a finish reason.
	HasFinish
	// UsageOnly: the frame only reports usage (OpenAI's include_usage
	// chunk); it is dropped unless the client asked for it.
	UsageOnly
	// Whole: the frame is a whole non-streaming response body.
	Whole
)

// Finish reasons, in OpenAI's vocabulary (the canonical one).
const (
	FinishStop          = "stop"
	FinishLength        = "length"
	FinishToolCalls     = "tool_calls"
	FinishContentFilter = "content_filter"
)

// Event is one unit of a response, in canonical form. Strings and Raw may
// point into the adapter's read buffer: they are valid until the next call
// to Next (see Clone).
type Event struct {
	Kind  Kind
	Text  string
	Index int
	// ID and Name: the response id and model (Start) or the tool call's
	// id and function name (ToolCall).
	ID, Name string
	// Created is the response's Unix time (Start).
	Created int64
	// Finish is the canonical finish reason; Stop the provider's own
	// reason when it says more (Anthropic's end_turn, stop_sequence,
	// pause_turn), StopSequence the sequence that matched, if known.
	Finish, Stop, StopSequence string
	// Usage is set on Usage events.
	Usage TokenUsage
	// Raw, RawAPI and Flags describe a Raw event.
	Raw    []byte
	RawAPI API
	Flags  Flags
}

// Commits reports whether the event carries generated output, so that it
// commits the response to the target that produced it.
func (e *Event) Commits() bool {
	switch e.Kind {
	case Text, Reasoning, ToolCall, ToolArgs, RedactedReasoning:
		return true
	case Raw:
		return e.Flags&HasContent != 0
	}
	return false
}

// Finishes reports whether the event carries a finish reason.
func (e *Event) Finishes() bool {
	return e.Kind == Finish || e.Kind == Raw && e.Flags&HasFinish != 0
}

// IsUsageOnly reports whether the event only reports usage.
func (e *Event) IsUsageOnly() bool {
	return e.Kind == Usage || e.Kind == Raw && e.Flags&UsageOnly != 0
}

// Clone returns a copy that owns its strings and bytes, for events that
// must outlive the next read (the head buffered before commit).
func (e Event) Clone() Event {
	e.Text = strings.Clone(e.Text)
	e.ID = strings.Clone(e.ID)
	e.Name = strings.Clone(e.Name)
	e.Stop = strings.Clone(e.Stop)
	e.StopSequence = strings.Clone(e.StopSequence)
	if e.Raw != nil {
		e.Raw = append([]byte(nil), e.Raw...)
	}
	return e
}

// TokenUsage counts one attempt's tokens.
type TokenUsage struct {
	// Input counts every prompt token, cached or not.
	Input  int `json:"input_tokens"`
	Output int `json:"output_tokens"`
	// CacheRead and CacheWrite are the input tokens read from and written
	// to the provider's prompt cache.
	CacheRead  int `json:"cache_read_tokens,omitempty"`
	CacheWrite int `json:"cache_write_tokens,omitempty"`
	// Reasoning counts the output tokens spent on reasoning, when the
	// provider reports them.
	Reasoning int `json:"reasoning_tokens,omitempty"`
	// Estimated is true when the figures are the gateway's estimate.
	Estimated bool `json:"estimated,omitempty"`
}

// EstimateTokens is the gateway's documented token estimator for text whose
// usage a provider did not report: one token per four bytes, rounded up. It
// is deliberately simple and marked as an estimate wherever used.
func EstimateTokens(chars int) int { return (chars + 3) / 4 }
