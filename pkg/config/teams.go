package config

import (
	"math"
	"slices"
	"strings"
	"time"

	"github.com/llmgw/llmgw/pkg/teamkey"
)

// AnonymousTeam is the team that usage of unauthenticated callers (local
// mode, no team keys configured) is recorded under. It cannot be configured.
const AnonymousTeam = teamkey.Anonymous

// Team is one caller team: its keys, what it may call, and its limits.
//
//	teams:
//	  search:
//	    keys: [{id: k1, sha256: "<hex>"}, {id: k0, sha256: "<hex>", revoked: true}]
//	    routes: [gpt-4.1-mini]
//	    limits: {requests_per_minute: 600, cost_per_day_usd: 50}
//	    tags: {checkout: {cost_per_day_usd: 10}}
type Team struct {
	// Keys are the team's API keys, stored only as the SHA-256 of the key.
	Keys []TeamKey `json:"keys,omitempty"`
	// Routes, when set, is the allow-list of routes the team may call.
	Routes []string `json:"routes,omitempty"`
	// Limits apply to the whole team (every tag, and untagged requests).
	Limits Limits `json:"limits,omitempty"`
	// Tags holds limits per feature tag, enforced in addition to Limits.
	Tags map[string]Limits `json:"tags,omitempty"`
	// Admin teams may read every team's usage.
	Admin bool `json:"admin,omitempty"`
	// Disabled refuses every key of the team (401), without removing it.
	Disabled bool `json:"disabled,omitempty"`
	// Cache, when set, turns the response cache on (true) for every route
	// of the team that is not uncacheable, or off (false) even where a
	// route enables it. Unset: the route decides.
	Cache *bool `json:"cache,omitempty"`
	// Moderation names the moderation policy every request of the team is
	// checked under, in addition to its route's.
	Moderation string `json:"moderation,omitempty"`
}

// TeamKey is one team API key, by hash. The key itself is never stored.
type TeamKey struct {
	// ID names the key in logs and usage records (e.g. "k1"); not secret.
	ID string `json:"id"`
	// SHA256 is the lowercase hex SHA-256 of the whole key string.
	SHA256 string `json:"sha256"`
	// Revoked refuses the key (401) from the next request on.
	Revoked bool `json:"revoked,omitempty"`
}

// Limits are the admission limits of a team or of one of its tags. Zero
// means unlimited.
type Limits struct {
	// RequestsPerMinute caps requests per UTC clock minute.
	RequestsPerMinute int64 `json:"requests_per_minute,omitempty"`
	// TokensPerMinute caps input+output tokens per UTC clock minute
	// (reserved from an estimate at admission, settled with the real count).
	TokensPerMinute int64 `json:"tokens_per_minute,omitempty"`
	// CostPerHourUSD caps spend per UTC clock hour.
	CostPerHourUSD float64 `json:"cost_per_hour_usd,omitempty"`
	// CostPerDayUSD caps spend per UTC day.
	CostPerDayUSD float64 `json:"cost_per_day_usd,omitempty"`
	// MaxInputTokens caps the estimated input tokens of one request.
	MaxInputTokens int64 `json:"max_input_tokens,omitempty"`
	// MaxOutputTokens caps the output tokens one request may ask for
	// (max_completion_tokens, else max_tokens).
	MaxOutputTokens int64 `json:"max_output_tokens,omitempty"`
	// MaxConcurrentRequests caps the team's requests in flight, open
	// streams included, on one gateway instance or, with ConcurrencyScope
	// fleet, across every instance (a team limit; ignored on a tag). Over
	// it a request is refused with 429 until one ends.
	MaxConcurrentRequests int64 `json:"max_concurrent_requests,omitempty"`
	// ConcurrencyScope is where MaxConcurrentRequests counts: "instance"
	// (the default: each gateway instance, no store call) or "fleet"
	// (every instance sharing the store: one slot item per request in
	// flight, taken with a conditional write and freed at settlement or
	// when its lease, server.request_timeout plus ConcurrencyLeaseMargin,
	// runs out). A team limit; ignored on a tag.
	ConcurrencyScope string `json:"concurrency_scope,omitempty"`
}

