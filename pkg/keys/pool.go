package keys

import (
	"errors"
	"net/http"
	"sort"
	"sync"
	"time"
)

// Picker chooses the key for one attempt and learns from its outcome.
type Picker interface {
	// Pick returns the best usable key of a provider for a model. ok is
	// false when the provider has keys but none is usable now; a provider
	// configured without keys gets the zero Key and ok true.
	Pick(provider, model string) (k Key, ok bool)
	// Observe records an upstream response for the key that made it.
	Observe(provider, model string, k Key, status int, h http.Header)
}

// PoolSettings tunes a Pool.
type PoolSettings struct {
	// MaxCooldown caps how long a rate-limited key is set aside (default 60s).
	MaxCooldown time.Duration
	// DefaultCooldown is used for a 429 without Retry-After (default 10s).
	DefaultCooldown time.Duration
	// Now is the clock (nil: time.Now).
	Now func() time.Time
}

// Pool is an in-process Picker: per (provider, key, model) it remembers an
// unavailable-until stamp after a 429 and disables a key after a 401/403
// until the config changes (a new Pool is built on every config change).
type Pool struct {
	set   PoolSettings
	keys  map[string][]Key // provider -> keys by priority
	mu    sync.Mutex
	state map[slot]*slotState
}

type slot struct{ provider, fp, model string }

type slotState struct {
	until    time.Time
	disabled bool
}

var _ Picker = (*Pool)(nil)

// NewPool returns a Pool over each provider's resolved keys.
func NewPool(keys map[string][]Key, set PoolSettings) *Pool {
	if set.MaxCooldown == 0 {
		set.MaxCooldown = 60 * time.Second
	}
	if set.DefaultCooldown == 0 {
		set.DefaultCooldown = 10 * time.Second
	}
	if set.Now == nil {
		set.Now = time.Now
	}
	p := &Pool{set: set, state: map[slot]*slotState{}}
	p.SetKeys(keys)
	return p
}

// SetKeys replaces the keys after a config change. What the pool learned
// about keys that remain (rate limits) is kept; a disabled key stays
// disabled only while its secret is unchanged, so rotating a key re-enables
// its slot.
func (p *Pool) SetKeys(keys map[string][]Key) {
	sorted := make(map[string][]Key, len(keys))
	for prov, ks := range keys {
		ks = append([]Key(nil), ks...)
		sort.SliceStable(ks, func(i, j int) bool { return ks[i].Priority < ks[j].Priority })
		sorted[prov] = ks
	}
	p.mu.Lock()
	p.keys = sorted
	p.mu.Unlock()
}

// Configured reports whether the provider has any key at all.
func (p *Pool) Configured(provider string) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	return len(p.keys[provider]) > 0
}

// Pick implements Picker.
func (p *Pool) Pick(provider, model string) (Key, bool) {
	now := p.set.Now()
	p.mu.Lock()
	defer p.mu.Unlock()
	ks, ok := p.keys[provider]
	if !ok {
		return Key{}, true
	}
	for _, k := range ks {
		st := p.state[slot{provider, k.Fingerprint, model}]
		if st == nil || (!st.disabled && !now.Before(st.until)) {
			return k, true
		}
	}
	return Key{}, false
}

// Observe implements Picker.
func (p *Pool) Observe(provider, model string, k Key, status int, h http.Header) {
	if k.Fingerprint == "" {
		return
	}
	var st slotState
	switch {
	case status == http.StatusTooManyRequests:
		d := RetryAfter(h, p.set.Now())
		if d <= 0 {
			d = p.set.DefaultCooldown
		}
		st.until = p.set.Now().Add(min(d, p.set.MaxCooldown))
	case status == http.StatusUnauthorized || status == http.StatusForbidden:
		st.disabled = true
	default:
		return
	}
	p.mu.Lock()
	p.state[slot{provider, k.Fingerprint, model}] = &st
	p.mu.Unlock()
}

// Status describes one key for health reports.
type Status struct {
	Fingerprint      string    `json:"fingerprint"`
	Available        bool      `json:"available"`
	UnavailableUntil time.Time `json:"unavailable_until,omitzero"`
	Disabled         bool      `json:"disabled,omitempty"`
	// Reason is why the key is not available: "disabled", "rate_limited",
	// "low_headroom", [ReasonMissing] or [ReasonUnresolved]; empty when it
	// is.
	Reason string `json:"reason,omitempty"`
	// Ref names the configured reference (an SSM parameter or environment
	// variable name, never a secret) of a key that could not be resolved;
	// such a key has no fingerprint and is never picked.
	Ref string `json:"ref,omitempty"`
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

// ErrNotFound is wrapped by key resolvers when a reference names no
// secret at all, as opposed to failing to read it.
var ErrNotFound = errors.New("keys: the key reference names nothing")

// Limit is one rate-limit dimension's last reported headroom.
type Limit struct {
	Dimension string    `json:"dimension"` // requests | tokens | input_tokens | output_tokens
	Remaining float64   `json:"remaining"`
	Reset     time.Time `json:"reset,omitzero"`
}

// Statuses reports every key of a provider for a model.
func (p *Pool) Statuses(provider, model string) []Status {
	now := p.set.Now()
	p.mu.Lock()
	defer p.mu.Unlock()
	var out []Status
	for _, k := range p.keys[provider] {
		s := Status{Fingerprint: k.Fingerprint, Available: true}
		if st := p.state[slot{provider, k.Fingerprint, model}]; st != nil {
			s.Disabled = st.disabled
			if now.Before(st.until) {
				s.UnavailableUntil = st.until
			}
			s.Available = !st.disabled && !now.Before(st.until)
		}
		out = append(out, s)
	}
	return out
}
