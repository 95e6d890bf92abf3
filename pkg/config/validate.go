package config

import (
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/llmgw/llmgw/pkg/gwerr"
)

// Every rule below returns an *Error whose path names the field and whose
// message names the value; Parse adds the line and column.

func (b BreakerSettings) validate() error {
	at := pathOf("breaker")
	if b.FailureRate <= 0 || b.FailureRate > 1 {
		return errAt(at.Key("failure_rate"), "%g is not in (0, 1]", b.FailureRate)
	}
	if b.Cooldown > b.MaxCooldown {
		return errAt(at.Key("cooldown"), "%s exceeds max_cooldown %s", b.Cooldown.D(), b.MaxCooldown.D())
	}
	for _, f := range []struct {
		name string
		v    int
	}{{"min_requests", b.MinRequests}, {"consecutive_failures", b.ConsecutiveFailures}, {"half_open_probes", b.HalfOpenProbes}} {
		if f.v < 1 {
			return errAt(at.Key(f.name), "%d must be at least 1", f.v)
		}
	}
	if l := b.Latency; l != nil {
		at := at.Key("latency")
		switch {
		case l.Threshold <= 0:
			return errAt(at.Key("threshold"), "required: the longest acceptable time to first token at the percentile (e.g. %s)", show("5s"))
		case l.Percentile <= 0 || l.Percentile >= 1:
			return errAt(at.Key("percentile"), "%g is not in (0, 1) (0.95 is p95)", l.Percentile)
		case l.MinRequests < 1:
			return errAt(at.Key("min_requests"), "%d must be at least 1", l.MinRequests)
		case l.Window < Duration(time.Second):
			return errAt(at.Key("window"), "%s is shorter than 1s", l.Window.D())
		}
	}
	return nil
}

func (p *Provider) validate(at Path) error {
	if p == nil {
		return errAt(at, "empty provider (null): give it at least a kind (%s)", orList(KindNames()))
	}
	if p.unchecked() {
		return p.validateCommon(at)
	}
	if err := oneOf(at.Key("kind"), "kind", p.Kind, KindNames()...); err != nil {
		return err
	}
	k := p.kind()
	if k.Validate != nil {
		if err := k.Validate(at, p); err != nil {
			return err
		}
	}
	if p.Fake != nil && !k.Scripted {
		return errAt(at.Key("fake"), "only kind %s takes a script, this provider is kind %s", kindsWith(func(k Kind) bool { return k.Scripted }), p.Kind)
	}
	if k.AuthHeader == "" && len(p.Keys) > 0 {
		return errAt(at.Key("keys"), "kind %s takes no keys (it authenticates otherwise)", p.Kind)
	}
	if k.AuthHeader == "" && p.AuthHeader != "" {
		return errAt(at.Key("auth_header"), "kind %s takes no keys, so no auth_header", p.Kind)
	}
	if err := p.validateAPIs(at); err != nil {
		return err
	}
	return p.validateCommon(at)
}

// validateCommon checks what every kind shares: options, key references,
// headers; and defaults the connect timeout.
func (p *Provider) validateCommon(at Path) error {
	if f := p.Options["max_tokens_field"]; f != "" && f != "max_tokens" && f != "max_completion_tokens" {
		return errAt(pathOf(at, "options", "max_tokens_field"), "%s is not max_tokens or max_completion_tokens", show(f))
	}
	for i, k := range p.Keys {
		if (k.Env == "") == (k.SSM == "") {
			got := "neither"
			if k.Env != "" {
				got = "env " + show(k.Env) + " and ssm " + show(k.SSM)
			}
			return errAt(at.Key("keys").Index(i), "set exactly one of env or ssm, got %s (keys are never written inline)", got)
		}
	}
	switch strings.ToLower(p.AuthHeader) {
	case "", "authorization", "api-key", "x-api-key", "x-goog-api-key":
	default:
		return errAt(at.Key("auth_header"), "%s is not authorization, api-key, x-api-key or x-goog-api-key%s", show(p.AuthHeader),
			didYouMean(p.AuthHeader, []string{"authorization", "api-key", "x-api-key", "x-goog-api-key"}))
	}
	for _, h := range sortedKeys(p.Headers) {
		switch strings.ToLower(h) {
		case "authorization", "api-key", "x-api-key", "x-goog-api-key", "host", "content-length":
			return errAt(at.Key("headers").Key(h), "%s may not be set as a static header", show(h))
		}
	}
	if p.ConnectTimeout == 0 {
		p.ConnectTimeout = Duration(5 * time.Second)
	}
	return nil
}

