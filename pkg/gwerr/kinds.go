package gwerr

import "fmt"

// Error kinds a layer sets as an Error's Cause (or deeper in its chain)
// for another layer to match with errors.As, beyond the category.

// Upstream is an upstream failure under the name its own API gave it (a
// Bedrock exception type, ThrottlingException, ...). The adapter of that
// API puts it in its errors' chain; an ingress of the same API (Service)
// answers with the same type, so the client's SDK raises the exception
// class, and retries exactly as, the upstream's answer would have made it.
// Other ingresses go by the category.
type Upstream struct {
	// Service names the API (for Bedrock: bedrockwire.Service).
	Service string
	// Type is the error type as that API names it.
	Type string
	// Err is the upstream error (for logs), or nil.
	Err error
}

// Error implements error.
func (u *Upstream) Error() string {
	if u.Err != nil {
		return u.Service + " " + u.Type + ": " + u.Err.Error()
	}
	return u.Service + " " + u.Type
}

// Unwrap returns the upstream error.
func (u *Upstream) Unwrap() error { return u.Err }

// Untried is the cause the failover engine gives the error of a request
// none of whose targets was tried: every one was skipped, its circuit
// breaker open, before any call. No upstream has answered, so an ingress
// may tell its client to back off and retry (Bedrock:
// ServiceUnavailableException, which every AWS SDK retries).
type Untried struct {
	// Targets is how many targets were skipped.
	Targets int
}

// Error implements error.
func (u *Untried) Error() string {
	return fmt.Sprintf("no target was tried: the circuit breakers of all %d are open", u.Targets)
}
