package server

import (
	"context"
	"net/http"

	"github.com/llmgw/llmgw/pkg/exchange"
)

// Authenticator identifies the caller of an API request. It returns a
// *gwerr.Error to refuse (authentication: 401, identical for every cause).
type Authenticator func(r *http.Request) (*exchange.Caller, error)

// Admitter enforces limits and budgets before any provider spend: it may
// set req.OutputCap (the output the request was admitted for, when the
// client asked for no limit). It returns a *gwerr.Error (rate_limited or
// budget_exceeded, with RetryAfter) to refuse, else the Settle to call
// with the final record.
type Admitter func(ctx context.Context, req *exchange.Request) (exchange.Settle, error)

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
