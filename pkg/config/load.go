package config

import (
	"bytes"
	_ "embed"
	"encoding/json"
	"fmt"
	"net/url"
	"os"
	"slices"
	"sort"
	"strings"
	"time"

	"go.yaml.in/yaml/v3"

	"github.com/llmgw/llmgw/pkg/gwerr"
)

// Kinds are the provider kinds the gateway knows.
var Kinds = []string{"openai", "anthropic", "bedrock", "fake"}

//go:embed demo.yaml
var demoYAML []byte

// Demo returns the built-in demo config: fake providers only (one of them
// failing), so failover can be seen with curl and no API keys.
func Demo() *Config {
	c, err := Parse(demoYAML)
	if err != nil {
		panic("config: built-in demo config is invalid: " + err.Error())
	}
	return c
}

// DemoYAML returns the text of the built-in demo config.
func DemoYAML() []byte { return slices.Clone(demoYAML) }

// LoadFile reads, defaults and validates a config file.
func LoadFile(path string) (*Config, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("config: %w", err)
	}
	c, err := Parse(b)
	if err != nil {
		return nil, fmt.Errorf("config %s: %w", path, err)
	}
	return c, nil
}

// Parse decodes YAML or JSON (JSON is YAML), rejecting unknown fields, then
// applies defaults and validates. Errors name the offending field and value.
//
// YAML is read as YAML 1.2 (yaml.v3): "n", "no" and "on" stay strings, so a
// route or provider may be called that. The document is turned into JSON
// and decoded strictly, so YAML and JSON configs behave the same.
func Parse(b []byte) (*Config, error) {
	var doc any
	if err := yaml.Unmarshal(b, &doc); err != nil {
		return nil, fmt.Errorf("config: %v", err)
	}
	js, err := json.Marshal(doc)
	if err != nil {
		return nil, fmt.Errorf("config: %v", err)
	}
	dec := json.NewDecoder(bytes.NewReader(js))
	dec.DisallowUnknownFields()
	var c Config
	if err := dec.Decode(&c); err != nil {
		return nil, fmt.Errorf("config: %s", strings.TrimPrefix(err.Error(), "json: "))
	}
	if err := c.prepare(); err != nil {
		return nil, err
	}
	return &c, nil
}

// Built-in defaults.
const (
	defaultMaxBody        = 4 << 20
	defaultRequestTimeout = 10 * time.Minute
	defaultDeadlineMargin = 2 * time.Second
)

// BuiltinPolicy is the policy every unset field falls back to.
func BuiltinPolicy() Policy {
	return Policy{
		FirstTokenTimeout: Duration(10 * time.Second),
		IdleTimeout:       Duration(30 * time.Second),
		ResponseTimeout:   Duration(5 * time.Minute),
		Attempts:          2,
		FallbackOn:        []gwerr.Category{gwerr.RateLimited, gwerr.Timeout, gwerr.Overloaded, gwerr.Unavailable, gwerr.ContextLength},
		RetryAfterCap:     Duration(2 * time.Second),
		BackoffBase:       Duration(100 * time.Millisecond),
		BackoffMax:        Duration(2 * time.Second),
		RetryBudget:       0.1,
		MinRetriesPerMin:  5,
	}
}

// BuiltinBreaker is the breaker settings every unset field falls back to.
// The short cooldown lets a healed provider back quickly: with one probe
// per cooldown across all instances, a primary that recovers serves again
// within max_cooldown plus one request gap (issue 13, item 6).
func BuiltinBreaker() BreakerSettings {
	return BreakerSettings{
		Window:              Duration(60 * time.Second),
		MinRequests:         10,
		FailureRate:         0.5,
		ConsecutiveFailures: 5,
		Cooldown:            Duration(5 * time.Second),
		MaxCooldown:         Duration(10 * time.Second),
		HalfOpenProbes:      1,
	}
}

// merge fills p's zero fields from d.
func (p Policy) merge(d Policy) Policy {
	set := func(v *Duration, dv Duration) {
		if *v == 0 {
			*v = dv
		}
	}
	set(&p.FirstTokenTimeout, d.FirstTokenTimeout)
	set(&p.IdleTimeout, d.IdleTimeout)
	set(&p.ResponseTimeout, d.ResponseTimeout)
	set(&p.RetryAfterCap, d.RetryAfterCap)
	set(&p.BackoffBase, d.BackoffBase)
	set(&p.BackoffMax, d.BackoffMax)
	if p.Attempts == 0 {
		p.Attempts = d.Attempts
	}
	if p.MaxFallbacks == nil {
		p.MaxFallbacks = d.MaxFallbacks
	}
	if p.FallbackOn == nil {
		p.FallbackOn = d.FallbackOn
	}
	if p.RetryBudget == 0 {
		p.RetryBudget = d.RetryBudget
	}
	if p.MinRetriesPerMin == 0 {
		p.MinRetriesPerMin = d.MinRetriesPerMin
	}
	if p.HeadBuffer == nil {
		p.HeadBuffer = d.HeadBuffer
	}
	if p.Continuation == nil {
		p.Continuation = d.Continuation
	}
	return p
}

