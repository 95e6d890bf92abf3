package store

import (
	"context"
	"errors"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"
)

// Defaults of a [Caller].
const (
	// DefaultCallTimeout bounds every store call.
	DefaultCallTimeout = 250 * time.Millisecond
	// DefaultCallRetry is how long, after a store call failed, calls that
	// would block a request are skipped (the request works from its cache).
	DefaultCallRetry = time.Second
	// DefaultLogEvery is the minimum gap between two store-error log lines.
	DefaultLogEvery = 10 * time.Second
	// maxStuckCalls caps store calls that outlived their timeout (a store
	// that ignores its context): beyond it, new calls fail at once instead
	// of piling up goroutines.
	maxStuckCalls = 64
)

// errStoreDown is returned without a store call while the store is known
// to be failing (see [DefaultCallRetry]).
var errStoreDown = errors.New("store: recently failed; working from cache")

// errStoreStuck is returned without a store call when too many earlier
// calls are still blocked past their timeout.
var errStoreStuck = errors.New("store: too many calls stuck past their timeout")

// CallerOptions tune a [Caller]. Zero fields take defaults.
type CallerOptions struct {
	// Component names the caller in log lines ("breaker", "ledger").
	Component string
	// Timeout bounds every call (default DefaultCallTimeout).
	Timeout time.Duration
	// Retry is how long after a failed call blocking calls are skipped
	// (default DefaultCallRetry).
	Retry time.Duration
	// LogEvery rate-limits failure log lines (default DefaultLogEvery).
	LogEvery time.Duration
	// Now is the clock (nil: time.Now).
	Now func() time.Time
	// Logger receives the rate-limited failure lines and one line when
	// the store answers again (nil: discarded).
	Logger *slog.Logger
	// NewContext makes the context of one call (nil: a context bounded by
	// Timeout). Tests use it to fire the timeout deterministically.
	NewContext func() (context.Context, context.CancelFunc)
}

// Caller runs store calls for a component that must never let the store
// stall a request: every call is bounded by a timeout (even when the store
// ignores its context), the store's health is remembered so that calls on
// a request's path are skipped for a while after a failure, failures are
// logged at a bounded rate, and background calls are tracked so that
// shutdown and tests can wait for them.
type Caller struct {
	opt     CallerOptions
	limiter logLimiter

	mu        sync.Mutex
	downUntil time.Time // blocking calls are skipped until then

	stuck    atomic.Int32 // calls still running past their deadline
	calls    atomic.Int64 // calls issued to the store
	blocking atomic.Int64 // of which made on a request's path

	bg tracker // goroutines started by Go
}

// NewCaller returns a Caller with o's zero fields defaulted.
func NewCaller(o CallerOptions) *Caller {
	if o.Timeout <= 0 {
		o.Timeout = DefaultCallTimeout
	}
	if o.Retry <= 0 {
		o.Retry = DefaultCallRetry
	}
	if o.LogEvery <= 0 {
		o.LogEvery = DefaultLogEvery
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	c := &Caller{opt: o}
	c.limiter.every = o.LogEvery
	return c
}

func (c *Caller) newContext() (context.Context, context.CancelFunc) {
	if c.opt.NewContext != nil {
		return c.opt.NewContext()
	}
	return context.WithTimeout(context.Background(), c.opt.Timeout)
}

// Healthy reports whether calls that block a request should be made now:
// false for Retry after a failed call.
func (c *Caller) Healthy() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return !c.opt.Now().Before(c.downUntil)
}

// answer reports whether err is an answer from a working store (a failed
// condition or a limit), not a failure of the store.
func answer(err error) bool {
	return err == nil || errors.Is(err, ErrConflict) || errors.Is(err, ErrLimit)
}

// Do runs fn with a context bounded by the timeout and returns its error,
// or the context's error as soon as the timeout fires (fn may still be
// running then; its result is discarded). When blocking is true and the
// store failed recently, fn is not called at all: the caller is on a
// request's path and must work from its cache instead. op names the call
// in log lines.
func (c *Caller) Do(blocking bool, op string, fn func(ctx context.Context) error) error {
	return c.do(nil, blocking, op, fn)
}

// DoContext is [Caller.Do] with the call's context derived from parent:
// the call ends at the Caller's timeout or when parent ends, whichever
// comes first (NewContext is not used).
func (c *Caller) DoContext(parent context.Context, blocking bool, op string, fn func(ctx context.Context) error) error {
	return c.do(parent, blocking, op, fn)
}

