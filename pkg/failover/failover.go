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
	"strings"
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
	// Unresolved lists, by provider id, the configured keys not in service
	// because their reference did not resolve (keyledger.Resolution): the
	// error of a target skipped for want of a key names them (the
	// environment variable that is not set), never a secret.
	Unresolved map[string][]keyledger.Status
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
// rq.Trace. The error is gwerr.ErrClientGone, or a *gwerr.Error that the
// client should see.
func (r *Router) Open(ctx context.Context, rq *exchange.Request) (*Session, error) {
	return r.open(ctx, rq, nil)
}

// open is Open for a generation (op nil) or another operation.
func (r *Router) open(ctx context.Context, rq *exchange.Request, op *Op) (*Session, error) {
	tr := &rq.Trace
	pol := rq.Policy
	// tried is the error of the last target actually tried: a later
	// target that was only skipped (open breaker, no usable key) does not
	// hide what a tried one answered (a throttle and its Retry-After).
	var last, unsupported, tried *gwerr.Error
	maxDepth := len(rq.Steps) - 1
	if pol.MaxFallbacks != nil {
		maxDepth = min(maxDepth, *pol.MaxFallbacks)
	}
	for depth, step := range rq.Steps {
		if depth > maxDepth {
			break
		}
		if last != nil && !slices.Contains(pol.FallbackOn, last.Category) {
			return nil, untried(tr, last)
		}
		tr.FallbackDepth = depth
		before := len(tr.Attempts)
		s, err := r.tryTarget(ctx, rq, step, op)
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
		if !onlySkipped(tr.Attempts[before:]) {
			tried = ge
		}
		if errors.Is(err, gwerr.ErrDeadline) || !last.Category.Fallback() {
			return nil, last
		}
	}
	switch {
	case tried != nil:
		return nil, tried
	case last != nil:
		return nil, untried(tr, last)
	case unsupported != nil:
		return nil, unsupported
	}
	return nil, gwerr.New(gwerr.Unavailable, "no target of this route is available")
}

// untried is last, the error a request ends with, marked
// gwerr.Untried (a copy with that cause) when no target was tried: every
// attempt on the trace is a skip for an open circuit breaker.
func untried(tr *exchange.Trace, last *gwerr.Error) *gwerr.Error {
	if len(tr.Attempts) == 0 || last.Cause != nil {
		return last
	}
	for _, a := range tr.Attempts {
		if a.Skipped != skipBreakerOpen {
			return last
		}
	}
	e := *last
	e.Cause = &gwerr.Untried{Targets: len(tr.Attempts)}
	return &e
}

// onlySkipped reports whether attempts (one target's) are all skips: the
// target was not tried.
func onlySkipped(attempts []exchange.Attempt) bool {
	for _, a := range attempts {
		if a.Skipped == "" {
			return false
		}
	}
	return true
}

// skipBreakerOpen is the trace's reason for a target skipped because its
// circuit breaker is open.
const skipBreakerOpen = "breaker_open"

// skipped is the error for a target that was not tried at all.
func skipped(msg string) *gwerr.Error { return gwerr.New(gwerr.Unavailable, "%s", msg) }

// noKey is the error for a target skipped because the key ledger has no
// usable key: when its keys are only set aside by rate limits (a 429
// cooldown, exhausted headroom) it is a rate limit the client can wait out
// (429, Retry-After: until the first key is usable again); a provider whose
// keys were rejected is unavailable (502).
func (r *Router) noKey(step config.Step, err error) *gwerr.Error {
	var ue *keyledger.UnusableError
	if errors.As(err, &ue) && ue.RateLimited() {
		return &gwerr.Error{Category: gwerr.RateLimited, Message: "target " + step.ID + " is skipped: its provider keys are rate-limited",
			RetryAfter: max(ue.Until.Sub(r.now()), time.Second), Cause: err}
	}
	msg := "target " + step.ID + " is skipped: no usable provider key"
	if refs := r.Unresolved[step.Provider]; len(refs) > 0 {
		why := make([]string, len(refs))
		for i, st := range refs {
			why[i] = st.Describe()
		}
		msg += " (" + strings.Join(why, "; ") + ")"
	}
	return skipped(msg)
}