// Concurrency scopes (Limits.ConcurrencyScope).
const (
	ConcurrencyInstance = "instance"
	ConcurrencyFleet    = "fleet"
)

// MaxFleetConcurrency bounds max_concurrent_requests in the fleet scope:
// admission reads the team's slot partition (one item per request in
// flight) on every request.
const MaxFleetConcurrency = 1000

// ConcurrencyLeaseMargin is added to server.request_timeout for a fleet
// concurrency slot's lease: a request never holds its slot longer than
// its deadline and its settlement.
const ConcurrencyLeaseMargin = 30 * time.Second

// IsZero reports whether no limit is set.
func (l Limits) IsZero() bool { return l == Limits{} }

// Price is the price of one model in USD per million tokens.
type Price struct {
	// Input is the price of uncached input tokens.
	Input float64 `json:"input"`
	// Output is the price of output tokens.
	Output float64 `json:"output"`
	// CachedInput is the price of input tokens read from the prompt cache
	// (default: Input).
	CachedInput *float64 `json:"cached_input,omitempty"`
	// CacheWrite is the price of input tokens written to the prompt cache
	// (default: Input); for Anthropic models, writes with the default
	// 5-minute lifetime.
	CacheWrite *float64 `json:"cache_write,omitempty"`
	// CacheWrite1h is the price of input tokens written to the prompt
	// cache with a 1-hour lifetime, when the provider reports them apart
	// (Anthropic's usage.cache_creation.ephemeral_1h_input_tokens, on the
	// Anthropic API and on Bedrock InvokeModel). Default: CacheWrite.
	CacheWrite1h *float64 `json:"cache_write_1h,omitempty"`
	// Tiers are the prices at the provider's service tiers (Target.ServiceTier,
	// or the tier the response says served it), keyed by the tier's name
	// as the provider's API names it (priority, flex, ...). A tier missing
	// here is priced at this price. A tier's price takes no tiers itself.
	Tiers map[string]Price `json:"tiers,omitempty"`
	// ToolCalls prices the provider's server-side tools in USD per call,
	// by kind (web_search, web_fetch, code_execution, file_search;
	// FeeKinds). A request declaring a tool whose kind is
	// unpriced for a target of its chain is refused (400) unless
	// server.allow_unpriced_tools is set.
	ToolCalls map[string]float64 `json:"tool_calls,omitempty"`
	// ToolHours prices the server-side tools billed by time, in USD per
	// hour, by kind: code_execution (Anthropic's container time). Each
	// container an answer ran in is charged at least MinContainerTime,
	// at most the request's duration (see usage.ToolFees). A declared
	// code_execution tool is priced when either ToolCalls or ToolHours
	// prices it.
	ToolHours map[string]float64 `json:"tool_hours,omitempty"`
}

// MinContainerTime is the least container time Anthropic bills for code
// execution ("execution time has a minimum of 5 minutes").
const MinContainerTime = 5 * time.Minute

// HourKinds are the fee kinds priced per hour (Price.ToolHours keys).
var HourKinds = []string{FeeCodeExecution}

// Prices reports whether p prices fee kind k at all: per call, per hour
// (code_execution) or, for a grounded prompt, per search query too
// (Gemini 3 bills grounding per query, Gemini 2 per grounded prompt).
func (p Price) Prices(k string) bool {
	if _, ok := p.ToolCalls[k]; ok {
		return true
	}
	if _, ok := p.ToolHours[k]; ok {
		return true
	}
	if k == FeeGroundedPrompt {
		_, ok := p.ToolCalls[FeeWebSearch]
		return ok
	}
	return false
}

