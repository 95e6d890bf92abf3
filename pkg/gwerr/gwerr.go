// Package gwerr holds the gateway's small, documented set of error categories,
// the typed error that carries one, and the single function that decides what
// error text a client may see.
//
// Every failure the gateway reports - a bad request, a provider outage, a
// stream cut part-way - is one *Error with a Category. The category decides
// the HTTP status, whether a retry or a fallback is worth trying, and whether
// the target's circuit breaker is penalised. Client-facing text comes only
// from ClientMessage, which never relays raw upstream bodies.
package gwerr

import (
	"errors"
	"fmt"
	"net/http"
	"time"
	"unicode/utf8"
)

// Category is one of the gateway's documented error categories. It is sent to
// clients as error.type and in the x-gateway-error-category header.
type Category string

// The categories. Their HTTP statuses are given by Category.Status.
const (
	InvalidRequest Category = "invalid_request" // the caller's request is malformed or unsupported (400)
	Authentication Category = "authentication"  // the caller's key is missing, unknown or revoked (401)
	Permission     Category = "permission"      // the caller may not use this route (403)
	NotFound       Category = "not_found"       // unknown model (route) or path (404)
	RateLimited    Category = "rate_limited"    // a rate limit was hit, the caller's or every provider's (429)
	BudgetExceeded Category = "budget_exceeded" // the caller's budget would be exceeded (429)
	ContentPolicy  Category = "content_policy"  // a provider refused the content (400)
	ContextLength  Category = "context_length"  // the request does not fit the model's context window (400)
	Timeout        Category = "timeout"         // a phase timeout or the request deadline passed (504)
	Overloaded     Category = "overloaded"      // providers said they are overloaded (503)
	Unavailable    Category = "unavailable"     // no provider could serve: down, open breakers, bad credentials (502)
	Interrupted    Category = "interrupted"     // a stream failed after its first token (mid-stream only)
	Internal       Category = "internal"        // a gateway bug (500)
)

// Categories lists every category, for documentation and tests.
var Categories = []Category{InvalidRequest, Authentication, Permission, NotFound, RateLimited,
	BudgetExceeded, ContentPolicy, ContextLength, Timeout, Overloaded, Unavailable, Interrupted, Internal}

// Status is the HTTP status a client receives for the category when the
// error happens before the response is committed.
func (c Category) Status() int {
	switch c {
	case InvalidRequest, ContentPolicy, ContextLength:
		return http.StatusBadRequest
	case Authentication:
		return http.StatusUnauthorized
	case Permission:
		return http.StatusForbidden
	case NotFound:
		return http.StatusNotFound
	case RateLimited, BudgetExceeded:
		return http.StatusTooManyRequests
	case Timeout:
		return http.StatusGatewayTimeout
	case Overloaded:
		return http.StatusServiceUnavailable
	case Unavailable, Interrupted:
		return http.StatusBadGateway
	default:
		return http.StatusInternalServerError
	}
}

// ProviderFault reports whether an error of this category counts against a
// provider's circuit breaker. A caller's own mistakes never do.
func (c Category) ProviderFault() bool {
	switch c {
	case RateLimited, Timeout, Overloaded, Unavailable, Interrupted:
		return true
	}
	return false
}

// Retryable reports whether trying the same target again may succeed. It
// is most of the default fallback_on set of a route (see Fallback).
func (c Category) Retryable() bool {
	switch c {
	case RateLimited, Timeout, Overloaded, Unavailable, Interrupted:
		return true
	}
	return false
}

// Fallback reports whether a failure of this category may move a request
// on to the next target of its chain, when the route's fallback_on lists
// it: the retryable categories, a context window too small (a larger
// model may take it) and, only by explicit choice, a content refusal.
// Other categories (the caller's own mistakes) never fall back; listing
// them in fallback_on is a config error.
func (c Category) Fallback() bool {
	return c.Retryable() || c == ContextLength || c == ContentPolicy
}

// Error is the gateway's typed error. Match it with errors.As.
type Error struct {
	Category   Category
	Message    string        // safe, gateway-written text; never an upstream body or a secret
	Detail     string        // upstream text already passed through Redact, shown for caller errors only
	Param      string        // the offending request field, when known
	Code       string        // a short machine code, e.g. model_not_found
	Status     int           // the upstream HTTP status, 0 if none
	RetryAfter time.Duration // a retry-after hint, 0 if none
	Provider   string        // the provider id that produced it, "" for gateway errors
	Cause      error         // the underlying error, for logs (never shown to clients)
	// TraceID is the request's trace id, set by the front before the error
	// is written, so every client API's error body can carry it.
	TraceID string
}

// New returns an *Error with a category and a safe message.
func New(c Category, format string, args ...any) *Error {
	return &Error{Category: c, Message: fmt.Sprintf(format, args...)}
}

// Error implements error. It is used in logs: it includes the cause, so keep
// causes free of secrets (the transports never put keys in errors).
func (e *Error) Error() string {
	s := string(e.Category) + ": " + e.Message
	if e.Provider != "" {
		s = e.Provider + ": " + s
	}
	if e.Cause != nil {
		s += ": " + e.Cause.Error()
	}
	return s
}

// Unwrap returns the cause.
func (e *Error) Unwrap() error { return e.Cause }

// WithParam sets Param and returns e, for chaining at construction.
func (e *Error) WithParam(p string) *Error { e.Param = p; return e }

// WithCode sets Code and returns e, for chaining at construction.
func (e *Error) WithCode(c string) *Error { e.Code = c; return e }

// As returns err as an *Error. Anything else becomes an Internal error that
// keeps err as its cause, so callers always have a category to act on.
func As(err error) *Error {
	if err == nil {
		return nil
	}
	var e *Error
	if errors.As(err, &e) {
		return e
	}
	return &Error{Category: Internal, Message: "internal error", Cause: err}
}

// ClientMessage is the single place that decides what error text a client
// may see. Gateway-written messages are shown as they are. Upstream detail is
// shown only for the caller's own mistakes (invalid request, content policy,
// not found), already redacted and truncated; for every other category the
// client sees only the gateway's message, because provider bodies about our
// credentials or infrastructure are none of the caller's business.
func ClientMessage(e *Error) string {
	msg := e.Message
	if msg == "" {
		msg = string(e.Category)
	}
	switch e.Category {
	case InvalidRequest, ContentPolicy, NotFound:
		if e.Detail != "" {
			msg += ": " + e.Detail
		}
	}
	return bounded(msg)
}

// maxClientMessage bounds the text of an error sent to a client: messages
// quote what the client sent (a role, a type, a field name), and a 3 MB
// value must not come back as a 3 MB error body.
const maxClientMessage = 1024

// bounded cuts msg to maxClientMessage bytes on a character boundary.
func bounded(msg string) string {
	if len(msg) <= maxClientMessage {
		return msg
	}
	cut := maxClientMessage
	for cut > 0 && !utf8.RuneStart(msg[cut]) {
		cut--
	}
	return msg[:cut] + "... (truncated)"
}