// merge fills b's zero fields from d.
func (b BreakerSettings) merge(d BreakerSettings) BreakerSettings {
	if b.MaxCooldown == 0 && b.Cooldown > d.MaxCooldown {
		b.MaxCooldown = b.Cooldown // a longer cooldown than the default cap: it is the cap
	}
	for _, f := range []struct{ v, dv *Duration }{{&b.Window, &d.Window}, {&b.Cooldown, &d.Cooldown}, {&b.MaxCooldown, &d.MaxCooldown}} {
		if *f.v == 0 {
			*f.v = *f.dv
		}
	}
	if b.MinRequests == 0 {
		b.MinRequests = d.MinRequests
	}
	if b.FailureRate == 0 {
		b.FailureRate = d.FailureRate
	}
	if b.ConsecutiveFailures == 0 {
		b.ConsecutiveFailures = d.ConsecutiveFailures
	}
	if b.HalfOpenProbes == 0 {
		b.HalfOpenProbes = d.HalfOpenProbes
	}
	return b
}

func (b BreakerSettings) validate() error {
	if b.FailureRate <= 0 || b.FailureRate > 1 {
		return fmt.Errorf("config: breaker.failure_rate: %g is not in (0, 1]", b.FailureRate)
	}
	if b.Cooldown > b.MaxCooldown {
		return fmt.Errorf("config: breaker.cooldown: %s exceeds max_cooldown %s", b.Cooldown.D(), b.MaxCooldown.D())
	}
	if b.MinRequests < 1 || b.ConsecutiveFailures < 1 || b.HalfOpenProbes < 1 {
		return fmt.Errorf("config: breaker: min_requests, consecutive_failures and half_open_probes must be at least 1")
	}
	return nil
}

// prepare applies defaults and validates.
func (c *Config) prepare() error {
	if c.Server.MaxBodyBytes == 0 {
		c.Server.MaxBodyBytes = defaultMaxBody
	}
	if c.Server.RequestTimeout == 0 {
		c.Server.RequestTimeout = Duration(defaultRequestTimeout)
	}
	if c.Server.DeadlineMargin == 0 {
		c.Server.DeadlineMargin = Duration(defaultDeadlineMargin)
	}
	if c.Server.MaxBodyBytes < 0 {
		return fmt.Errorf("config: server.max_body_bytes: must be positive, got %d", c.Server.MaxBodyBytes)
	}
	c.Defaults = c.Defaults.merge(BuiltinPolicy())
	if err := c.Defaults.validate("defaults"); err != nil {
		return err
	}
	c.Breaker = c.Breaker.merge(BuiltinBreaker())
	if err := c.Breaker.validate(); err != nil {
		return err
	}
	if len(c.Providers) == 0 {
		return fmt.Errorf("config: providers: at least one provider is required")
	}
	for _, id := range sortedKeys(c.Providers) {
		if err := c.Providers[id].validate("providers." + id); err != nil {
			return err
		}
	}
	if len(c.Routes) == 0 {
		return fmt.Errorf("config: routes: at least one route is required")
	}
	for _, name := range sortedKeys(c.Routes) {
		r := c.Routes[name]
		if r == nil {
			return fmt.Errorf("config: routes.%s: empty route", name)
		}
		r.Policy = r.Policy.merge(c.Defaults)
		if err := r.Policy.validate("routes." + name); err != nil {
			return err
		}
		if len(r.Targets) == 0 {
			return fmt.Errorf("config: routes.%s.targets: the chain is empty", name)
		}
		for i, t := range r.Targets {
			if err := c.validateTarget(fmt.Sprintf("routes.%s.targets[%d]", name, i), t); err != nil {
				return err
			}
		}
	}
	done := map[string]bool{}
	for _, name := range sortedKeys(c.Routes) {
		if err := c.checkCycle(name, nil, done); err != nil {
			return err
		}
	}
	c.resolveChains()
	return c.prepareTeams()
}