func (p Policy) validate(at Path) error {
	if p.Attempts < 1 || p.Attempts > 10 {
		return errAt(at.Key("attempts"), "%d is not between 1 and 10", p.Attempts)
	}
	if p.MaxFallbacks != nil && *p.MaxFallbacks < 0 {
		return errAt(at.Key("max_fallbacks"), "%d must not be negative", *p.MaxFallbacks)
	}
	names := make([]string, len(gwerr.Categories))
	for i, c := range gwerr.Categories {
		names[i] = string(c)
	}
	for i, c := range p.FallbackOn {
		if !slices.Contains(gwerr.Categories, c) {
			return errAt(at.Key("fallback_on").Index(i), "unknown category %s%s (want one of %s)", show(string(c)), didYouMean(string(c), names), strings.Join(names, ", "))
		}
		if !c.Fallback() {
			return errAt(at.Key("fallback_on").Index(i), "%s can never fall back (a caller's own mistake); the categories that can are rate_limited, timeout, overloaded, unavailable, interrupted, context_length and content_policy", show(string(c)))
		}
	}
	if p.RetryBudget < 0 || p.RetryBudget > 1 {
		return errAt(at.Key("retry_budget"), "%g is not between 0 and 1", p.RetryBudget)
	}
	if p.BackoffBase > p.BackoffMax {
		return errAt(at.Key("backoff_base"), "%s exceeds backoff_max %s", p.BackoffBase.D(), p.BackoffMax.D())
	}
	return p.HeadBuffer.validate(at)
}

func (c *Config) validateTarget(at Path, t Target) error {
	switch {
	case t.Route != "" && (t.Provider != "" || t.Model != ""):
		got := "route " + show(t.Route)
		if t.Provider != "" {
			got += ", provider " + show(t.Provider)
		}
		if t.Model != "" {
			got += ", model " + show(t.Model)
		}
		return errAt(at, "a target is either {route} or {provider, model}, not both (got %s)", got)
	case t.Route != "":
		if _, ok := c.Routes[t.Route]; !ok {
			return errAt(at.Key("route"), "unknown route %s%s", show(t.Route), didYouMean(t.Route, c.RouteNames()))
		}
		return nil
	case t.Provider == "":
		return errAt(at.Key("provider"), "required: the provider id (one of %s), or use {route: name}", strings.Join(c.ProviderIDs(), ", "))
	}
	if _, ok := c.Providers[t.Provider]; !ok {
		return errAt(at.Key("provider"), "unknown provider %s%s (providers: %s)", show(t.Provider), didYouMean(t.Provider, c.ProviderIDs()), strings.Join(c.ProviderIDs(), ", "))
	}
	if p := c.Providers[t.Provider]; t.Model == "" && !p.kind().ModelOptional && !p.unchecked() {
		return errAt(at.Key("model"), "required for provider %s (kind %s)", t.Provider, c.Providers[t.Provider].Kind)
	}
	switch t.Breaker {
	case "", "open", "closed":
	default:
		return errAt(at.Key("breaker"), "%s is not open or closed%s", show(t.Breaker), didYouMean(t.Breaker, []string{"open", "closed"}))
	}
	if t.Attempts < 0 || t.Attempts > 10 {
		return errAt(at.Key("attempts"), "%d is not between 0 (the route's) and 10", t.Attempts)
	}
	if t.MaxTokens < 0 {
		return errAt(at.Key("max_tokens"), "%d must not be negative", t.MaxTokens)
	}
	if err := c.validateTargetOptions(at.Key("options"), t); err != nil {
		return err
	}
	if p := c.Providers[t.Provider]; t.ServiceTier != "" && !p.unchecked() {
		tiers := p.kind().ServiceTiers
		if len(tiers) == 0 {
			return errAt(at.Key("service_tier"), "provider %s (kind %s) has no service tiers; only kind %s targets do", t.Provider, p.Kind,
				kindsWith(func(k Kind) bool { return len(k.ServiceTiers) > 0 }))
		}
		if !slices.Contains(tiers, t.ServiceTier) {
			return errAt(at.Key("service_tier"), "%s is not a %s service tier%s (tiers: %s)", show(t.ServiceTier), p.Kind,
				didYouMean(t.ServiceTier, tiers), strings.Join(tiers, ", "))
		}
	}
	if t.Variant != nil {
		return t.Variant.validate(at.Key("variant"))
	}
	return nil
}

