package server

import (
	"context"
	"net/http"
	"slices"

	"github.com/llmgw/llmgw/pkg/config"
	"github.com/llmgw/llmgw/pkg/gwerr"
	"github.com/llmgw/llmgw/pkg/openaiwire"
	"github.com/llmgw/llmgw/pkg/usage"
)

// Caller is the authenticated identity behind a request.
type Caller struct {
	// Team is the team id, recorded on every usage record.
	Team string
	// KeyID names the team key that was used (a fingerprint, never the key).
	KeyID string
	// Admin callers may read every team's usage.
	Admin bool
	// Routes limits the routes the caller may use; empty means all.
	Routes []string
}

// MayUse reports whether the caller may call a route.
func (c *Caller) MayUse(route string) bool {
	return c == nil || len(c.Routes) == 0 || slices.Contains(c.Routes, route)
}

// Admission is what a limiter needs to decide, before any provider spend,
// whether a request may go ahead.
type Admission struct {
	Caller *Caller
	Route  string
	Tag    string
	Steps  []config.Step
	Req    *openaiwire.ChatRequest
	Body   []byte
	// CapOutputTokens is set by the Admitter when the client asked for no
	// max tokens but the request was admitted for a bounded output (a plan
	// ceiling, a budget reservation): the gateway then asks the provider
	// for at most this many tokens, so real spend cannot outrun the
	// reservation. 0 means no cap.
	CapOutputTokens int
}

// Settle is called exactly once, after the request, with its final record,
// so a limiter can replace its reservation with what was really spent.
type Settle func(ctx context.Context, rec *exchange.Record)

// Authenticator identifies the caller of an API request. It returns a
// *gwerr.Error to refuse (authentication: 401, identical for every cause).
type Authenticator func(r *http.Request) (*Caller, error)

// Admitter enforces limits and budgets before any provider spend. It
// returns a *gwerr.Error (rate_limited or budget_exceeded, with RetryAfter)
// to refuse.
type Admitter func(ctx context.Context, a *Admission) (Settle, error)

// validTag reports whether a feature tag is short and plain.
func validTag(s string) bool {
	if len(s) == 0 || len(s) > 64 {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '-' || c == '_' || c == '.' || c == ':' || c == '/') {
			return false
		}
	}
	return true
}

// requestTag reads the feature tag: the x-gateway-tag header, else
// metadata.tag in the body.
func requestTag(r *http.Request, req *openaiwire.ChatRequest) (string, *gwerr.Error) {
	tag := r.Header.Get("x-gateway-tag")
	if tag == "" && req.Metadata != nil {
		tag = req.Metadata["tag"]
	}
	if tag != "" && !validTag(tag) {
		return "", gwerr.New(gwerr.InvalidRequest, "feature tag must be 1-64 characters of letters, digits and - _ . : /").WithParam("x-gateway-tag")
	}
	return tag, nil
}
