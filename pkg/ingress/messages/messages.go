// Package messages is the Anthropic Messages ingress (POST /v1/messages,
// and POST /v1/messages/count_tokens): validation of the request (see
// request.go), its canonical Prompt for translating targets (prompt.go; the
// retiring Chat form in canonical.go),
// an encoder that relays an Anthropic upstream's own frames untouched
// (passthrough) or builds Anthropic server-sent events and Message bodies
// from the canonical events of any other upstream (stream.go, body.go),
// and Anthropic's error shape, {"type":"error","error":{"type","message"}},
// for every error on this API.
package messages

import (
	"encoding/json"
	"errors"
	"net/http"
	"strings"

	"github.com/llmgw/llmgw/pkg/exchange"
	"github.com/llmgw/llmgw/pkg/gwerr"
	"github.com/llmgw/llmgw/pkg/ingress"
)

// Ingress is the Anthropic Messages API.
type Ingress struct{}

var (
	_ ingress.Ingress = Ingress{}
	_ ingress.Counter = Ingress{}
)

// forwarded are the client headers an Anthropic upstream receives unchanged.
var forwarded = []string{"Anthropic-Version", "Anthropic-Beta"} // canonical: http.Header's keys

// API implements ingress.Ingress.
func (Ingress) API() exchange.API { return exchange.Messages }

// Decode implements ingress.Ingress.
func (Ingress) Decode(r *http.Request, body []byte, req *exchange.Request) error {
	return decode(r, body, req, false)
}

// DecodeCount implements ingress.Counter: a count_tokens body is a Messages
// request without max_tokens.
func (Ingress) DecodeCount(r *http.Request, body []byte, req *exchange.Request) error {
	return decode(r, body, req, true)
}

func decode(r *http.Request, body []byte, req *exchange.Request, count bool) error {
	mr, keys, err := parse(body, count)
	if err != nil {
		return err
	}
	prompt, untranslated, err := toPrompt(mr, keys)
	if err != nil {
		return err
	}
	req.Prompt, req.Body, req.Untranslated = prompt, body, untranslated
	req.Route, req.Stream, req.WantsUsage = mr.Model, mr.Stream && !count, true
	for _, h := range forwarded {
		if vs := r.Header[h]; len(vs) > 0 {
			if req.Header == nil {
				req.Header = http.Header{}
			}
			req.Header[h] = append([]string(nil), vs...)
		}
	}
	return nil
}

// NewEncoder implements ingress.Ingress.
func (Ingress) NewEncoder(req *exchange.Request) ingress.Encoder {
	if req.Stream {
		return &streamEncoder{model: req.Route}
	}
	return &bodyEncoder{model: req.Route}
}

// WriteError implements ingress.Ingress: Anthropic's error shape, with the
// gateway's category, retryable flag, provider and request id as extra
// members of the error object (the Anthropic SDKs keep unknown members).
func (Ingress) WriteError(w http.ResponseWriter, req *exchange.Request, e *gwerr.Error) int {
	return WriteError(w, e, req.ID)
}

// WriteError writes e in Anthropic's error shape with the status Status
// gives, and returns the status.
func WriteError(w http.ResponseWriter, e *gwerr.Error, rid string) int {
	h := w.Header()
	h.Set("Content-Type", "application/json")
	ingress.SetErrorHeaders(h, e)
	if rid != "" {
		h.Set("request-id", rid)
	}
	status := Status(e)
	w.WriteHeader(status)
	w.Write(errorBody(e, rid, nil))
	return status
}

// Status is the HTTP status of e on this API: the category's status,
// except 529 for overloaded (as Anthropic answers), 413 for a body over the
// size limit and 405 for a wrong method.
func Status(e *gwerr.Error) int {
	switch {
	case e.Code == ingress.CodeBodyTooLarge:
		return http.StatusRequestEntityTooLarge
	case e.Category == gwerr.Overloaded:
		return 529
	}
	return ingress.Status(e)
}

// ErrorType is Anthropic's error type for e: invalid_request_error (the
// caller's mistakes, content refusals, a prompt too long),
// authentication_error, permission_error, not_found_error,
// request_too_large, rate_limit_error (limits and budgets), timeout_error,
// overloaded_error (also for a stream cut by an overloaded upstream), and
// api_error for every other failure.
func ErrorType(e *gwerr.Error) string {
	switch e.Category {
	case gwerr.InvalidRequest:
		if e.Code == ingress.CodeBodyTooLarge {
			return "request_too_large"
		}
		return "invalid_request_error"
	case gwerr.ContentPolicy, gwerr.ContextLength:
		return "invalid_request_error"
	case gwerr.Authentication:
		return "authentication_error"
	case gwerr.Permission:
		return "permission_error"
	case gwerr.NotFound:
		return "not_found_error"
	case gwerr.RateLimited, gwerr.BudgetExceeded:
		return "rate_limit_error"
	case gwerr.Timeout:
		return "timeout_error"
	case gwerr.Overloaded:
		return "overloaded_error"
	}
	var cause *gwerr.Error
	if errors.As(e.Cause, &cause) && cause.Category == gwerr.Overloaded {
		return "overloaded_error"
	}
	return "api_error"
}

// apiError is the error object: Anthropic's type and message, then the
// gateway's documented extensions.
type apiError struct {
	Type              string     `json:"type"`
	Message           string     `json:"message"`
	Category          string     `json:"category"`
	Retryable         bool       `json:"retryable"`
	RetryAfterSeconds *float64   `json:"retry_after_seconds,omitempty"`
	Param             string     `json:"param,omitempty"`
	Code              string     `json:"code,omitempty"`
	Provider          string     `json:"provider,omitempty"`
	RequestID         string     `json:"request_id,omitempty"`
	TraceID           string     `json:"trace_id,omitempty"`
	Usage             *usageJSON `json:"usage,omitempty"`
}

// errorBody is {"type":"error","error":{...},"request_id":rid,
// "trace_id":...} (the trace id also in the error object, as the request
// id is). A prompt
// too long for the model's context says so in Anthropic's words ("prompt is
// too long"), which clients such as Claude Code look for.
func errorBody(e *gwerr.Error, rid string, u *usageJSON) []byte {
	msg := gwerr.ClientMessage(e)
	if e.Category == gwerr.ContextLength && !strings.Contains(strings.ToLower(msg), "prompt is too long") {
		msg = "prompt is too long: " + msg
	}
	ae := apiError{Type: ErrorType(e), Message: msg, Category: string(e.Category), Retryable: e.Category.Retryable(),
		Param: e.Param, Code: e.Code, Provider: e.Provider, RequestID: rid, TraceID: e.TraceID, Usage: u}
	if e.RetryAfter > 0 {
		s := e.RetryAfter.Seconds()
		ae.RetryAfterSeconds = &s
	}
	b, err := json.Marshal(struct {
		Type      string   `json:"type"`
		Error     apiError `json:"error"`
		RequestID string   `json:"request_id,omitempty"`
		TraceID   string   `json:"trace_id,omitempty"`
	}{"error", ae, rid, e.TraceID})
	if err != nil { // cannot happen: every field is a plain value
		return []byte(`{"type":"error","error":{"type":"api_error","message":"internal error"}}`)
	}
	return b
}
