package teams

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"sync"
	"time"

	"github.com/llmgw/llmgw/pkg/config"
	"github.com/llmgw/llmgw/pkg/exchange"
	"github.com/llmgw/llmgw/pkg/gwerr"
	"github.com/llmgw/llmgw/pkg/openaiwire"
	"github.com/llmgw/llmgw/pkg/store"
	"github.com/llmgw/llmgw/pkg/usage"
)

// Counter attribute names of budget items.
const (
	attrRequests = "requests"
	attrTokens   = "tokens"
	attrCost     = "cost_nano_usd" // integral nano-dollars: exact sums
)

// Budget window kinds (the window component of store.BudgetKey).
const (
	windowMinute = "minute"
	windowHour   = "hour"
	windowDay    = "day"
)

// Estimator constants (see EstimateInputTokens).
const (
	// MessageOverheadTokens is added per message for its role and framing.
	MessageOverheadTokens = 4
	// ReplyPrimingTokens is added once per request for the reply's start.
	ReplyPrimingTokens = 3
	// NonTextPartTokens is counted for each image, audio or file part.
	NonTextPartTokens = 768
)

// Limiter enforces team and tag limits before any provider spend; its Admit
// method is server.Options.Admit (a server.Admitter). Create it with NewLimiter.
type Limiter struct {
	store  store.Adder
	config func() *config.Config
	log    *slog.Logger
	// Now is the clock (default time.Now).
	Now func() time.Time

	outage throttle
}

// NewLimiter returns a Limiter keeping its counters in st; cfg returns the
// config in force, read on every request; log receives store failures,
// at most one line per 10s (nil: slog.Default()).
func NewLimiter(st store.Adder, cfg func() *config.Config, log *slog.Logger) *Limiter {
	if log == nil {
		log = slog.Default()
	}
	return &Limiter{store: st, config: cfg, log: log, Now: time.Now}
}

// Estimate is what admission reserves for one request.
type Estimate struct {
	// InputTokens is EstimateInputTokens of the request.
	InputTokens int64
	// RequestedOutput is the client's max_completion_tokens, else max_tokens
	// (0: it set neither).
	RequestedOutput int64
	// OutputTokens is the output reserved: RequestedOutput, or when the
	// client set none the team's max_output_tokens ceiling, else the largest
	// max_tokens of the chain's targets (default 4096); times n.
	OutputTokens int64
	// CostUSD is InputTokens at the input price plus OutputTokens at the
	// output price of the most expensive target of the chain.
	CostUSD float64
}

// EstimateInputTokens estimates a request's prompt tokens before any call:
// exchange.EstimateTokens (one token per 4 bytes of UTF-8, rounded up) over
// the text the model reads - every message's text content, name,
// tool_call_id, tool call names and arguments, and the tools' names,
// descriptions and parameter schemas - plus MessageOverheadTokens per
// message, ReplyPrimingTokens once, and NonTextPartTokens per image, audio
// or file part. It is a reservation, not a bill: settlement replaces it
// with the provider's count.
func EstimateInputTokens(req *openaiwire.ChatRequest) int64 {
	if req == nil {
		return 0
	}
	chars, fixed := 0, int64(ReplyPrimingTokens)
	for _, m := range req.Messages {
		fixed += MessageOverheadTokens
		chars += len(m.Name) + len(m.ToolCallID)
		if m.Refusal != nil {
			chars += len(*m.Refusal)
		}
		if m.Content.IsParts {
			for _, p := range m.Content.Parts {
				switch p.Type {
				case "text":
					chars += len(p.Text)
				case "refusal":
					chars += len(p.Refusal)
				default:
					fixed += NonTextPartTokens
				}
			}
		} else {
			chars += len(m.Content.Text)
		}
		for _, tc := range m.ToolCalls {
			chars += len(tc.Function.Name) + len(tc.Function.Arguments)
		}
	}
	for _, t := range req.Tools {
		chars += len(t.Function.Name) + len(t.Function.Description) + len(t.Function.Parameters)
	}
	return int64(exchange.EstimateTokens(chars)) + fixed
}

