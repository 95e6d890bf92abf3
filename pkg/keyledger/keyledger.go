// Package keyledger holds provider keys as the gateway handles them and
// the ledger that decides which key to use.
//
// A [Key] carries a secret and the fingerprint that stands in for it in
// logs, storage and health reports; [Resolve] turns the key references of
// a config into keys. The [Ledger] is the [Picker] the failover engine
// asks for a key before each attempt and tells about each upstream
// response: it reads rate-limit headers (headroom), sets a key aside after
// a 429 (until Retry-After or the exhausted limit's reset), disables it
// after a 401/403, and shares all of that with every gateway instance
// through the store (docs/state-model.md).
package keyledger

import (
	"errors"
	"net/http"
	"time"

	"github.com/llmgw/llmgw/pkg/exchange"
)

// Key is one provider credential: the request model's type (exchange.Key),
// so adapters carry what the ledger hands out without depending on it.
type Key = exchange.Key

// Fingerprint returns the stable, non-reversible name of a secret (see
// exchange.Fingerprint).
func Fingerprint(secret string) string { return exchange.Fingerprint(secret) }

// NewKey returns a Key for a secret.
func NewKey(secret string, priority int) Key { return exchange.NewKey(secret, priority) }

// Picker chooses the key for one attempt and learns from its outcome.
//
// The model argument names the pair's slot: a target's model for
// generation, or [Slot] of it for an operation the provider rate-limits
// apart (so that its 429 sets nothing aside for generation).
type Picker interface {
	// Pick returns the best usable key of a provider for a model. The
	// error, an [*UnusableError], says the provider has keys but none is
	// usable now; a provider configured without keys gets the zero Key
	// and no error.
	Pick(provider, model string) (Key, error)
	// Observe records an upstream response for the key that made it.
	Observe(provider, model string, k Key, status int, h http.Header)
}

// UnusableError is Pick's answer when no key of a provider is usable now.
type UnusableError struct {
	// Provider is the provider id.
	Provider string
	// Reason is why the first key to be usable again is not usable now:
	// "disabled" (a 401/403), "rate_limited" (a 429 cooldown),
	// "low_headroom" (an exhausted rate limit before its reset), or
	// [ReasonMissing] when the provider has no key in service at all.
	Reason string
	// Until is when that key is usable again (zero: not known, or never
	// without a config change).
	Until time.Time
}

// Error implements error. It names keys by nothing: no fingerprint, no
// secret.
func (e *UnusableError) Error() string {
	return "no usable key for provider " + e.Provider + " (" + e.Reason + ")"
}

// RateLimited reports whether the keys are set aside by rate limits (a 429
// cooldown or exhausted headroom) rather than rejected or missing: they
// are usable again at Until without anyone's help.
func (e *UnusableError) RateLimited() bool {
	return e.Reason == "rate_limited" || e.Reason == "low_headroom"
}

// Slot is the ledger slot of an operation the provider rate-limits apart
// from generation (Anthropic's count_tokens): the model with the
// operation's name. An empty operation is generation: the model itself.
// Credentials are per key, so a 401/403 in any slot disables the key for
// every slot.
func Slot(model, operation string) string {
	if operation == "" {
		return model
	}
	return model + "@" + operation
}

// Status describes one key for health reports.
type Status struct {
	Fingerprint      string    `json:"fingerprint"`                // the key's name
	Available        bool      `json:"available"`                  // Pick may choose it now
	UnavailableUntil time.Time `json:"unavailable_until,omitzero"` // end of a 429 cooldown
	Disabled         bool      `json:"disabled,omitempty"`         // rejected with a 401/403
	// Reason is why the key is not available: "disabled", "rate_limited",
	// "low_headroom", [ReasonMissing] or [ReasonUnresolved]; empty when it
	// is.
	Reason string `json:"reason,omitempty"`
	// Ref names the configured reference (an SSM parameter or environment
	// variable name, never a secret) of a key that could not be resolved;
	// such a key has no fingerprint and is never picked.
	Ref string `json:"ref,omitempty"`
	// RefKind says what Ref names: "env" (an environment variable) or
	// "ssm" (an SSM parameter).
	RefKind string `json:"ref_kind,omitempty"`
	// Headroom is the provider's last reported remaining quota.
	Headroom []Limit `json:"headroom,omitempty"`
}

// Reasons of a configured key that is not in service because its
// reference could not be resolved (see [Status.Ref]).
const (
	// ReasonMissing: the reference names nothing (e.g. no such SSM
	// parameter; see [ErrNotFound]).
	ReasonMissing = "missing"
	// ReasonUnresolved: reading the reference failed for another reason
	// (access denied, throttling, a timeout).
	ReasonUnresolved = "unresolved"
)

// Describe says, for people, why a key that could not be resolved is not
// in service ("environment variable OPENAI_API_KEY is not set"). It names
// the reference, never a secret.
func (s Status) Describe() string {
	switch {
	case s.RefKind == "env" && s.Reason == ReasonMissing:
		return "environment variable " + s.Ref + " is not set"
	case s.RefKind == "env":
		return "environment variable " + s.Ref + " could not be read"
	case s.Reason == ReasonMissing:
		return "SSM parameter " + s.Ref + " does not exist"
	default:
		return "SSM parameter " + s.Ref + " could not be read"
	}
}

// ErrNotFound is wrapped by key resolvers when a reference names no
// secret at all, as opposed to failing to read it.
var ErrNotFound = errors.New("keyledger: the key reference names nothing")

// Limit is one rate-limit dimension's last reported headroom.
type Limit struct {
	Dimension string    `json:"dimension"`      // requests | tokens | input_tokens | output_tokens
	Remaining float64   `json:"remaining"`      // as last reported
	Reset     time.Time `json:"reset,omitzero"` // when it resets; zero if the provider did not say
}