// tryTarget makes up to step.Attempts attempts at one target; between two
// of them, again decides whether and how long to wait.
func (r *Router) tryTarget(ctx context.Context, rq *exchange.Request, step config.Step, op *Op) (*Session, error) {
	tr := &rq.Trace
	slot := keyledger.Slot(step.LedgerModel(), op.name())
	var last *gwerr.Error
	lastKey := ""
	for n := 1; n <= step.Attempts; n++ {
		if n == 1 {
			r.Budget.Request(step.Provider)
		} else {
			retry, err := r.again(ctx, rq.Policy, step, slot, n, last, lastKey)
			if err != nil {
				return nil, err
			}
			if !retry {
				break
			}
		}
		done, err := r.allow(ctx, step)
		if err != nil {
			tr.Attempts = append(tr.Attempts, exchange.Attempt{Target: step.ID, Skipped: skipBreakerOpen, Start: r.now()})
			if last != nil {
				return nil, last // the breaker opened on this target's own failures: they are the answer
			}
			return nil, skipped("target " + step.ID + " is skipped: its circuit breaker is open")
		}
		key, err := r.Keys.Pick(step.Provider, slot)
		if err != nil {
			done(breaker.Ignored, 0)
			tr.Attempts = append(tr.Attempts, exchange.Attempt{Target: step.ID, Skipped: "no_key", Start: r.now()})
			if last != nil {
				return nil, last
			}
			return nil, r.noKey(step, err)
		}
		lastKey = key.Fingerprint
		s, err := r.attempt(ctx, rq, step, key, done, op)
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

// again decides what follows failed attempt n-1 (its error last, made with
// the key lastKey) at the same target, and waits when it retries. false
// gives up on the target: last is its error.
//
// A key the provider refused (401/403) or rate-limited (429) is replaced
// by the next usable key at once, which is not a retry and spends no retry
// budget. Everything else is a retry and spends the provider's retry
// budget - whether the provider has keys or not (Bedrock's credential
// chain): after a first-token timeout it moves on at once (unless the
// route retries the same target on timeouts); otherwise it waits the
// longer of a jittered backoff and the provider's hint, which on a 429 of
// the only key is when the key ledger will let the key be used again (a
// short Retry-After does not free a key whose token limit is spent for
// minutes). A hint beyond the route's retry_after_cap, or a wait the
// request's deadline would not outlast, moves on at once, with last
// telling the client when to come back (Retry-After).
func (r *Router) again(ctx context.Context, pol config.Policy, step config.Step, slot string, n int, last *gwerr.Error, lastKey string) (bool, error) {
	keyFault := last.Code == provider.CodeProviderCredentials || last.Status == http.StatusTooManyRequests
	next, perr := r.Keys.Pick(step.Provider, slot)
	if keyFault && perr == nil && next.Fingerprint != "" && next.Fingerprint != lastKey {
		if err := r.sleep(ctx, 0); err != nil { // another key: not a retry
			return false, endErr(ctx)
		}
		return true, nil
	}
	if (last.Code == CodeFirstTokenTimeout || last.Code == CodeHeadStall) && !pol.RetrySameTargetOnTimeout {
		return false, nil // a silent provider must not double the wait
	}
	hint := last.RetryAfter
	var ue *keyledger.UnusableError
	if errors.As(perr, &ue) {
		if !ue.RateLimited() {
			return true, nil // no key left at all: the attempt records the skip
		}
		if d := ue.Until.Sub(r.now()); d > hint {
			hint = d
			last.RetryAfter = d // what the client is told if we do not wait
		}
	}
	if hint > pol.RetryAfterCap.D() {
		return false, nil // the provider asks for longer than we wait: move on
	}
	wait := max(hint, retry.Backoff(n-1, pol.BackoffBase.D(), pol.BackoffMax.D(), r.Rand))
	if dl, ok := ctx.Deadline(); ok && time.Until(dl) <= wait {
		return false, nil // the request would end while waiting
	}
	if !r.Budget.Retry(step.Provider, pol.RetryBudget, pol.MinRetriesPerMin) {
		return false, nil
	}
	if err := r.sleep(ctx, wait); err != nil {
		return false, endErr(ctx)
	}
	return true, nil
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
