// Package failover walks a route's fallback chain until one target produces
// its first content, and then relays that target's stream under the
// mid-stream rules.
//
// The line between the two phases is the first content frame. Before it the
// client has seen nothing (not even a status line), so any retryable failure
// - a refused connection, a retryable status, an overloaded body, a stalled
// upstream, an empty success - is retried or skipped silently. After it the
// response belongs to that target: it is never retried and never switched,
// and a failure is reported to the client as a typed error, never as a
// clean end.
package failover

import (
	"context"
	"errors"
	"net/http"
	"slices"
	"time"

	"github.com/llmgw/llmgw/pkg/breaker"
	"github.com/llmgw/llmgw/pkg/config"
	"github.com/llmgw/llmgw/pkg/exchange"
	"github.com/llmgw/llmgw/pkg/gwerr"
	"github.com/llmgw/llmgw/pkg/keyledger"
	"github.com/llmgw/llmgw/pkg/provider"
	"github.com/llmgw/llmgw/pkg/retry"
)

// Cancellation causes: which timer ended an attempt. Why a request ended
// is gwerr.ErrDeadline or gwerr.ErrClientGone.
var (
	errFirstToken = errors.New("first token timeout")
	errIdle       = errors.New("idle timeout")
)

// CodeFirstTokenTimeout marks a timeout before the first byte or token of an
// attempt: the target is left for the next one at once.
const CodeFirstTokenTimeout = "first_token_timeout"

// Router opens responses by walking fallback chains. Its fields are the
// collaborators it needs; nil optional fields take defaults.
type Router struct {
	// Providers maps provider ids to adapters. Required.
	Providers map[string]provider.Provider
	// Breakers guards targets. Required.
	Breakers breaker.Guard
	// Keys picks keys and learns from responses. Required.
	Keys keyledger.Picker
	// Budget caps retries per provider. Required.
	Budget *retry.Budget
	// Sleep waits between attempts; nil waits on a timer, honouring ctx.
	Sleep func(ctx context.Context, d time.Duration) error
	// Rand feeds backoff jitter; nil uses math/rand.
	Rand func() float64
	// Now is the clock; nil means time.Now.
	Now func() time.Time
}

func (r *Router) now() time.Time {
	if r.Now != nil {
		return r.Now()
	}
	return time.Now()
}

func (r *Router) sleep(ctx context.Context, d time.Duration) error {
	if r.Sleep != nil {
		return r.Sleep(ctx, d)
	}
	if d <= 0 {
		return nil
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return context.Cause(ctx)
	}
}

// Open walks the chain until a target produces its first content and
// returns the committed Session. Every attempt and skip is appended to
// rq.Trace. The error is gwerr.ErrClientGone, or a *gwerr.Error that the client
// should see.
func (r *Router) Open(ctx context.Context, rq *exchange.Request) (*Session, error) {
	tr := &rq.Trace
	pol := rq.Policy
	var last, unsupported *gwerr.Error
	maxDepth := len(rq.Steps) - 1
	if pol.MaxFallbacks != nil {
		maxDepth = min(maxDepth, *pol.MaxFallbacks)
	}
	for depth, step := range rq.Steps {
		if depth > maxDepth {
			break
		}
		if last != nil && !slices.Contains(pol.FallbackOn, last.Category) {
			return nil, last
		}
		tr.FallbackDepth = depth
		s, err := r.tryTarget(ctx, rq, step)
		if err == nil {
			tr.Target, tr.Provider = step.ID, step.Provider
			s.open(r, ctx, rq, depth)
			if step.Variant != nil {
				tr.Variant = step.Variant.Name
			}
			return s, nil
		}
		if errors.Is(err, gwerr.ErrClientGone) {
			return nil, err
		}
		ge := gwerr.As(err)
		if ge.Code == provider.CodeUnsupportedFeature {
			// This target cannot honour the request; another may.
			if unsupported == nil {
				unsupported = ge
			}
			continue
		}
		last = ge
		if errors.Is(err, gwerr.ErrDeadline) || !last.Category.Fallback() {
			return nil, last
		}
	}
	switch {
	case last != nil:
		return nil, last
	case unsupported != nil:
		return nil, unsupported
	}
	return nil, gwerr.New(gwerr.Unavailable, "no target of this route is available")
}

// skipped is the error for a target that was not tried at all.
func skipped(msg string) *gwerr.Error { return gwerr.New(gwerr.Unavailable, "%s", msg) }

