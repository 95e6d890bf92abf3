package config

import (
	"os"
	"strings"
	"testing"
	"time"
)

const base = `
providers:
  a: {kind: openai, base_url: "https://api.openai.com/v1", keys: [{env: OPENAI_API_KEY}]}
  b: {kind: fake}
routes:
  m: {targets: [{provider: a, model: gpt-4.1}, {provider: b, model: x}]}
`

func TestValidConfigGetsDefaults(t *testing.T) {
	c, err := Parse([]byte(base))
	if err != nil {
		t.Fatal(err)
	}
	r := c.Routes["m"]
	if r.FirstTokenTimeout.D() != 10*time.Second || r.Attempts != 2 || len(r.FallbackOn) != 5 || r.IdleTimeout.D() != 30*time.Second {
		t.Errorf("defaults not applied: %+v", r.Policy)
	}
	if c.Server.MaxBodyBytes != 4<<20 || c.Server.MaxUpstreamBodyBytes != 32<<20 || c.Breaker.ConsecutiveFailures != 5 {
		t.Errorf("server/breaker defaults: %+v %+v", c.Server, c.Breaker)
	}
	steps, _, ok := c.Chain("m")
	if !ok || len(steps) != 2 || steps[0].ID != "a/gpt-4.1" || steps[1].Attempts != 2 {
		t.Errorf("chain = %+v", steps)
	}
}

func TestJSONIsAccepted(t *testing.T) {
	_, err := Parse([]byte(`{"providers":{"a":{"kind":"fake"}},"routes":{"m":{"targets":[{"provider":"a","model":"x"}]}}}`))
	if err != nil {
		t.Fatal(err)
	}
}

func TestChainSplicesRoutesAndDropsDisabledProviders(t *testing.T) {
	c, err := Parse([]byte(`
providers:
  a: {kind: fake}
  b: {kind: fake, disabled: true}
  c: {kind: fake}
routes:
  inner: {targets: [{provider: b, model: x}, {provider: c, model: y}]}
  outer: {targets: [{provider: a, model: x}, {route: inner}, {provider: c, model: y}]}
`))
	if err != nil {
		t.Fatal(err)
	}
	steps, _, _ := c.Chain("outer")
	var ids []string
	for _, s := range steps {
		ids = append(ids, s.ID)
	}
	if strings.Join(ids, ",") != "a/x,c/y" {
		t.Errorf("chain = %v", ids)
	}
}

func TestDemoConfigIsValid(t *testing.T) {
	c := Demo()
	if len(c.RouteNames()) < 3 {
		t.Fatalf("demo routes = %v", c.RouteNames())
	}
	for _, p := range c.Providers {
		if p.Kind != "fake" || len(p.Keys) != 0 {
			t.Errorf("demo config needs keys or network: %+v", p)
		}
	}
}

// TestSeedConfigIsValid checks the config the CDK stack seeds into SSM: a
// deploy must never start the gateway on a config it refuses.
func TestSeedConfigIsValid(t *testing.T) {
	b, err := os.ReadFile("../../infra/seed-config.yaml")
	if err != nil {
		t.Fatal(err)
	}
	c, err := Parse([]byte(strings.ReplaceAll(string(b), "STAGE", "test")))
	if err != nil {
		t.Fatalf("seed config: %v", err)
	}
	if steps, _, ok := c.Chain("claude-sonnet"); !ok || len(steps) != 3 {
		t.Errorf("claude-sonnet chain = %+v", steps)
	}
}

func TestFallbackOnThatCanNeverApplyIsRejected(t *testing.T) {
	for _, c := range []string{"invalid_request", "authentication", "budget_exceeded", "internal"} {
		cfg := strings.Replace(base, "  m: {targets:", "  m: {fallback_on: ["+c+"], targets:", 1)
		if _, err := Parse([]byte(cfg)); err == nil || !strings.Contains(err.Error(), "can never fall back") {
			t.Errorf("fallback_on [%s]: err %v", c, err)
		}
	}
	ok := strings.Replace(base, "  m: {targets:", "  m: {fallback_on: [context_length, content_policy], targets:", 1)
	if _, err := Parse([]byte(ok)); err != nil {
		t.Errorf("context_length and content_policy may be listed: %v", err)
	}
}

// TestBreakerDefaultsLetAHealedProviderBack: the default cooldown is short
// (issue 13, item 6), and a config that sets only a longer cooldown stays
// valid (its cooldown is its cap).
func TestBreakerDefaultsLetAHealedProviderBack(t *testing.T) {
	b := BuiltinBreaker()
	if b.Cooldown.D() > 5*time.Second || b.MaxCooldown.D() > 10*time.Second {
		t.Errorf("defaults %+v: a healed primary would stay out for longer than 15s", b)
	}
	c, err := Parse([]byte("breaker: {cooldown: 30s}\nproviders: {p: {kind: fake}}\nroutes: {m: {targets: [{provider: p, model: x}]}}\n"))
	if err != nil {
		t.Fatal(err)
	}
	if c.Breaker.Cooldown.D() != 30*time.Second || c.Breaker.MaxCooldown.D() != 30*time.Second {
		t.Errorf("breaker %+v", c.Breaker)
	}
}

