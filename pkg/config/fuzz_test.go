package config

import (
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"strings"
	"testing"
	"time"

	"go.yaml.in/yaml/v3"
)

// parseBounded runs Parse with a watchdog: a config that makes the loader
// hang fails the test instead of hanging it.
func parseBounded(t *testing.T, in []byte, bound time.Duration) (*Config, error) {
	t.Helper()
	type res struct {
		c   *Config
		err error
	}
	done := make(chan res, 1)
	go func() {
		c, err := Parse(in)
		done <- res{c, err}
	}()
	select {
	case r := <-done:
		return r.c, r.err
	case <-time.After(bound):
		t.Fatalf("config.Parse did not return within %v on %d bytes:\n%.2000s", bound, len(in), in)
		return nil, nil
	}
}

// FuzzParse: the config loader never panics or hangs, and any config it
// accepts is usable: every route resolves to a finite chain of existing,
// distinct targets with their policy applied, and the config survives a
// round trip through its own JSON encoding unchanged.
func FuzzParse(f *testing.F) {
	f.Add(DemoYAML())
	for _, s := range []string{
		"providers:\n  p: {kind: fake}\nroutes:\n  m: {targets: [{provider: p, model: x}]}\n",
		`{"providers":{"p":{"kind":"openai","base_url":"http://127.0.0.1:1/v1","keys":[{"env":"K"}]}},"routes":{"m":{"targets":[{"provider":"p","model":"x"}]}}}`,
		"providers:\n  a: {kind: anthropic, base_url: 'https://api.anthropic.com', options: {anthropic_version: '2023-06-01'}}\n  b: {kind: bedrock, region: us-east-1}\nroutes:\n  r1: {first_token_timeout: 1s, targets: [{provider: a, model: c, attempts: 3, breaker: open}]}\n  r2: {max_fallbacks: 0, fallback_on: [timeout], targets: [{route: r1}, {provider: b, model: d, max_tokens: 10}]}\n",
		"server: {max_body_bytes: 10, request_timeout: 1s}\nbreaker: {window: 1s, cooldown: 1s, max_cooldown: 2s}\nproviders:\n  p: {kind: fake, fake: {fail: after_chunks, after_chunks: 2, reply: hi}}\nroutes:\n  m: {targets: [{provider: p}]}\n",
		"providers:\n  p: {kind: fake}\nroutes:\n  a: {targets: [{route: b}]}\n  b: {targets: [{route: a}]}\n",
		"providers:\n  p: {kind: fake}\nroutes:\n  m: {targets: [{provider: p, model: x}]}\nteams:\n  t1: {keys: [{id: k1, sha256: '" + strings.Repeat("ab", 32) + "'}], limits: {requests_per_minute: 5}, tags: {x: {cost_per_day_usd: 1}}}\nprices:\n  x: {input: 1, output: 2}\nusage: {ttl: 100h, store_timeout: 1s}\n",
		"a: &a [*a]\n",
		"providers: &p\n  p: {kind: fake}\nroutes:\n  m: {targets: [{provider: p, model: *p}]}\n",
		"- 1\n- 2\n",
		"providers: {p: {kind: fake}}\nroutes: {m: {targets: [{provider: p, model: x}]}}\n? [a]\n: b\n",
		"base: &b {kind: fake}\nproviders: {p: {<<: *b, Kind: fake}}\nroutes: {m: {Targets: [{provider: p, model: 1e3}]}}\n",
		"providers: {p: {kind: fake, connect_timeout: 1s}}\nroutes: {m: {attempts: 1e1, retry_budget: 1, targets: [{provider: p, max_tokens: 2.0}]}}\n",
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, in []byte) {
		if len(in) > 1<<16 {
			return
		}
		c, err := parseBounded(t, in, 10*time.Second)
		if err != nil {
			if c != nil {
				t.Fatalf("Parse returned both a config and an error: %v", err)
			}
			var e *Error
			if !errors.As(err, &e) || e.Msg == "" {
				t.Fatalf("Parse error %q (%T) is not an *Error", err, err)
			}
			return
		}
		checkUsable(t, c)
		// The explainer, which only runs on failures, must agree that an
		// accepted document has no problem: it may never be stricter than
		// the decoder, or it would blame the wrong field.
		var root yaml.Node
		if err := yaml.Unmarshal(in, &root); err != nil {
			t.Fatalf("accepted, but not a node tree: %v", err)
		}
		ck := checker{budget: 1 << 20}
		if err := ck.check(&root, reflect.TypeFor[Config](), nil); err != nil && err != errStop {
			t.Fatalf("the explainer rejects an accepted config: %v\n%s", err, in)
		}
		js, err := json.Marshal(c)
		if err != nil {
			t.Fatalf("an accepted config does not encode: %v", err)
		}
		c2, err := parseBounded(t, js, 10*time.Second)
		if err != nil {
			t.Fatalf("an accepted config does not load again from its own encoding: %v\n%s\nfrom\n%s", err, js, in)
		}
		js2, _ := json.Marshal(c2)
		if string(js) != string(js2) {
			t.Fatalf("the config changed over a round trip:\n%s\n%s", js, js2)
		}
	})
}

