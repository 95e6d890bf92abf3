package teams

import (
	"context"
	"log/slog"
	"sync"
	"time"

	"github.com/tidwall/gjson"

	"github.com/llmgw/llmgw/pkg/config"
	"github.com/llmgw/llmgw/pkg/exchange"
	"github.com/llmgw/llmgw/pkg/gwerr"
	"github.com/llmgw/llmgw/pkg/store"
	"github.com/llmgw/llmgw/pkg/usage"
)

// Limiter enforces team and tag limits before any provider spend; its Admit
// method is server.Options.Admit (a server.Admitter). Create it with
// NewLimiter. It holds budget leases (see lease.go): call Flush before the
// process exits, so that their unspent part goes back to the shared
// counters.
type Limiter struct {
	store  store.Adder
	config func() *config.Config
	log    *slog.Logger
	call   *store.Caller
	// Now is the clock (default time.Now).
	Now func() time.Time

	mu        sync.Mutex
	leases    map[store.Key]*lease
	lastSweep time.Time
	sizes     sizeMemo
	// inFlight counts each team's admitted requests not yet settled
	// (concurrency.go).
	inFlight sync.Map // team -> *atomic.Int64

	outage throttle
}

// NewLimiter returns a Limiter keeping its counters in st; cfg returns the
// config in force, read on every request; log receives store failures,
// at most one line per 10s (nil: slog.Default()).
func NewLimiter(st store.Adder, cfg func() *config.Config, log *slog.Logger) *Limiter {
	if log == nil {
		log = slog.Default()
	}
	l := &Limiter{store: st, config: cfg, log: log, Now: time.Now, leases: map[store.Key]*lease{}}
	// Every store call is bounded by usage.store_timeout (even if the store
	// ignores its context); for a second after a failure, requests that
	// need a new lease do not wait on the store again.
	l.call = store.NewCaller(store.CallerOptions{
		Component: "limits",
		Now:       func() time.Time { return l.Now() },
		NewContext: func() (context.Context, context.CancelFunc) {
			return context.WithTimeout(context.Background(), storeTimeout(l.config()))
		},
	})
	return l
}

// Admit enforces the caller's limits before any provider spend; its
// signature is server.Admitter. Callers without a configured team are not
// limited.
//
//  1. Plan ceilings (max_input_tokens against EstimateInputTokens,
//     max_output_tokens against the client's max_completion_tokens or
//     max_tokens) are checked first, without any store call. Exceeding one
//     is invalid_request (400, code max_input_tokens_exceeded or
//     max_output_tokens_exceeded): waiting would not help, and SDKs retry
//     429s automatically. A request without max_tokens is not refused; it
//     reserves the ceiling (see Estimate).
//  2. Each limited window of the team and of the request's tag (when the
//     team has limits for it) is one counter item,
//     store.BudgetKey(team, tag, minute|hour|day, window start), expiring
//     at the window's end. The request reserves its estimate from this
//     instance's lease of each item; a lease that does not cover it is
//     topped up with ONE conditional Add bounded by the limit (see
//     lease.go; leases of several items concurrently). If an item cannot
//     lease it even exactly what it needs, the reservations made are given
//     back to the leases and the request is refused: rate_limited
//     (requests or tokens per minute) or budget_exceeded (cost per hour or
//     day), with RetryAfter the time until that window resets.
//  3. The returned Settle replaces the reservation with the real tokens
//     and cost in each lease (negative corrections refund it; settlement
//     is never bounded). The item learns it when the lease is given back.
//     Reservations never exceed the limits, whatever the concurrency and
//     the number of instances; only settlement of requests whose real
//     usage exceeds their estimate can, by that excess.
//
// When a lease cannot be taken because the store fails (or takes longer
// than usage.store_timeout), requests the lease in hand covers are
// admitted; beyond it, the request is refused as unavailable when
// usage.fail_closed is true, and otherwise admitted while this instance's
// outage allowance for the window (one lease: limit x usage.lease.share,
// at most usage.lease.max_requests reservations) lasts, then refused as
// unavailable. Admitted requests per window are therefore at most the
// limit plus one lease per instance.
func (l *Limiter) Admit(ctx context.Context, a *exchange.Request) (exchange.Settle, error) {
	cfg := l.config()
	if a == nil || a.Caller == nil || a.Caller.Team == "" {
		return nil, nil
	}
	team := cfg.Teams[a.Caller.Team]
	if team == nil {
		return nil, nil
	}
	var release func()
	var err error
	if team.Limits.ConcurrencyScope == config.ConcurrencyFleet && team.Limits.MaxConcurrentRequests > 0 {
		release, err = l.enterFleet(ctx, cfg, a.Caller.Team, team.Limits.MaxConcurrentRequests)
	} else {
		release, err = l.enter(a.Caller.Team, team.Limits.MaxConcurrentRequests)
	}
	if err != nil {
		return nil, err
	}
	if release == nil { // no concurrency limit
		return l.admit(ctx, a, cfg, team)
	}
	settle, err := l.admit(ctx, a, cfg, team)
	if err != nil {
		release()
		return nil, err
	}
	return releasing(settle, release), nil
}

