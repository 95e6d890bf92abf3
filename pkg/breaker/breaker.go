// Package breaker is the gateway's circuit breaker: one per target
// ("provider/model"), shared by every gateway instance through the store
// (docs/state-model.md).
//
// A target trips on a run of consecutive failures or on the sliding-window
// error rate (with a minimum volume, counted across instances), stays open
// for a cooldown that doubles on every failed probe up to a cap, and then
// lets a bounded number of half-open probes through per probe round,
// across all instances. Only provider faults count; a caller's mistakes
// never do. The rules take their parameters from config.BreakerSettings.
//
// The API is two-step, like sony/gobreaker, so it fits streams: Allow
// before the attempt, then the returned done func once the outcome is
// known. Like gobreaker v2's distributed breaker the state lives in a
// small store interface ([Store]: Get, Put, Add); unlike it, the request
// path normally makes no store call at all.
package breaker

import (
	"context"
	"errors"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/llmgw/llmgw/pkg/config"
	"github.com/llmgw/llmgw/pkg/store"
)

// Outcome is the result of one attempt as the breaker sees it.
type Outcome int

const (
	// Success closes a half-open breaker and counts toward the window.
	Success Outcome = iota
	// Failure is a provider fault: it counts toward tripping.
	Failure
	// Ignored neither succeeds nor fails (a caller's 4xx, a client that
	// left); it only releases a half-open probe slot.
	Ignored
)

// State is a breaker's state.
type State string

// The states.
const (
	Closed   State = "closed"
	Open     State = "open"
	HalfOpen State = "half_open"
)

// ErrOpen is returned by Allow when the target must be skipped.
var ErrOpen = errors.New("breaker: open")

// Force is an operator's override from config: "" (automatic), "open"
// (always skip) or "closed" (always try).
type Force string

// Guard decides whether a target may be tried and learns from the outcome.
type Guard interface {
	// Allow returns ErrOpen when the target must be skipped; otherwise the
	// caller must call done exactly once with the attempt's outcome.
	Allow(target string, force Force) (done func(Outcome), err error)
}

// ContextGuard is a Guard that also takes the request's context (the log
// lines of transitions the request causes carry its trace id,
// traceid.From) and learns each attempt's time to first token with its
// outcome (latency-aware health; 0 when the attempt committed no content
// or the time is not a time to first token). The failover engine uses it
// when the Guard has it.
type ContextGuard interface {
	AllowContext(ctx context.Context, target string, force Force) (done func(o Outcome, ttft time.Duration), err error)
}

// Why a breaker opened (Snapshot.Reason, the transition log line).
const (
	ReasonConsecutive = "consecutive_failures"
	ReasonErrorRate   = "error_rate"
	// ReasonLatency: the time-to-first-token percentile breached the
	// latency threshold, or a probe was slower than it.
	ReasonLatency = "latency"
)

// Reporter describes breakers for health reports.
type Reporter interface {
	// Snapshot reports a target's state (never blocking on the store).
	Snapshot(target string) Snapshot
}

// Snapshot is one breaker's state for health reports and logs.
type Snapshot struct {
	State       State     `json:"state"`                // the effective state now
	ErrorRate   float64   `json:"error_rate"`           // Failures / Requests
	Requests    int       `json:"window_requests"`      // outcomes in the sliding window, all instances
	Failures    int       `json:"window_failures"`      // failures among them
	Consecutive int       `json:"consecutive_failures"` // this instance's current failure run
	OpenUntil   time.Time `json:"open_until,omitzero"`  // end of the cooldown, while open
	Reason      string    `json:"reason,omitempty"`     // why it is open or half-open (Reason*)
	Forced      Force     `json:"forced,omitempty"`     // the operator's override, if any (set by the caller)
	// Latency is the target's time-to-first-token health, when the
	// breaker is latency-aware.
	Latency *LatencySnapshot `json:"latency,omitempty"`
}

// Store is what the breaker needs from the store: single-item
// reads, conditional puts for state transitions, and atomic adds for window
// counters and probe grants.
type Store interface {
	store.Getter
	store.Putter
	store.Adder
}

// Breaker defaults.
const (
	// DefaultCacheTTL is the longest an instance acts on a target's
	// shared state without confirming it with the store.
	DefaultCacheTTL = 2 * time.Second
	// DefaultFlushInterval is the shortest gap between two flushes of a
	// target's local outcome counts (each flush also confirms the cache).
	DefaultFlushInterval = time.Second
	// DefaultVerifyInterval is how often a flushing instance re-reads the
	// state item even when no transition marker says it changed.
	DefaultVerifyInterval = 30 * time.Second
)