// The server-side tool kinds priced per call (Price.ToolCalls keys):
// tools the provider runs itself and bills a fee for on top of tokens.
const (
	FeeWebSearch     = "web_search"
	FeeWebFetch      = "web_fetch"
	FeeCodeExecution = "code_execution"
	FeeFileSearch    = "file_search"
	// FeeGroundedPrompt is an answer grounded with Google Search (Gemini's
	// google_search tool), billed once per grounded answer by Gemini 2
	// models; Gemini 3 models bill per search query, priced as
	// FeeWebSearch.
	FeeGroundedPrompt = "grounded_prompt"
)

// FeeKinds are the fee kinds, in a fixed order.
var FeeKinds = []string{FeeWebSearch, FeeWebFetch, FeeCodeExecution, FeeFileSearch, FeeGroundedPrompt}

// CachedInputPrice is CachedInput, or Input when unset.
func (p Price) CachedInputPrice() float64 {
	if p.CachedInput != nil {
		return *p.CachedInput
	}
	return p.Input
}

// CacheWritePrice is CacheWrite, or Input when unset.
func (p Price) CacheWritePrice() float64 {
	if p.CacheWrite != nil {
		return *p.CacheWrite
	}
	return p.Input
}

// CacheWrite1hPrice is CacheWrite1h, or CacheWritePrice when unset.
func (p Price) CacheWrite1hPrice() float64 {
	if p.CacheWrite1h != nil {
		return *p.CacheWrite1h
	}
	return p.CacheWritePrice()
}

// AtTier is the price at service tier tier: its Tiers entry, else p itself
// (the standard tier, and any tier not priced apart).
func (p Price) AtTier(tier string) Price {
	if t, ok := p.Tiers[tier]; ok && tier != "" {
		return t
	}
	return p
}

// UsageSettings govern usage records and the limits' counters.
type UsageSettings struct {
	// TTL is how long usage records are kept (default 2160h, 90 days;
	// at least 72h, so the rollup's grace window always finds them).
	TTL Duration `json:"ttl,omitempty"`
	// FailClosed refuses requests (unavailable) when the store holding the
	// counters cannot be reached. Default false: keep serving, log it.
	FailClosed bool `json:"fail_closed,omitempty"`
	// StoreTimeout bounds each store call on the request path (default
	// 250ms).
	StoreTimeout Duration `json:"store_timeout,omitempty"`
	// Lease sizes the budget leases of the limits (see pkg/teams).
	Lease LeaseSettings `json:"lease,omitempty"`
}

// LeaseSettings size budget leases: an instance takes a share of a limit
// from the shared counter in one conditional write and admits requests
// against it locally. A lease of one limited item, for one attribute, is
//
//	max(need, floor(min(limit x Share, need x MaxRequests)))
//
// where need is the request's own reservation. It starts at one need and
// doubles with every lease taken within TTL of the previous one, up to
// that size.
type LeaseSettings struct {
	// Share is the largest fraction of a limit one lease takes (default
	// 0.05; at most 1). It is also each instance's outage allowance per
	// window: what it may admit beyond its leases while the store fails
	// (usage.fail_closed: false).
	Share float64 `json:"share,omitempty"`
	// MaxRequests caps a lease at this many times the request's own
	// reservation (default 64; 1 takes exactly what each request needs).
	MaxRequests int `json:"max_requests,omitempty"`
	// TTL is how long a lease may stay unused before its unspent part is
	// given back to the shared counter (default 10s; 1s to 10m).
	TTL Duration `json:"ttl,omitempty"`
	// TakeTimeout bounds the write that takes a lease (default 1s, and
	// never shorter than usage.store_timeout; at most 30s). A take is not
	// a request's read: a store that answers slowly still grants leases,
	// and the next lease is taken in the background before the one in
	// hand runs out, so only a store that stays down past TakeTimeout
	// falls back to the outage allowance.
	TakeTimeout Duration `json:"take_timeout,omitempty"`
}