// checkUsable resolves every route as a request would.
func checkUsable(t *testing.T, c *Config) {
	t.Helper()
	if c.Server.MaxBodyBytes <= 0 || c.Server.RequestTimeout <= 0 {
		t.Fatalf("server defaults not applied: %+v", c.Server)
	}
	for _, name := range c.RouteNames() {
		start := time.Now()
		steps, r, ok := c.Chain(name)
		if took := time.Since(start); took > time.Second {
			t.Fatalf("Chain(%q) took %v", name, took)
		}
		if !ok || r == nil {
			t.Fatalf("route %q does not resolve", name)
		}
		seen := map[string]bool{}
		for _, s := range steps {
			p := c.Providers[s.Provider]
			if p == nil || p.Disabled {
				t.Fatalf("route %q: step %+v has no usable provider", name, s)
			}
			if seen[s.ID] || s.ID != s.Provider+"/"+s.Model {
				t.Fatalf("route %q: step %+v repeated or misnamed", name, s)
			}
			seen[s.ID] = true
			if s.Attempts < 1 || s.Attempts > 10 || s.FirstTokenTimeout <= 0 || s.MaxTokens <= 0 {
				t.Fatalf("route %q: step %+v lacks its policy", name, s)
			}
		}
		if r.IdleTimeout <= 0 || r.ResponseTimeout <= 0 || len(r.FallbackOn) == 0 && r.Policy.FallbackOn == nil {
			t.Fatalf("route %q: policy defaults not applied: %+v", name, r.Policy)
		}
	}
}

// diamond is a config whose routes reference each other in a chain of
// diamonds: route r<i> lists r<i+1> twice, depth times over. It is small
// (about 50 bytes a level) and has exactly one target.
func diamond(depth int) []byte {
	var b strings.Builder
	b.WriteString("providers:\n  p: {kind: fake}\nroutes:\n")
	for i := 0; i < depth; i++ {
		fmt.Fprintf(&b, "  r%d: {targets: [{route: r%d}, {route: r%d}]}\n", i, i+1, i+1)
	}
	fmt.Fprintf(&b, "  r%d: {targets: [{provider: p, model: x}]}\n", depth)
	return []byte(b.String())
}

// TestRouteReferencesCostLinearTime: a route spliced into a chain twice
// adds nothing (its targets are already there), so loading a config and
// resolving a chain must not walk every path through the route graph:
// that is exponential in the nesting (2^24 paths for this 1.2 KB config),
// at load (the cycle check) and on every request (Chain).
func TestRouteReferencesCostLinearTime(t *testing.T) {
	in := diamond(24)
	c, err := parseBounded(t, in, 2*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	steps, _, _ := c.Chain("r0")
	if took := time.Since(start); took > 50*time.Millisecond || len(steps) != 1 {
		t.Fatalf("Chain(r0) took %v for %d steps: resolved once per path", took, len(steps))
	}
}