// DoWithin is [Caller.Do] with its own timeout in place of the Caller's:
// for a call whose answer is worth waiting longer for than a request's
// read (a budget lease), so that a slow store is not taken for a dead one.
func (c *Caller) DoWithin(timeout time.Duration, blocking bool, op string, fn func(ctx context.Context) error) error {
	if timeout <= 0 {
		timeout = c.opt.Timeout
	}
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	return c.run(ctx, blocking, op, fn)
}

func (c *Caller) do(parent context.Context, blocking bool, op string, fn func(ctx context.Context) error) error {
	var ctx context.Context
	var cancel context.CancelFunc
	if parent != nil {
		ctx, cancel = context.WithTimeout(parent, c.opt.Timeout)
	} else {
		ctx, cancel = c.newContext()
	}
	defer cancel()
	return c.run(ctx, blocking, op, fn)
}

// run makes one call with ctx bounding it.
func (c *Caller) run(ctx context.Context, blocking bool, op string, fn func(ctx context.Context) error) error {
	if blocking && !c.Healthy() {
		return errStoreDown
	}
	if c.stuck.Load() >= maxStuckCalls {
		c.failed(op, errStoreStuck)
		return errStoreStuck
	}
	c.calls.Add(1)
	if blocking {
		c.blocking.Add(1)
	}
	res := make(chan error, 1)
	go func() { res <- fn(ctx) }()
	var err error
	select {
	case err = <-res:
	case <-ctx.Done():
		select {
		case err = <-res: // it finished at the same moment: keep its answer
		default:
			err = ctx.Err()
			c.stuck.Add(1)
			go func() { <-res; c.stuck.Add(-1) }()
		}
	}
	if answer(err) {
		c.ok()
	} else {
		c.failed(op, err)
	}
	return err
}

func (c *Caller) ok() {
	c.mu.Lock()
	was := c.downUntil
	c.downUntil = time.Time{}
	c.mu.Unlock()
	if !was.IsZero() {
		c.opt.Logger.LogAttrs(context.Background(), slog.LevelInfo, "shared state store reachable again",
			slog.String("component", c.opt.Component))
	}
}

func (c *Caller) failed(op string, err error) {
	now := c.opt.Now()
	c.mu.Lock()
	c.downUntil = now.Add(c.opt.Retry)
	c.mu.Unlock()
	if n, ok := c.limiter.allow(now); ok {
		c.opt.Logger.LogAttrs(context.Background(), slog.LevelWarn, "shared state store call failed; working from cached state",
			slog.String("component", c.opt.Component), slog.String("op", op), slog.String("error", err.Error()),
			slog.Int("suppressed", n))
	}
}

// Calls reports how many calls were issued to the store.
func (c *Caller) Calls() int64 { return c.calls.Load() }

// BlockingCalls reports how many of them were made on a request's path.
func (c *Caller) BlockingCalls() int64 { return c.blocking.Load() }

// Go runs fn (background store work) in a new goroutine that [Caller.Wait]
// waits for.
func (c *Caller) Go(fn func()) {
	c.bg.add(1)
	go func() {
		defer c.bg.add(-1)
		fn()
	}()
}

// Wait waits until no goroutine started by Go is running. Go may be called
// concurrently (requests keep starting work while Wait waits).
func (c *Caller) Wait() { c.bg.wait() }

// logLimiter lets one line through per period and counts the others.
type logLimiter struct {
	every time.Duration

	mu         sync.Mutex
	last       time.Time
	suppressed int
}

// allow reports whether a line may be logged now, and how many were
// suppressed since the last one.
func (l *logLimiter) allow(now time.Time) (suppressed int, ok bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if d := now.Sub(l.last); !l.last.IsZero() && d >= 0 && d < l.every {
		l.suppressed++
		return 0, false
	}
	n := l.suppressed
	l.last, l.suppressed = now, 0
	return n, true
}

// tracker counts goroutines. Unlike sync.WaitGroup, add may run
// concurrently with wait.
type tracker struct {
	mu   sync.Mutex
	cond *sync.Cond
	n    int
}

func (t *tracker) add(d int) {
	t.mu.Lock()
	t.n += d
	if t.n == 0 && t.cond != nil {
		t.cond.Broadcast()
	}
	t.mu.Unlock()
}

func (t *tracker) wait() {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.cond == nil {
		t.cond = sync.NewCond(&t.mu)
	}
	for t.n > 0 {
		t.cond.Wait()
	}
}