// Options tune a [Breaker]. Zero fields take defaults.
type Options struct {
	// CacheTTL bounds how stale a target's shared state may be when a
	// request is admitted (default 2s): an instance learns another one's
	// trip within one flush interval under traffic, and within CacheTTL in
	// any case (an older cache is re-read before admitting a request).
	CacheTTL time.Duration
	// FlushInterval is the shortest gap between two writes of a target's
	// batched outcome counts (default 1s). A failure run that would trip is
	// flushed at once.
	FlushInterval time.Duration
	// QuietInterval is how long a quiet target's successes may stay
	// unflushed and its cached closed state be trusted (default 30s; at
	// most half the window; negative: quiet mode off). A target is quiet on
	// an instance while it is closed, this instance's unflushed outcomes
	// are all successes (none slower than the latency threshold), and the
	// last flush answer showed no failures in the current and previous
	// window buckets. Bounds: a quiet instance learns another instance's
	// marked trip within QuietInterval (plus one store call), and other
	// instances miss at most QuietInterval of its successes from their
	// error rates (which errs toward tripping, never away from it). A
	// local failure, slow sample or transition, or a flush answer with
	// failures, ends quiet mode at once: the failure is flushed with the
	// pending successes, and FlushInterval and CacheTTL apply again. A
	// quiet target skips the VerifyInterval re-read (docs/state-model.md,
	// "Quiet targets").
	QuietInterval time.Duration
	// VerifyInterval is how often a target's state item is re-read even
	// when the window items show no transition marker (default 30s): a
	// safety net for a writer that died between its transition and its
	// marker.
	VerifyInterval time.Duration
	// ProbeLease is the length of one half-open probe round (default: the
	// settings' cooldown). If a granted probe never reports (its instance
	// died), the next round grants new probes; at most HalfOpenProbes are
	// granted per round across all instances.
	ProbeLease time.Duration
	// StoreTimeout bounds every store call (default 250ms).
	StoreTimeout time.Duration
	// StoreRetry is how long after a failed store call requests stop
	// waiting on the store and work from cache and local counts (default
	// 1s); background refreshes keep trying.
	StoreRetry time.Duration
	// StoreContext makes the context of one store call (nil: a context
	// bounded by StoreTimeout). Tests use it to fire timeouts on demand.
	StoreContext func() (context.Context, context.CancelFunc)
	// LogEvery rate-limits store-error log lines (default 10s).
	LogEvery time.Duration
	// Now is the clock (nil: time.Now). Tests shift it instead of sleeping.
	Now func() time.Time
	// Logger receives one line per breaker transition and rate-limited
	// store errors (nil: discarded).
	Logger *slog.Logger
	// OnTransition, when set, is called (outside locks) on every state
	// change this instance sees, whether it made it or learned it.
	OnTransition func(target string, from, to State, snap Snapshot)
}

// Breaker is the [Guard] and [Reporter] of every target, whose state is
// shared by every gateway instance through the store: when one instance
// trips a target, the others skip it within one cache period.
//
// The request path normally makes no store call: each target's shared
// state is cached, outcomes are counted locally and flushed in batches by a
// background goroutine, and the flush's answer confirms the cache. See
// docs/state-model.md for the protocol and the expected store calls.
type Breaker struct {
	st   Store
	cur  atomic.Pointer[settings] // the settings in force (SetSettings)
	opt  Options
	call *store.Caller
	log  *slog.Logger

	mu      sync.Mutex
	targets map[string]*target
}

var (
	_ Guard        = (*Breaker)(nil)
	_ ContextGuard = (*Breaker)(nil)
	_ Reporter     = (*Breaker)(nil)
	_ Store        = store.Store(nil) // every backend will do
)

