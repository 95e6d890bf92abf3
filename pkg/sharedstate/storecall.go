package sharedstate

import (
	"context"
	"errors"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/llmgw/llmgw/pkg/store"
)

// Defaults shared by the breaker and the ledger.
const (
	// DefaultStoreTimeout bounds every store call.
	DefaultStoreTimeout = 250 * time.Millisecond
	// DefaultStoreRetry is how long, after a store call failed, calls that
	// would block a request are skipped (the request works from the cache).
	DefaultStoreRetry = time.Second
	// DefaultLogEvery is the minimum gap between two store-error log lines.
	DefaultLogEvery = 10 * time.Second
	// maxStuckCalls caps store calls that outlived their timeout (a store
	// that ignores its context): beyond it, new calls fail at once instead
	// of piling up goroutines.
	maxStuckCalls = 64
)

// errStoreDown is returned without a store call while the store is known
// to be failing (see [DefaultStoreRetry]).
var errStoreDown = errors.New("sharedstate: store recently failed; working from cache")

// errStoreStuck is returned without a store call when too many earlier
// calls are still blocked past their timeout.
var errStoreStuck = errors.New("sharedstate: too many store calls stuck past their timeout")

// caller runs store calls under a bounded timeout, remembers whether the
// store is healthy, and logs failures at a bounded rate. It never lets a
// call take longer than its timeout, even if the store ignores its context.
type caller struct {
	component string // "breaker" or "ledger", for log lines
	timeout   time.Duration
	retry     time.Duration
	now       func() time.Time
	log       *slog.Logger
	limiter   logLimiter

	// newCtx makes the context of one call; tests replace it to fire the
	// timeout deterministically.
	newCtx func() (context.Context, context.CancelFunc)

	mu        sync.Mutex
	downUntil time.Time // sync calls are skipped until then

	stuck        atomic.Int32 // calls still running past their deadline
	calls        atomic.Int64 // calls issued to the store
	blockingRuns atomic.Int64 // of which made on a request's path
}

func newCaller(component string, timeout, retry, logEvery time.Duration, now func() time.Time, log *slog.Logger) *caller {
	c := &caller{component: component, timeout: timeout, retry: retry, now: now, log: log}
	c.limiter.every = logEvery
	c.newCtx = func() (context.Context, context.CancelFunc) {
		return context.WithTimeout(context.Background(), c.timeout)
	}
	return c
}

// healthy reports whether calls that block a request should be made now.
func (c *caller) healthy() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return !c.now().Before(c.downUntil)
}

// answer reports whether err is an answer from a working store (a failed
// condition or a limit), not a failure of the store.
func answer(err error) bool {
	return err == nil || errors.Is(err, store.ErrConflict) || errors.Is(err, store.ErrLimit)
}

// do runs fn with a context bounded by the store timeout and returns its
// error, or the context's error as soon as the timeout fires (fn may still
// be running then; its result is discarded). When blocking is true and the
// store failed recently, fn is not called at all: the caller is on a
// request's path and must work from its cache instead.
func (c *caller) do(blocking bool, op string, fn func(ctx context.Context) error) error {
	if blocking && !c.healthy() {
		return errStoreDown
	}
	if c.stuck.Load() >= maxStuckCalls {
		c.failed(op, errStoreStuck)
		return errStoreStuck
	}
	ctx, cancel := c.newCtx()
	defer cancel()
	c.calls.Add(1)
	if blocking {
		c.blockingRuns.Add(1)
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

func (c *caller) ok() {
	c.mu.Lock()
	was := c.downUntil
	c.downUntil = time.Time{}
	c.mu.Unlock()
	if !was.IsZero() {
		c.log.LogAttrs(context.Background(), slog.LevelInfo, "shared state store reachable again",
			slog.String("component", c.component))
	}
}

func (c *caller) failed(op string, err error) {
	now := c.now()
	c.mu.Lock()
	c.downUntil = now.Add(c.retry)
	c.mu.Unlock()
	if n, ok := c.limiter.allow(now); ok {
		c.log.LogAttrs(context.Background(), slog.LevelWarn, "shared state store call failed; working from cached state",
			slog.String("component", c.component), slog.String("op", op), slog.String("error", err.Error()),
			slog.Int("suppressed", n))
	}
}

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

// ms and fromMS convert times to the unix milliseconds stored in numeric
// attributes (float64 holds them exactly; nanoseconds it would not).
func ms(t time.Time) float64 {
	if t.IsZero() {
		return 0
	}
	return float64(t.UnixMilli())
}

func fromMS(v float64) time.Time {
	if v <= 0 {
		return time.Time{}
	}
	return time.UnixMilli(int64(v)).UTC()
}

// later returns the later of two times.
func later(a, b time.Time) time.Time {
	if a.After(b) {
		return a
	}
	return b
}

// tracker counts background goroutines. Unlike sync.WaitGroup, Add may
// run concurrently with Wait (requests keep starting work while a caller
// waits for the work started so far).
type tracker struct {
	mu   sync.Mutex
	cond *sync.Cond
	n    int
}

// Add registers d goroutines.
func (t *tracker) Add(d int) {
	t.mu.Lock()
	t.n += d
	if t.n == 0 && t.cond != nil {
		t.cond.Broadcast()
	}
	t.mu.Unlock()
}

// Done marks one goroutine finished.
func (t *tracker) Done() { t.Add(-1) }

// Wait waits until no goroutine is running.
func (t *tracker) Wait() {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.cond == nil {
		t.cond = sync.NewCond(&t.mu)
	}
	for t.n > 0 {
		t.cond.Wait()
	}
}

// discardLogger is used when no logger is given.
var discardLogger = slog.New(slog.DiscardHandler)