// admit is Admit past the concurrency limit.
func (l *Limiter) admit(ctx context.Context, a *exchange.Request, cfg *config.Config, team *config.Team) (exchange.Settle, error) {
	type scope struct {
		tag string
		lim config.Limits
	}
	scopes := []scope{{"", team.Limits}}
	if tl, ok := team.Tags[a.Tag]; ok && a.Tag != "" && !tl.IsZero() {
		scopes = append(scopes, scope{a.Tag, tl})
	}
	var ceiling int64
	for _, s := range scopes {
		if c := s.lim.MaxOutputTokens; c > 0 && (ceiling == 0 || c < ceiling) {
			ceiling = c
		}
	}
	e := estimate(cfg, a, ceiling)
	for _, s := range scopes {
		if err := checkCeilings(a, s.lim, e); err != nil {
			return nil, err
		}
	}
	now := l.Now()
	var cs []counter
	for _, s := range scopes {
		cs = append(cs, counters(a.Caller.Team, s.tag, s.lim, e, now)...)
	}
	if e.RequestedOutput <= 0 && (ceiling > 0 || len(cs) > 0) {
		// The request was admitted for a bounded output: make the provider
		// keep to it, or real spend could outrun the reservation.
		perChoice := e.OutputTokens
		if a.Prompt != nil && a.Prompt.Output.Choices > 1 {
			perChoice /= int64(a.Prompt.Output.Choices)
		}
		a.OutputCap = int(perChoice)
	}
	if len(cs) == 0 {
		return nil, nil
	}
	p := leaseParamsOf(cfg)
	l.maybeSweep(now, p)
	leases := make([]*lease, len(cs))
	res := make([]outcome, len(cs))
	errs := make([]error, len(cs))
	var slow []int
	for i := range cs {
		leases[i] = l.leaseFor(&cs[i])
		if !leases[i].reserveLocal(&cs[i], now) {
			slow = append(slow, i)
			continue
		}
		l.refill(leases[i], &cs[i], p, now)
	}
	each(slow, func(i int) { res[i], errs[i] = l.reserve(leases[i], &cs[i], p) })

	var refused *counter
	var storeErr, outageErr error
	for i := range cs {
		switch res[i] {
		case overLimit:
			if refused == nil || cs[i].end.After(refused.end) {
				refused = &cs[i]
			}
		case storeDown:
			storeErr = errs[i]
		case unbacked:
			outageErr = errs[i]
		}
	}
	if refused != nil || storeErr != nil {
		for i := range cs {
			if res[i] == reserved || res[i] == unbacked {
				leases[i].unspend(&cs[i], res[i] == unbacked)
			}
		}
	}
	switch {
	case refused != nil:
		return nil, refusal(refused, now)
	case storeErr != nil:
		what := "refusing: this instance's outage allowance for the window is spent"
		if p.failClosed {
			what = "refusing (usage.fail_closed)"
		}
		l.storeFailed(ctx, a.Caller.Team, storeErr, what)
		e := gwerr.New(gwerr.Unavailable, "usage accounting is unavailable; try again shortly").WithCode("usage_store_unavailable")
		e.RetryAfter, e.Cause = time.Second, storeErr
		return nil, e
	case outageErr != nil:
		l.storeFailed(ctx, a.Caller.Team, outageErr, "admitting within this instance's outage allowance (one lease per window)")
	}
	return l.settler(cfg, cs, leases), nil
}

// checkCeilings enforces the plan ceilings of one scope.
func checkCeilings(a *exchange.Request, lim config.Limits, e Estimate) error {
	if lim.MaxInputTokens > 0 && e.InputTokens > lim.MaxInputTokens {
		param := "messages"
		if a.Embed != nil {
			param = "input"
		}
		return gwerr.New(gwerr.InvalidRequest, "the request's input is about %d tokens; this team's plan allows %d per request",
			e.InputTokens, lim.MaxInputTokens).WithParam(param).WithCode("max_input_tokens_exceeded")
	}
	if lim.MaxOutputTokens > 0 && e.RequestedOutput > lim.MaxOutputTokens {
		param := "max_tokens"
		if a.API == exchange.Chat && gjson.GetBytes(a.Body, "max_completion_tokens").Int() == e.RequestedOutput {
			param = "max_completion_tokens"
		}
		return gwerr.New(gwerr.InvalidRequest, "%s is %d; this team's plan allows at most %d output tokens per request",
			param, e.RequestedOutput, lim.MaxOutputTokens).WithParam(param).WithCode("max_output_tokens_exceeded")
	}
	return nil
}