// validateTargetOptions checks a target's options against those its
// provider's kind takes (Kind.TargetOptions).
func (c *Config) validateTargetOptions(at Path, t Target) error {
	p := c.Providers[t.Provider]
	if p.unchecked() {
		return nil
	}
	opts := p.kind().TargetOptions
	for _, k := range sortedKeys(t.Options) {
		check, ok := opts[k]
		switch {
		case len(opts) == 0:
			return errAt(at, "provider %s (kind %s) takes no target options; only kind %s targets do", t.Provider, p.Kind,
				kindsWith(func(k Kind) bool { return len(k.TargetOptions) > 0 }))
		case !ok:
			names := sortedKeys(opts)
			e := errAt(at.Key(k), "unknown %s target option %s%s (options: %s)", p.Kind, show(k), didYouMean(k, names), strings.Join(names, ", "))
			e.OnKey = true
			return e
		}
		if msg := check(t.Options[k]); msg != "" {
			return errAt(at.Key(k), "%s", msg)
		}
	}
	return nil
}

func (v *Variant) validate(at Path) error {
	switch {
	case strings.TrimSpace(v.Name) == "":
		return errAt(at.Key("name"), "required: a name for the usage records (e.g. %s)", show("terse-v2"))
	case len(v.Name) > 64:
		return errAt(at.Key("name"), "%s is longer than 64 characters", show(v.Name))
	case v.System != "" && (v.SystemPrefix != "" || v.SystemSuffix != ""):
		return errAt(at.Key("system"), "system replaces the system prompt; it cannot be combined with system_prefix or system_suffix")
	case v.Temperature != nil && (*v.Temperature < 0 || *v.Temperature > 2):
		return errAt(at.Key("temperature"), "%g is not between 0 and 2", *v.Temperature)
	case v.TopP != nil && (*v.TopP < 0 || *v.TopP > 1):
		return errAt(at.Key("top_p"), "%g is not between 0 and 1", *v.TopP)
	case v.MaxTokensCap < 0:
		return errAt(at.Key("max_tokens_cap"), "%d must not be negative", v.MaxTokensCap)
	}
	return nil
}

// checkCycle walks route references depth first; done marks routes whose
// references are known to be acyclic, so each route is walked once.
func (c *Config) checkCycle(name string, path []string, done map[string]bool) error {
	if slices.Contains(path, name) {
		return errAt(pathOf("routes", path[0]), "route references form a cycle: %s", strings.Join(append(path, name), " -> "))
	}
	if done[name] {
		return nil
	}
	path = append(path, name)
	for _, t := range c.Routes[name].Targets {
		if t.Route != "" {
			if err := c.checkCycle(t.Route, path, done); err != nil {
				return err
			}
		}
	}
	done[name] = true
	return nil
}

func sortedKeys[V any](m map[string]V) []string {
	ks := make([]string, 0, len(m))
	for k := range m {
		ks = append(ks, k)
	}
	sort.Strings(ks)
	return ks
}

// RouteNames returns the route names, sorted.
func (c *Config) RouteNames() []string { return sortedKeys(c.Routes) }

// ProviderIDs returns the provider ids, sorted.
func (c *Config) ProviderIDs() []string { return sortedKeys(c.Providers) }