// tryTarget makes up to step.Attempts attempts at one target.
//
// Between attempts: a Retry-After beyond the route's cap moves on at once;
// so does a first-token timeout (unless the route retries the same target
// on timeouts); a key the provider refused (401/403) or rate-limited (429)
// is replaced by the next usable key at once, which is not a retry and
// spends no retry budget; when the provider has no other usable key, a 429
// whose Retry-After is within the cap is waited out and the same target
// tried again. Every other retry spends the provider's retry budget and
// waits a jittered backoff.
func (r *Router) tryTarget(ctx context.Context, rq *exchange.Request, step config.Step) (*Session, error) {
	pol, tr := rq.Policy, &rq.Trace
	var last *gwerr.Error
	lastKey := ""
attempts:
	for n := 1; n <= step.Attempts; n++ {
		if n == 1 {
			r.Budget.Request(step.Provider)
		} else {
			keyFault := last.Code == provider.CodeProviderCredentials || last.Status == http.StatusTooManyRequests
			next, ok := r.Keys.Pick(step.Provider, step.Model)
			otherKey := ok && next.Fingerprint != "" && next.Fingerprint != lastKey // a provider without keys has no other
			if last.RetryAfter > pol.RetryAfterCap.D() && !(keyFault && otherKey) {
				break // the provider asks for longer than we wait: move on
			}
			if (last.Code == CodeFirstTokenTimeout || last.Code == CodeHeadStall) && !pol.RetrySameTargetOnTimeout {
				break // a silent provider must not double the wait
			}
			wait := max(last.RetryAfter, retry.Backoff(n-1, pol.BackoffBase.D(), pol.BackoffMax.D(), r.Rand))
			switch {
			case keyFault:
				if otherKey {
					wait = 0 // the next attempt uses another key: no retry budget spent
					break
				}
				if last.Status != http.StatusTooManyRequests || last.RetryAfter <= 0 {
					break // no usable key: the attempt below records the skip
				}
				if !r.Budget.Retry(step.Provider, pol.RetryBudget, pol.MinRetriesPerMin) {
					break attempts
				}
				wait = last.RetryAfter // the only key: wait out its Retry-After
			default:
				if !r.Budget.Retry(step.Provider, pol.RetryBudget, pol.MinRetriesPerMin) {
					break attempts
				}
			}
			if err := r.sleep(ctx, wait); err != nil {
				return nil, endErr(ctx)
			}
		}
		done, err := r.allow(ctx, step)
		if err != nil {
			tr.Attempts = append(tr.Attempts, exchange.Attempt{Target: step.ID, Skipped: "breaker_open"})
			return nil, skipped("target " + step.ID + " is skipped: its circuit breaker is open")
		}
		key, ok := r.Keys.Pick(step.Provider, step.Model)
		if !ok {
			done(breaker.Ignored, 0)
			tr.Attempts = append(tr.Attempts, exchange.Attempt{Target: step.ID, Skipped: "no_key"})
			return nil, skipped("target " + step.ID + " is skipped: no usable provider key")
		}
		lastKey = key.Fingerprint
		s, err := r.attempt(ctx, rq, step, key, done)
		if err == nil {
			return s, nil
		}
		if errors.Is(err, gwerr.ErrClientGone) {
			return nil, err
		}
		last = gwerr.As(err)
		if errors.Is(err, gwerr.ErrDeadline) || !last.Category.Retryable() {
			return nil, last
		}
	}
	return nil, last
}

// doneFunc tells the breaker an attempt's outcome and, for a committed
// stream, its time to first token (0 otherwise).
type doneFunc func(o breaker.Outcome, ttft time.Duration)

// allow asks the breaker whether step may be tried, with the request's
// context when the breaker takes one (its transition lines then carry the
// request's trace id, and it learns times to first token).
func (r *Router) allow(ctx context.Context, step config.Step) (doneFunc, error) {
	if cg, ok := r.Breakers.(breaker.ContextGuard); ok {
		return cg.AllowContext(ctx, step.ID, breaker.Force(step.Breaker))
	}
	done, err := r.Breakers.Allow(step.ID, breaker.Force(step.Breaker))
	if err != nil {
		return nil, err
	}
	return func(o breaker.Outcome, _ time.Duration) { done(o) }, nil
}

// endErr is the error for a request whose own context ended.
func endErr(ctx context.Context) error {
	if errors.Is(context.Cause(ctx), gwerr.ErrDeadline) {
		return &gwerr.Error{Category: gwerr.Timeout, Message: "request deadline passed before a provider answered", Cause: gwerr.ErrDeadline}
	}
	return gwerr.ErrClientGone
}
