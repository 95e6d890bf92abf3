package chatwire

import (
	"encoding/json"

	"github.com/llmgw/llmgw/pkg/gwerr"
)

// ErrorEnvelope is the OpenAI error shape {"error": {...}}, used both as an
// HTTP error body and, streamed as a final data frame, as the mid-stream
// error event that makes the OpenAI SDKs raise.
type ErrorEnvelope struct {
	Error APIError `json:"error"`
}

// APIError is the error object. Message, Type, Param and Code are OpenAI's;
// the rest are the gateway's documented extensions.
type APIError struct {
	Message           string   `json:"message"`
	Type              string   `json:"type"`
	Param             *string  `json:"param"`
	Code              *string  `json:"code"`
	Category          string   `json:"category"`
	Retryable         bool     `json:"retryable"`
	RetryAfterSeconds *float64 `json:"retry_after_seconds,omitempty"`
	Provider          string   `json:"provider,omitempty"`
	RequestID         string   `json:"request_id,omitempty"`
	TraceID           string   `json:"trace_id,omitempty"`
	Usage             *Usage   `json:"usage,omitempty"`
}

// NewErrorEnvelope builds the envelope for e. The message comes from
// gwerr.ClientMessage, the one place that decides what clients may see.
func NewErrorEnvelope(e *gwerr.Error, requestID string, usage *Usage) ErrorEnvelope {
	ae := APIError{
		Message:   gwerr.ClientMessage(e),
		Type:      string(e.Category),
		Category:  string(e.Category),
		Retryable: e.Category.Retryable(),
		Provider:  e.Provider,
		RequestID: requestID,
		TraceID:   e.TraceID,
		Usage:     usage,
	}
	if e.Param != "" {
		p := e.Param
		ae.Param = &p
	}
	code := e.Code
	if code == "" {
		code = string(e.Category)
	}
	ae.Code = &code
	if e.RetryAfter > 0 {
		s := e.RetryAfter.Seconds()
		ae.RetryAfterSeconds = &s
	}
	return ErrorEnvelope{Error: ae}
}

// Marshal encodes the envelope.
func (e ErrorEnvelope) Marshal() []byte {
	b, err := json.Marshal(e)
	if err != nil { // cannot happen: every field is a plain value
		return []byte(`{"error":{"message":"internal error","type":"internal","param":null,"code":"internal","category":"internal","retryable":false}}`)
	}
	return b
}