// estimate computes the reservation of a request; ceiling is the tightest
// max_output_tokens of its scopes (0: none).
func estimate(cfg *config.Config, a *exchange.Request, ceiling int64) Estimate {
	e := Estimate{InputTokens: EstimateInputTokens(a.Chat)}
	if a.Chat != nil {
		switch {
		case a.Chat.MaxCompletionTokens != nil:
			e.RequestedOutput = int64(*a.Chat.MaxCompletionTokens)
		case a.Chat.MaxTokens != nil:
			e.RequestedOutput = int64(*a.Chat.MaxTokens)
		}
	}
	e.OutputTokens = e.RequestedOutput
	if e.OutputTokens <= 0 {
		e.OutputTokens = ceiling
		if e.OutputTokens == 0 {
			for _, s := range a.Steps {
				e.OutputTokens = max(e.OutputTokens, int64(s.MaxTokens))
			}
			if e.OutputTokens <= 0 {
				e.OutputTokens = 4096
			}
		}
	}
	if a.Chat != nil && a.Chat.N != nil && *a.Chat.N > 1 {
		e.OutputTokens *= int64(*a.Chat.N)
	}
	for _, s := range a.Steps {
		if p, ok := cfg.PriceFor(s.Provider, s.Model); ok {
			e.CostUSD = max(e.CostUSD, usage.EstimateCost(p, e.InputTokens, e.OutputTokens))
		}
	}
	return e
}

// counter is one budget item touched by a request.
type counter struct {
	key      store.Key
	scope    string // `team "x"` or `tag "t" of team "x"`
	window   string
	end      time.Time // the window's end: the item's expiry
	deltas   map[string]float64
	max      map[string]float64
	category gwerr.Category
	what     string // the limit, for the refusal's message
}

// windowOf returns the start and end of the fixed UTC window of kind w
// holding t.
func windowOf(w string, t time.Time) (start, end time.Time) {
	t = t.UTC()
	switch w {
	case windowMinute:
		start = t.Truncate(time.Minute)
		return start, start.Add(time.Minute)
	case windowHour:
		start = t.Truncate(time.Hour)
		return start, start.Add(time.Hour)
	default:
		y, m, d := t.Date()
		start = time.Date(y, m, d, 0, 0, 0, 0, time.UTC)
		return start, start.AddDate(0, 0, 1)
	}
}

// counters lists the budget items a request reserves in one scope.
func counters(team, tag string, lim config.Limits, e Estimate, now time.Time) []counter {
	scope := fmt.Sprintf("team %q", team)
	if tag != "" {
		scope = fmt.Sprintf("tag %q of team %q", tag, team)
	}
	var cs []counter
	if lim.RequestsPerMinute > 0 || lim.TokensPerMinute > 0 {
		start, end := windowOf(windowMinute, now)
		c := counter{key: store.BudgetKey(team, tag, windowMinute, start), scope: scope, window: windowMinute, end: end,
			deltas: map[string]float64{}, max: map[string]float64{}, category: gwerr.RateLimited}
		var what []string
		if lim.RequestsPerMinute > 0 {
			c.deltas[attrRequests], c.max[attrRequests] = 1, float64(lim.RequestsPerMinute)
			what = append(what, fmt.Sprintf("%d requests per minute", lim.RequestsPerMinute))
		}
		if lim.TokensPerMinute > 0 {
			c.deltas[attrTokens], c.max[attrTokens] = float64(e.InputTokens+e.OutputTokens), float64(lim.TokensPerMinute)
			what = append(what, fmt.Sprintf("%d tokens per minute", lim.TokensPerMinute))
		}
		c.what = joinOr(what)
		cs = append(cs, c)
	}
	costNano := float64(usage.NanoUSD(e.CostUSD))
	for _, w := range []struct {
		kind  string
		limit float64
		label string
	}{{windowHour, lim.CostPerHourUSD, "per hour"}, {windowDay, lim.CostPerDayUSD, "per UTC day"}} {
		if w.limit <= 0 {
			continue
		}
		start, end := windowOf(w.kind, now)
		cs = append(cs, counter{key: store.BudgetKey(team, tag, w.kind, start), scope: scope, window: w.kind, end: end,
			deltas: map[string]float64{attrCost: costNano}, max: map[string]float64{attrCost: float64(usage.NanoUSD(w.limit))},
			category: gwerr.BudgetExceeded, what: fmt.Sprintf("a budget of $%g %s", w.limit, w.label)})
	}
	return cs
}

