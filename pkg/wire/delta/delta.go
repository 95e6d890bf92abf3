// Package delta is the API-neutral form of what one upstream frame (a
// streamed event, or a whole response body) carries, as the wire packages'
// readers report it: chatwire.ReadChunk, messageswire.ReadEvent,
// responseswire.ReadEvent and their whole-body forms. Each API's frames are
// read in its wire package only; the ingress of that API (reading its
// passthrough frames back, for the response cache and pacing) and the
// adapters (relaying or translating them) consume these parts.
// exchange.AppendParts turns them into canonical events.
//
// A Part's strings may point into the frame's bytes: they are valid as
// long as the frame is.
package delta

// Kind says what a Part carries.
type Kind uint8

// The kinds of part.
const (
	// Start opens a response: ID (the response id), Name (the model),
	// Created (Unix time, 0 when the frame has none).
	Start Kind = iota + 1
	// Text is a piece of the answer (Text).
	Text
	// Reasoning is a piece of visible reasoning (Text).
	Reasoning
	// Signature is the signature of the reasoning just sent (Text).
	Signature
	// RedactedReasoning is an opaque, encrypted reasoning block (Text).
	RedactedReasoning
	// ToolCall starts tool call Index with its ID and Name. Index numbers
	// the calls of one response in output order; it need not be dense
	// (a Messages stream numbers them by content block, a Responses
	// stream by output item).
	ToolCall
	// ToolArgs is a fragment of tool call Index's JSON arguments (Text).
	ToolArgs
	// Refusal is text in which the model declines (OpenAI's refusal
	// field): output, but not answer text. A translating adapter shows it
	// as text; a cached replay cannot tell it apart, so it is not cached.
	Refusal
	// Finish carries the finish reason: Finish in the canonical (OpenAI)
	// vocabulary, Stop the API's own when it says more, StopSequence the
	// sequence that matched.
	Finish
	// Usage carries the token counts a frame reports (Usage, a Tokens).
	Usage
	// Opaque is output the canonical events have no place for (Name says
	// what: "logprobs", "citations", "web_search_call", ...): relayed
	// untouched, but neither cached nor translated.
	Opaque
)

// Part is one piece of what a frame carries.
type Part struct {
	Kind                       Kind
	Index                      int
	ID, Name, Text             string
	Created                    int64
	Finish, Stop, StopSequence string
	Usage                      Tokens
}

// Tokens is the token counts a frame reports. Input counts every prompt
// token, cached or not.
type Tokens struct {
	Input, Output, CacheRead, CacheWrite, Reasoning int
	// CacheWrite1h is the part of CacheWrite written with a 1-hour
	// lifetime; Tier the service tier the upstream says served it.
	CacheWrite1h int
	Tier         string
}
