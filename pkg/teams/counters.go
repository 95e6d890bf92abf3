package teams

import (
	"fmt"
	"math"
	"time"

	"github.com/llmgw/llmgw/pkg/config"
	"github.com/llmgw/llmgw/pkg/gwerr"
	"github.com/llmgw/llmgw/pkg/store"
	"github.com/llmgw/llmgw/pkg/usage"
)

// The attributes a budget item counts, as indexes of an amounts array.
const (
	attrRequests = iota
	attrTokens
	attrCost
	nAttrs
)

// attrNames are the stored attribute names of budget items, by index.
// Cost is in integral nano-dollars, so sums are exact.
var attrNames = [nAttrs]string{"requests", "tokens", "cost_nano_usd"}

// amounts holds one number per counted attribute.
type amounts [nAttrs]float64

// Budget window kinds (the window component of store.BudgetKey).
const (
	windowMinute = "minute"
	windowHour   = "hour"
	windowDay    = "day"
)

// counter is one budget item touched by a request: what the request
// reserves in it and the item's limits.
type counter struct {
	key      store.Key
	scope    string // `team "x"` or `tag "t" of team "x"`
	window   string
	end      time.Time // the window's end: the item's expiry
	need     amounts   // the request's reservation
	limit    amounts   // 0: the attribute is not limited in this item
	category gwerr.Category
	what     string // the limit, for the refusal's message
}

// limited reports whether the counter limits attribute a.
func (c *counter) limited(a int) bool { return c.limit[a] > 0 }

// deltas renders amounts of the counter's limited attributes for a store
// call (zero amounts included, so every limited attribute exists).
func (c *counter) deltas(v amounts) map[string]float64 {
	m := make(map[string]float64, nAttrs)
	for a := range nAttrs {
		if c.limited(a) {
			m[attrNames[a]] = v[a]
		}
	}
	return m
}

// maxes is the Max of a bounded Add: every limited attribute's limit.
func (c *counter) maxes() map[string]float64 { return c.deltas(c.limit) }

// windowLength is the length of windows of kind w.
func windowLength(w string) time.Duration {
	switch w {
	case windowMinute:
		return time.Minute
	case windowHour:
		return time.Hour
	default:
		return 24 * time.Hour
	}
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
			category: gwerr.RateLimited}
		var what []string
		if lim.RequestsPerMinute > 0 {
			c.need[attrRequests], c.limit[attrRequests] = 1, float64(lim.RequestsPerMinute)
			what = append(what, fmt.Sprintf("%d requests per minute", lim.RequestsPerMinute))
		}
		if lim.TokensPerMinute > 0 {
			c.need[attrTokens], c.limit[attrTokens] = float64(e.InputTokens+e.OutputTokens), float64(lim.TokensPerMinute)
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
		c := counter{key: store.BudgetKey(team, tag, w.kind, start), scope: scope, window: w.kind, end: end,
			category: gwerr.BudgetExceeded, what: fmt.Sprintf("a budget of $%g %s", w.limit, w.label)}
		c.need[attrCost], c.limit[attrCost] = costNano, float64(usage.NanoUSD(w.limit))
		cs = append(cs, c)
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