func joinOr(s []string) string {
	if len(s) == 2 {
		return s[0] + " or " + s[1]
	}
	if len(s) == 1 {
		return s[0]
	}
	return ""
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
//     at the window's end. The request reserves its estimate in each with
//     ONE conditional Add bounded by Max (all items concurrently); if any
//     would exceed its limit, the reservations already made are given back
//     and the request is refused: rate_limited (requests or tokens per
//     minute) or budget_exceeded (cost per hour or day), with RetryAfter
//     the time until that window resets.
//  3. The returned Settle adds (actual - reserved) tokens and cost to each
//     reserved item whose window is still open (negative deltas refund;
//     settlement is never bounded). Concurrent requests therefore never
//     push a counter past its limit at admission; only settlement of
//     requests whose real usage exceeds their estimate can, by that excess.
//
// When the store fails (or takes longer than usage.store_timeout), the
// request is admitted and the failure logged (usage.fail_closed: false, the
// default), or refused as unavailable (fail_closed: true).
func (l *Limiter) Admit(ctx context.Context, a *exchange.Request) (exchange.Settle, error) {
	cfg := l.config()
	if a == nil || a.Caller == nil || a.Caller.Team == "" {
		return nil, nil
	}
	team := cfg.Teams[a.Caller.Team]
	if team == nil {
		return nil, nil
	}
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
		if a.Chat != nil && a.Chat.N != nil && *a.Chat.N > 1 {
			perChoice /= int64(*a.Chat.N)
		}
		a.OutputCap = int(perChoice)
	}
	if len(cs) == 0 {
		return nil, nil
	}
	timeout := storeTimeout(cfg)
	// Detached: a reservation that lands must be tracked (and settled) even
	// if the client leaves meanwhile.
	bg := context.WithoutCancel(ctx)
	errs := make([]error, len(cs))
	l.each(cs, func(i int, c counter) {
		cctx, cancel := context.WithTimeout(bg, timeout)
		defer cancel()
		_, errs[i] = l.store.Add(cctx, c.key, c.deltas, store.AddOptions{Expires: c.end, Max: c.max})
	})
	var refused *counter
	var storeErr error
	var reserved []counter
	for i := range cs {
		switch {
		case errs[i] == nil:
			reserved = append(reserved, cs[i])
		case errors.Is(errs[i], store.ErrLimit):
			if refused == nil || cs[i].end.After(refused.end) {
				refused = &cs[i]
			}
		default:
			storeErr = errs[i]
		}
	}
	switch {
	case refused != nil:
		l.release(bg, timeout, reserved)
		return nil, refusal(refused, now)
	case storeErr != nil && cfg.Usage.FailClosed:
		l.release(bg, timeout, reserved)
		l.storeFailed(ctx, a.Caller.Team, storeErr, "refusing (usage.fail_closed)")
		e := gwerr.New(gwerr.Unavailable, "usage accounting is unavailable; try again shortly").WithCode("usage_store_unavailable")
		e.RetryAfter, e.Cause = time.Second, storeErr
		return nil, e
	case storeErr != nil:
		l.storeFailed(ctx, a.Caller.Team, storeErr, "admitting without those limits")
	}
	if len(reserved) == 0 {
		return nil, nil
	}
	return l.settler(cfg, reserved), nil
}