// Defaults of UsageSettings.
const (
	DefaultUsageTTL     = 90 * 24 * time.Hour
	DefaultStoreTimeout = 250 * time.Millisecond
	// DefaultLeaseShare is usage.lease.share's default.
	DefaultLeaseShare = 0.05
	// DefaultLeaseMaxRequests is usage.lease.max_requests's default.
	DefaultLeaseMaxRequests = 64
	// DefaultLeaseTTL is usage.lease.ttl's default.
	DefaultLeaseTTL = 10 * time.Second
	// DefaultLeaseTakeTimeout is usage.lease.take_timeout's default.
	DefaultLeaseTakeTimeout = time.Second
	minUsageTTL             = 72 * time.Hour
)

// PriceFor returns the price of a target: the entry "provider/model", else
// the entry "model", else the same two for its base model (BaseModel: a
// bedrock inference profile or ARN is priced as the model it runs). ok is
// false when none is configured.
func (c *Config) PriceFor(provider, model string) (p Price, ok bool) {
	if p, ok = c.Prices[provider+"/"+model]; ok {
		return p, true
	}
	if p, ok = c.Prices[model]; ok {
		return p, true
	}
	if base := c.BaseModel(provider, model); base != model {
		if p, ok = c.Prices[provider+"/"+base]; ok {
			return p, true
		}
		p, ok = c.Prices[base]
	}
	return p, ok
}

// TeamNames returns the configured team names, sorted.
func (c *Config) TeamNames() []string { return sortedKeys(c.Teams) }

// plainName reports whether s is 1-64 characters of letters, digits and
// the given extra punctuation.
func plainName(s, extra string) bool {
	if len(s) == 0 || len(s) > 64 {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || strings.IndexByte(extra, c) >= 0) {
			return false
		}
	}
	return true
}