// New returns the breaker of every target over st, with the given settings
// (already defaulted, e.g. config.Config.Breaker after loading).
func New(st Store, settings config.BreakerSettings, opt Options) *Breaker {
	if opt.CacheTTL <= 0 {
		opt.CacheTTL = DefaultCacheTTL
	}
	if opt.FlushInterval <= 0 {
		opt.FlushInterval = DefaultFlushInterval
	}
	if opt.QuietInterval == 0 {
		opt.QuietInterval = DefaultQuietInterval
	}
	if opt.VerifyInterval <= 0 {
		opt.VerifyInterval = DefaultVerifyInterval
	}
	if opt.ProbeLease <= 0 {
		opt.ProbeLease = max(settings.Cooldown.D(), time.Second)
	}
	if opt.Now == nil {
		opt.Now = time.Now
	}
	if opt.Logger == nil {
		opt.Logger = slog.New(slog.DiscardHandler)
	}
	b := &Breaker{
		st: st, opt: opt, log: opt.Logger, targets: map[string]*target{},
		call: store.NewCaller(store.CallerOptions{Component: "breaker", Timeout: opt.StoreTimeout, Retry: opt.StoreRetry,
			LogEvery: opt.LogEvery, Now: opt.Now, Logger: opt.Logger, NewContext: opt.StoreContext}),
	}
	b.SetSettings(settings)
	return b
}

// settings are the rules in force: the breaker settings and their latency
// part (nil: latency-aware health is off).
type settings struct {
	set config.BreakerSettings
	lat *config.LatencySettings
}

// cfg returns the settings in force.
func (b *Breaker) cfg() *settings { return b.cur.Load() }

// SetSettings puts new rules in force (a config reload): the next decision
// of every target uses them; counts and states already kept stay.
func (b *Breaker) SetSettings(s config.BreakerSettings) {
	if s.Window <= 0 {
		s.Window = config.BuiltinBreaker().Window
	}
	if s.HalfOpenProbes <= 0 {
		s.HalfOpenProbes = 1
	}
	b.cur.Store(&settings{set: s, lat: s.Latency})
}

// Allow implements Guard: AllowContext without a request context or a
// time to first token.
func (b *Breaker) Allow(id string, force Force) (func(Outcome), error) {
	done, err := b.AllowContext(context.Background(), id, force)
	if err != nil {
		return nil, err
	}
	return func(o Outcome) { done(o, 0) }, nil
}

// AllowContext implements ContextGuard. It makes no store call unless the
// cached state is older than CacheTTL (one caller per target reads it,
// bounded by StoreTimeout, while concurrent callers use the cache) or the
// target is half-open (probe grants are coordinated through the store).
// Transitions this call or its done func cause are logged with ctx's
// trace id.
func (b *Breaker) AllowContext(ctx context.Context, id string, force Force) (func(Outcome, time.Duration), error) {
	switch force {
	case "open":
		return nil, ErrOpen
	case "closed":
		return func(Outcome, time.Duration) {}, nil
	}
	t := b.target(id)
	now := b.now()
	t.mu.Lock()
	st, _ := b.stateLocked(t, now)
	if st != Open && (!t.known || now.Sub(t.confirmedAt) >= b.trustLocked(t, now)) && b.call.Healthy() {
		switch {
		case !t.busy:
			// Singleflight: this caller reads; concurrent ones use the
			// cache, or wait for this read when there is no cache yet. A
			// quiet target flushes its successes instead: the answer
			// confirms the cache unless a transition marker moved.
			flush := b.quietLocked(t, now) && t.pending.total > 0
			t.busy, t.loading = true, make(chan struct{})
			t.mu.Unlock()
			if flush {
				b.syncOnce(t)
			} else {
				b.refresh(t, true, now)
			}
			t.mu.Lock()
			t.busy = false
			close(t.loading)
			t.loading = nil
			if t.again { // a sync was asked for meanwhile (urgent or due)
				t.again = false
				b.startSyncLocked(t, b.now())
			}
		case !t.known && t.loading != nil:
			ch := t.loading
			t.mu.Unlock()
			<-ch // bounded: the read it waits for is
			t.mu.Lock()
		}
		st, _ = b.stateLocked(t, now)
	}
	var p probe
	var err error
	switch st {
	case Open:
		err = ErrOpen
		t.mu.Unlock()
	case Closed:
		b.maybeSyncLocked(t, now, false)
		t.mu.Unlock()
	default:
		t.mu.Unlock()
		p, err = b.grantProbe(t, now)
	}
	b.report(ctx, t, "store")
	if err != nil {
		return nil, err
	}
	var once sync.Once
	return func(o Outcome, ttft time.Duration) {
		once.Do(func() {
			if p.active {
				b.probeDone(ctx, t, p, o, ttft)
			} else {
				b.done(ctx, t, o, ttft)
			}
		})
	}, nil
}

// Wait waits for the background syncs started so far (for tests; before
// a process exits, call Flush instead).
func (b *Breaker) Wait() { b.call.Wait() }

// StoreCalls reports how many store calls this breaker has issued (for
// metrics and tests).
func (b *Breaker) StoreCalls() int64 { return b.call.Calls() }