// checkCeilings enforces the plan ceilings of one scope.
func checkCeilings(a *exchange.Request, lim config.Limits, e Estimate) error {
	if lim.MaxInputTokens > 0 && e.InputTokens > lim.MaxInputTokens {
		return gwerr.New(gwerr.InvalidRequest, "the request's input is about %d tokens; this team's plan allows %d per request",
			e.InputTokens, lim.MaxInputTokens).WithParam("messages").WithCode("max_input_tokens_exceeded")
	}
	if lim.MaxOutputTokens > 0 && e.RequestedOutput > lim.MaxOutputTokens {
		param := "max_tokens"
		if a.Chat != nil && a.Chat.MaxCompletionTokens != nil {
			param = "max_completion_tokens"
		}
		return gwerr.New(gwerr.InvalidRequest, "%s is %d; this team's plan allows at most %d output tokens per request",
			param, e.RequestedOutput, lim.MaxOutputTokens).WithParam(param).WithCode("max_output_tokens_exceeded")
	}
	return nil
}

// refusal is the error for a counter that would exceed its limit.
func refusal(c *counter, now time.Time) *gwerr.Error {
	wait := max(c.end.Sub(now), time.Second)
	e := gwerr.New(c.category, "%s has reached %s; retry in %ds", c.scope, c.what, int(math.Ceil(wait.Seconds())))
	if c.category == gwerr.RateLimited {
		e.Code = "team_rate_limit_exceeded"
	} else {
		e.Code = "team_budget_exceeded"
	}
	e.RetryAfter = wait
	return e
}

// each runs fn for every counter, concurrently when there are several.
func (l *Limiter) each(cs []counter, fn func(i int, c counter)) {
	if len(cs) == 1 {
		fn(0, cs[0])
		return
	}
	var wg sync.WaitGroup
	for i, c := range cs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			fn(i, c)
		}()
	}
	wg.Wait()
}

// release gives back reservations of a refused request.
func (l *Limiter) release(ctx context.Context, timeout time.Duration, cs []counter) {
	l.each(cs, func(_ int, c counter) {
		neg := make(map[string]float64, len(c.deltas))
		for k, v := range c.deltas {
			neg[k] = -v
		}
		cctx, cancel := context.WithTimeout(ctx, timeout)
		defer cancel()
		if _, err := l.store.Add(cctx, c.key, neg, store.AddOptions{Expires: c.end}); err != nil {
			l.storeFailed(ctx, "", err, "a refused request's reservation was not given back")
		}
	})
}

// settler returns the Settle of a request that reserved cs.
func (l *Limiter) settler(cfg *config.Config, cs []counter) exchange.Settle {
	var once sync.Once
	return func(ctx context.Context, rec *exchange.Record) {
		once.Do(func() { l.settle(ctx, cfg, cs, rec) })
	}
}

func (l *Limiter) settle(ctx context.Context, cfg *config.Config, cs []counter, rec *exchange.Record) {
	if rec == nil {
		return
	}
	cost := rec.CostUSD
	if cost == 0 {
		cost = usage.Cost(cfg, rec)
	}
	actualTokens := float64(rec.InputTokens + rec.OutputTokens)
	actualCost := float64(usage.NanoUSD(cost))
	now := l.Now()
	var todo []counter
	for _, c := range cs {
		if !now.Before(c.end) {
			continue // the window closed: its counter no longer decides anything
		}
		d := map[string]float64{}
		if r, ok := c.deltas[attrTokens]; ok && actualTokens != r {
			d[attrTokens] = actualTokens - r
		}
		if r, ok := c.deltas[attrCost]; ok && actualCost != r {
			d[attrCost] = actualCost - r
		}
		if len(d) > 0 {
			c.deltas = d
			todo = append(todo, c)
		}
	}
	timeout := storeTimeout(cfg)
	l.each(todo, func(_ int, c counter) {
		cctx, cancel := context.WithTimeout(ctx, timeout)
		defer cancel()
		if _, err := l.store.Add(cctx, c.key, c.deltas, store.AddOptions{Expires: c.end}); err != nil {
			l.storeFailed(ctx, rec.Team, err, "settlement lost; the reservation stays counted")
		}
	})
}

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