// each runs fn for every index, concurrently when there are several.
func each(idx []int, fn func(i int)) {
	if len(idx) == 1 {
		fn(idx[0])
		return
	}
	var wg sync.WaitGroup
	for _, i := range idx {
		wg.Add(1)
		go func() {
			defer wg.Done()
			fn(i)
		}()
	}
	wg.Wait()
}

// settler returns the Settle of a request that reserved cs from leases.
func (l *Limiter) settler(cfg *config.Config, cs []counter, leases []*lease) exchange.Settle {
	var once sync.Once
	return func(_ context.Context, rec *exchange.Record) {
		once.Do(func() { l.settle(cfg, cs, leases, rec) })
	}
}

// settle replaces the reservations with the record's real tokens and
// cost, in the leases only (no store call).
func (l *Limiter) settle(cfg *config.Config, cs []counter, leases []*lease, rec *exchange.Record) {
	if rec == nil {
		return
	}
	cost := rec.CostUSD
	if cost == 0 {
		cost = usage.Total(cfg, rec) // rec is the caller's: read, never written
	}
	var actual amounts
	actual[attrTokens] = float64(rec.InputTokens + rec.OutputTokens)
	actual[attrCost] = float64(usage.NanoUSD(cost))
	now := l.Now()
	for i := range cs {
		c := &cs[i]
		if !now.Before(c.end) {
			continue // the window closed: its item no longer decides anything
		}
		ls := leases[i]
		ls.mu.Lock()
		for _, a := range []int{attrTokens, attrCost} {
			if c.limited(a) {
				ls.used[a] += actual[a] - c.need[a]
			}
		}
		ls.mu.Unlock()
	}
}

// Flush gives back the unspent part of every lease of an open window (and
// records spend beyond them), waiting for the writes. Call it before the
// process exits; afterwards each counter item holds exactly this
// instance's real usage. It returns the first store failure.
func (l *Limiter) Flush(ctx context.Context) error {
	l.call.Wait() // a lease taken in the background is given back too
	now := l.Now()
	l.mu.Lock()
	var all []*lease
	for k, ls := range l.leases {
		if !now.Before(ls.end) {
			delete(l.leases, k)
			continue
		}
		all = append(all, ls)
	}
	l.mu.Unlock()
	var first error
	for _, ls := range all {
		if err := l.giveBack(ls, false); err != nil && first == nil {
			first = err
		}
		if err := ctx.Err(); err != nil {
			return err
		}
	}
	l.call.Wait()
	return first
}

// Loop gives back idle leases every period until ctx ends (local mode;
// on Lambda admissions do it, and frozen instances cannot).
func (l *Limiter) Loop(ctx context.Context, every time.Duration) {
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			for _, ls := range l.idle(l.Now(), leaseParamsOf(l.config()).ttl) {
				l.giveBack(ls, true)
			}
		}
	}
}

// Wait waits for background lease writes (give-backs) started so far.
func (l *Limiter) Wait() { l.call.Wait() }

// storeFailed logs a store failure, at most once per 10 seconds.
func (l *Limiter) storeFailed(ctx context.Context, team string, err error, what string) {
	if ok, suppressed := l.outage.allow(time.Now()); ok {
		l.log.LogAttrs(ctx, slog.LevelWarn, "limits: usage store unavailable; "+what,
			slog.String("team", team), slog.Any("error", err), slog.Int("suppressed", suppressed))
	}
}

// throttle lets one event through per period and counts the others.
type throttle struct {
	mu         sync.Mutex
	last       time.Time
	suppressed int
}

const throttlePeriod = 10 * time.Second

func (t *throttle) allow(now time.Time) (bool, int) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if !t.last.IsZero() && now.Sub(t.last) < throttlePeriod {
		t.suppressed++
		return false, 0
	}
	n := t.suppressed
	t.last, t.suppressed = now, 0
	return true, n
}

// storeTimeout bounds each counter write (usage.store_timeout).
func storeTimeout(cfg *config.Config) time.Duration {
	if d := cfg.Usage.StoreTimeout.D(); d > 0 {
		return d
	}
	return config.DefaultStoreTimeout
}