// prepareTeams defaults and validates teams, prices and usage settings. It
// runs after routes are validated (team route allow-lists name routes).
func (c *Config) prepareTeams() error {
	if c.Usage.TTL == 0 {
		c.Usage.TTL = Duration(DefaultUsageTTL)
	}
	if c.Usage.StoreTimeout == 0 {
		c.Usage.StoreTimeout = Duration(DefaultStoreTimeout)
	}
	if c.Usage.TTL.D() < minUsageTTL {
		return errAt(pathOf("usage", "ttl"), "%s is shorter than the minimum %s", c.Usage.TTL.D(), minUsageTTL)
	}
	if c.Usage.StoreTimeout.D() > 10*time.Second {
		return errAt(pathOf("usage", "store_timeout"), "%s is longer than 10s", c.Usage.StoreTimeout.D())
	}
	if err := c.Usage.Lease.prepare(); err != nil {
		return err
	}
	hashes := map[string]string{} // sha256 -> teams.<team>.keys[i]
	for _, name := range sortedKeys(c.Teams) {
		at := pathOf("teams", name)
		t := c.Teams[name]
		if err := teamkey.CheckTeam(name); err != nil {
			return errAt(at, "%v", err)
		}
		if t == nil {
			return errAt(at, "empty team (null): give it keys, or {} for a team without any")
		}
		ids := map[string]bool{}
		for i := range t.Keys {
			k := &t.Keys[i]
			kat := at.Key("keys").Index(i)
			if !teamkey.ValidName(k.ID) {
				return errAt(kat.Key("id"), "%s must be %s", show(k.ID), teamkey.NameRule)
			}
			if ids[k.ID] {
				return errAt(kat.Key("id"), "duplicate key id %s in team %s", show(k.ID), name)
			}
			ids[k.ID] = true
			k.SHA256 = strings.ToLower(strings.TrimSpace(k.SHA256))
			if _, err := teamkey.ParseHash(k.SHA256); err != nil {
				// The value is a hash, not a secret, but an operator may
				// have pasted the key itself here: never echo it.
				return errAt(kat.Key("sha256"), "not 64 hex digits (put the SHA-256 of the key here, never the key; scripts/newkey prints it); the value is not shown")
			}
			if prev, dup := hashes[k.SHA256]; dup {
				return errAt(kat.Key("sha256"), "the same key hash is also %s", prev)
			}
			hashes[k.SHA256] = kat.String()
		}
		for i, r := range t.Routes {
			if _, ok := c.Routes[r]; !ok {
				return errAt(at.Key("routes").Index(i), "unknown route %s%s", show(r), didYouMean(r, c.RouteNames()))
			}
		}
		if err := t.Limits.validate(at.Key("limits")); err != nil {
			return err
		}
		costLimited := t.Limits.costLimited()
		for _, tag := range sortedKeys(t.Tags) {
			if !plainName(tag, "-_.:/") {
				return errAt(at.Key("tags").Key(tag), "tag %s must be 1-64 letters, digits, - _ . : or /", show(tag))
			}
			if err := t.Tags[tag].validate(at.Key("tags").Key(tag)); err != nil {
				return err
			}
			costLimited = costLimited || t.Tags[tag].costLimited()
		}
		if costLimited {
			// An unpriced target would cost 0 and slip past every cost
			// limit: refuse the config instead.
			if err := c.checkPriced(at, t.Routes); err != nil {
				return err
			}
		}
	}
	for _, name := range sortedKeys(c.Prices) {
		p := c.Prices[name]
		at := pathOf("prices", name)
		if name == "" || strings.HasPrefix(name, "/") || strings.HasSuffix(name, "/") {
			return errAt(at, "a price is keyed by \"provider/model\" or \"model\", not %s", show(name))
		}
		if err := p.validateTokens(at); err != nil {
			return err
		}
		for _, tier := range sortedKeys(p.Tiers) {
			tp := p.Tiers[tier]
			if !plainName(tier, "_-") {
				return errAt(at.Key("tiers").Key(tier), "%s is not a service tier name (letters, digits, _ and -)", show(tier))
			}
			if len(tp.Tiers) > 0 {
				return errAt(at.Key("tiers").Key(tier).Key("tiers"), "a tier's price takes no tiers")
			}
			if len(tp.ToolCalls) > 0 {
				return errAt(at.Key("tiers").Key(tier).Key("tool_calls"), "tool fees are priced on the model, not per tier")
			}
			if err := tp.validateTokens(at.Key("tiers").Key(tier)); err != nil {
				return err
			}
		}
		for _, k := range sortedKeys(p.ToolCalls) {
			if !slices.Contains(FeeKinds, k) {
				return errAt(at.Key("tool_calls").Key(k), "%s is not a priced tool kind (one of %s)", show(k), strings.Join(FeeKinds, ", "))
			}
			if v := p.ToolCalls[k]; v < 0 || math.IsNaN(v) || math.IsInf(v, 0) || v > 1e3 {
				return errAt(at.Key("tool_calls").Key(k), "%g is not a price in USD per call (0 to 1000)", v)
			}
		}
		for _, k := range sortedKeys(p.ToolHours) {
			if !slices.Contains(HourKinds, k) {
				return errAt(at.Key("tool_hours").Key(k), "%s is not a tool kind priced per hour (one of %s)", show(k), strings.Join(HourKinds, ", "))
			}
			if v := p.ToolHours[k]; v < 0 || math.IsNaN(v) || math.IsInf(v, 0) || v > 1e3 {
				return errAt(at.Key("tool_hours").Key(k), "%g is not a price in USD per hour (0 to 1000)", v)
			}
		}
	}
	return nil
}