func (p *Provider) validate(at string) error {
	if p == nil {
		return fmt.Errorf("config: %s: empty provider", at)
	}
	if !slices.Contains(Kinds, p.Kind) {
		return fmt.Errorf("config: %s.kind: unknown kind %q (want one of %s)", at, p.Kind, strings.Join(Kinds, ", "))
	}
	switch p.Kind {
	case "openai", "anthropic":
		u, err := url.Parse(p.BaseURL)
		if p.BaseURL == "" || err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			return fmt.Errorf("config: %s.base_url: %q is not an http(s) URL", at, p.BaseURL)
		}
	case "fake":
		if p.Fake == nil {
			p.Fake = &FakeScript{}
		}
		switch p.Fake.Fail {
		case "", "status", "reset", "stall", "after_chunks", "empty":
		default:
			return fmt.Errorf("config: %s.fake.fail: unknown failure mode %q (want status, reset, stall, after_chunks or empty)", at, p.Fake.Fail)
		}
		if p.Fake.Fail == "status" && p.Fake.Status == 0 {
			p.Fake.Status = 503
		}
		if p.Fake.Status != 0 && (p.Fake.Status < 400 || p.Fake.Status > 599) {
			return fmt.Errorf("config: %s.fake.status: %d is not an HTTP error status", at, p.Fake.Status)
		}
	}
	if p.Fake != nil && p.Kind != "fake" {
		return fmt.Errorf("config: %s.fake: only kind fake takes a script", at)
	}
	switch f := p.Options["max_tokens_field"]; f {
	case "", "max_tokens", "max_completion_tokens":
	default:
		return fmt.Errorf("config: %s.options.max_tokens_field: %q is not max_tokens or max_completion_tokens", at, f)
	}
	for i, k := range p.Keys {
		if (k.Env == "") == (k.SSM == "") {
			return fmt.Errorf("config: %s.keys[%d]: set exactly one of env or ssm (keys are never written inline)", at, i)
		}
	}
	switch strings.ToLower(p.AuthHeader) {
	case "", "authorization", "api-key", "x-api-key":
	default:
		return fmt.Errorf("config: %s.auth_header: %q is not authorization, api-key or x-api-key", at, p.AuthHeader)
	}
	for h := range p.Headers {
		switch strings.ToLower(h) {
		case "authorization", "api-key", "x-api-key", "host", "content-length":
			return fmt.Errorf("config: %s.headers: %q may not be set as a static header", at, h)
		}
	}
	if p.ConnectTimeout == 0 {
		p.ConnectTimeout = Duration(5 * time.Second)
	}
	return nil
}

func (p Policy) validate(at string) error {
	if p.Attempts < 1 || p.Attempts > 10 {
		return fmt.Errorf("config: %s.attempts: %d is not between 1 and 10", at, p.Attempts)
	}
	if p.MaxFallbacks != nil && *p.MaxFallbacks < 0 {
		return fmt.Errorf("config: %s.max_fallbacks: %d must not be negative", at, *p.MaxFallbacks)
	}
	for _, c := range p.FallbackOn {
		if !slices.Contains(gwerr.Categories, c) {
			return fmt.Errorf("config: %s.fallback_on: unknown category %q", at, c)
		}
		if !c.Fallback() {
			return fmt.Errorf("config: %s.fallback_on: %q can never fall back (a caller's own mistake); the categories that can are rate_limited, timeout, overloaded, unavailable, interrupted, context_length and content_policy", at, c)
		}
	}
	if p.RetryBudget < 0 || p.RetryBudget > 1 {
		return fmt.Errorf("config: %s.retry_budget: %g is not between 0 and 1", at, p.RetryBudget)
	}
	if p.BackoffBase > p.BackoffMax {
		return fmt.Errorf("config: %s.backoff_base: %s exceeds backoff_max %s", at, p.BackoffBase.D(), p.BackoffMax.D())
	}
	return p.HeadBuffer.validate(at)
}

func (c *Config) validateTarget(at string, t Target) error {
	switch {
	case t.Route != "" && (t.Provider != "" || t.Model != ""):
		return fmt.Errorf("config: %s: a target is either {route} or {provider, model}, not both", at)
	case t.Route != "":
		if _, ok := c.Routes[t.Route]; !ok {
			return fmt.Errorf("config: %s.route: unknown route %q", at, t.Route)
		}
		return nil
	case t.Provider == "":
		return fmt.Errorf("config: %s.provider: required", at)
	}
	if _, ok := c.Providers[t.Provider]; !ok {
		return fmt.Errorf("config: %s.provider: unknown provider %q", at, t.Provider)
	}
	if t.Model == "" && c.Providers[t.Provider].Kind != "fake" {
		return fmt.Errorf("config: %s.model: required", at)
	}
	switch t.Breaker {
	case "", "open", "closed":
	default:
		return fmt.Errorf("config: %s.breaker: %q is not open or closed", at, t.Breaker)
	}
	if t.Attempts < 0 || t.Attempts > 10 || t.MaxTokens < 0 {
		return fmt.Errorf("config: %s: attempts must be 0-10 and max_tokens positive", at)
	}
	return nil
}

// checkCycle walks route references depth first; done marks routes whose
// references are known to be acyclic, so each route is walked once.
func (c *Config) checkCycle(name string, path []string, done map[string]bool) error {
	if slices.Contains(path, name) {
		return fmt.Errorf("config: routes.%s: route references form a cycle: %s", path[0], strings.Join(append(path, name), " -> "))
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