// TestRescueSettings: head_buffer and continuation are opt-in, inherited
// from defaults like every policy field, and validated; prefill reaches
// the resolved chain.
func TestRescueSettings(t *testing.T) {
	base := "providers: {p: {kind: fake}, q: {kind: fake}}\n"
	c, err := Parse([]byte(base + "routes: {m: {targets: [{provider: p, model: x}, {provider: q, model: y, prefill: true}]}}\n"))
	if err != nil {
		t.Fatal(err)
	}
	steps, r, _ := c.Chain("m")
	if r.Policy.HeadBuffer != nil || r.Policy.ContinuesMidStream() || steps[0].Prefill || !steps[1].Prefill {
		t.Fatalf("defaults: head %+v, continuation %v, prefill %v %v", r.Policy.HeadBuffer, r.Policy.ContinuesMidStream(), steps[0].Prefill, steps[1].Prefill)
	}
	c, err = Parse([]byte(base + "defaults: {head_buffer: {tokens: 20, duration: 800ms}, continuation: true}\n" +
		"routes: {m: {targets: [{provider: p, model: x}]}, n: {continuation: false, targets: [{provider: p, model: x}]}}\n"))
	if err != nil {
		t.Fatal(err)
	}
	if hb := c.Routes["m"].HeadBuffer; hb == nil || hb.Tokens != 20 || hb.Duration.D() != 800*time.Millisecond || !c.Routes["m"].ContinuesMidStream() {
		t.Errorf("inherited: %+v %v", hb, c.Routes["m"].ContinuesMidStream())
	}
	if c.Routes["n"].ContinuesMidStream() {
		t.Error("a route could not turn continuation off")
	}
	for _, bad := range []string{"{}", "{tokens: -1}", "{duration: 2m}"} {
		if _, err := Parse([]byte(base + "routes: {m: {head_buffer: " + bad + ", targets: [{provider: p, model: x}]}}\n")); err == nil {
			t.Errorf("head_buffer %s accepted", bad)
		}
	}
}

// TestGeminiNeedsNoBaseURL: kind gemini has a default API root, so a
// provider of that kind may leave base_url out.
func TestGeminiNeedsNoBaseURL(t *testing.T) {
	c, err := Parse([]byte("providers: {g: {kind: gemini, keys: [{env: GEMINI_API_KEY}]}}\nroutes: {m: {targets: [{provider: g, model: gemini-2.5-flash}]}}\n"))
	if err != nil {
		t.Fatal(err)
	}
	if p := c.Providers["g"]; p.Kind != "gemini" || p.BaseURL != "" {
		t.Errorf("provider = %+v", p)
	}
}

// TestPriceForBaseModel: a bedrock inference profile or ARN is priced by
// its base model (or its target's base_model); other kinds are not read
// that way.
func TestPriceForBaseModel(t *testing.T) {
	c, err := Parse([]byte(`
providers:
  br: {kind: bedrock, region: us-east-1}
  oa: {kind: openai, base_url: "https://api.openai.com/v1"}
prices:
  anthropic.claude-3-7-sonnet-20250219-v1:0: {input: 3, output: 15}
  br/amazon.nova-pro-v1:0: {input: 0.8, output: 3.2}
routes:
  m:
    targets:
      - {provider: br, model: "arn:aws:bedrock:us-east-1:1:application-inference-profile/x1", options: {base_model: "amazon.nova-pro-v1:0"}}
`))
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		provider, model string
		input           float64
		ok              bool
	}{
		{"br", "us.anthropic.claude-3-7-sonnet-20250219-v1:0", 3, true},
		{"br", "arn:aws:bedrock:eu-west-1:1:inference-profile/eu.anthropic.claude-3-7-sonnet-20250219-v1:0", 3, true},
		{"br", "arn:aws:bedrock:us-east-1:1:application-inference-profile/x1", 0.8, true},
		{"br", "us.amazon.nova-pro-v1:0", 0.8, true},
		{"oa", "us.anthropic.claude-3-7-sonnet-20250219-v1:0", 0, false},
		{"br", "arn:aws:bedrock:us-east-1:1:application-inference-profile/other", 0, false},
	} {
		p, ok := c.PriceFor(tc.provider, tc.model)
		if ok != tc.ok || p.Input != tc.input {
			t.Errorf("PriceFor(%s, %s) = %+v, %v", tc.provider, tc.model, p, ok)
		}
	}
}

// TestPolicyDefaultsReachRoutes: retry_same_target_on_timeout and
// translate_without set under defaults apply to every route that does not
// set them itself.
func TestPolicyDefaultsReachRoutes(t *testing.T) {
	c, err := Parse([]byte("defaults: {retry_same_target_on_timeout: true, translate_without: [thinking]}\n" +
		"providers: {p: {kind: fake}}\nroutes: {m: {targets: [{provider: p, model: x}]}, n: {translate_without: [], targets: [{provider: p, model: x}]}}\n"))
	if err != nil {
		t.Fatal(err)
	}
	m, n := c.Routes["m"].Policy, c.Routes["n"].Policy
	if !m.RetrySameTargetOnTimeout || len(m.TranslateWithout) != 1 || m.TranslateWithout[0] != "thinking" {
		t.Errorf("route m did not inherit: %+v", m)
	}
	if len(n.TranslateWithout) != 0 {
		t.Errorf("route n set translate_without: [] and got %v", n.TranslateWithout)
	}
}