// validateTokens checks a price's token prices.
func (p Price) validateTokens(at Path) error {
	vals := map[string]float64{"input": p.Input, "output": p.Output, "cached_input": p.CachedInputPrice(),
		"cache_write": p.CacheWritePrice(), "cache_write_1h": p.CacheWrite1hPrice()}
	for _, f := range []string{"input", "output", "cached_input", "cache_write", "cache_write_1h"} {
		if v := vals[f]; v < 0 || math.IsNaN(v) || math.IsInf(v, 0) || v > 1e6 {
			return errAt(at.Key(f), "%g is not a price in USD per million tokens (0 to 1e6)", v)
		}
	}
	return nil
}

func (l Limits) costLimited() bool { return l.CostPerHourUSD > 0 || l.CostPerDayUSD > 0 }

// checkPriced reports a target, reachable by a team through routes (all
// routes when empty), that has no price.
func (c *Config) checkPriced(at Path, routes []string) error {
	if len(routes) == 0 {
		routes = c.RouteNames()
	}
	for _, r := range routes {
		steps, _, _ := c.Chain(r)
		for _, s := range steps {
			if _, ok := c.PriceFor(s.Provider, s.Model); !ok {
				return errAt(at, "has a cost limit but target %s (route %s) has no entry in prices: add prices.%q or prices.%q", s.ID, r, s.ID, s.Model)
			}
		}
	}
	return nil
}

func (l Limits) validate(at Path) error {
	for _, f := range []struct {
		name string
		v    float64
	}{
		{"requests_per_minute", float64(l.RequestsPerMinute)}, {"tokens_per_minute", float64(l.TokensPerMinute)},
		{"cost_per_hour_usd", l.CostPerHourUSD}, {"cost_per_day_usd", l.CostPerDayUSD},
		{"max_input_tokens", float64(l.MaxInputTokens)}, {"max_output_tokens", float64(l.MaxOutputTokens)},
	} {
		if f.v < 0 || math.IsNaN(f.v) || math.IsInf(f.v, 0) || f.v > 1e12 {
			return errAt(at.Key(f.name), "%g must be between 0 (unlimited) and 1e12", f.v)
		}
	}
	switch l.ConcurrencyScope {
	case "", ConcurrencyInstance:
	case ConcurrencyFleet:
		if l.MaxConcurrentRequests <= 0 || l.MaxConcurrentRequests > MaxFleetConcurrency {
			return errAt(at.Key("max_concurrent_requests"), "concurrency_scope fleet needs max_concurrent_requests between 1 and %d, not %d",
				MaxFleetConcurrency, l.MaxConcurrentRequests)
		}
	default:
		return errAt(at.Key("concurrency_scope"), "%s is not a concurrency scope (instance or fleet)", show(l.ConcurrencyScope))
	}
	return nil
}

// prepare defaults and validates the lease settings.
func (l *LeaseSettings) prepare() error {
	if l.Share == 0 {
		l.Share = DefaultLeaseShare
	}
	if l.MaxRequests == 0 {
		l.MaxRequests = DefaultLeaseMaxRequests
	}
	if l.TTL == 0 {
		l.TTL = Duration(DefaultLeaseTTL)
	}
	if l.TakeTimeout == 0 {
		l.TakeTimeout = Duration(DefaultLeaseTakeTimeout)
	}
	switch {
	case l.TakeTimeout.D() < 0 || l.TakeTimeout.D() > 30*time.Second:
		return errAt(pathOf("usage", "lease", "take_timeout"), "%s is not between 0 and 30s", l.TakeTimeout.D())
	case !(l.Share > 0 && l.Share <= 1):
		return errAt(pathOf("usage", "lease", "share"), "%g is not in (0, 1]", l.Share)
	case l.MaxRequests < 1:
		return errAt(pathOf("usage", "lease", "max_requests"), "%d is less than 1", l.MaxRequests)
	case l.TTL.D() < time.Second || l.TTL.D() > 10*time.Minute:
		return errAt(pathOf("usage", "lease", "ttl"), "%s is not between 1s and 10m", l.TTL.D())
	}
	return nil
}
