package config

import (
	"strings"
	"testing"
	"time"
)

const servingBase = `
providers:
  a: {kind: fake}
  oai: {kind: openai, base_url: "https://api.openai.com/v1"}
routes:
  m: {targets: [{provider: a}]}
  check: {targets: [{provider: oai, model: gpt-4.1-mini}]}
`

func TestServingSettingsErrors(t *testing.T) {
	for _, c := range []struct{ name, in, want string }{
		{"pacing profile", "routes: {m: {pacing: warp, targets: [{provider: a}]}, check: {targets: [{provider: oai, model: x}]}}\n", `routes.m.pacing: unknown pacing profile "warp" (want instant, fast, steady or slow)`},
		{"cache ttl", "cache: {ttl: 500ms}\n", "cache.ttl: 500ms is not between 1s and 720h0m0s"},
		{"entry size", "cache: {max_entry_bytes: 10}\n", "cache.max_entry_bytes: 10 is not between 1024 and 389120"},
		{"route cache ttl", "routes: {m: {cache: {enabled: true, ttl: 1000h}, targets: [{provider: a}]}, check: {targets: [{provider: oai, model: x}]}}\n", "routes.m.cache.ttl: 1000h0m0s is not between"},
		{"mode", "moderation: {policies: {p: {mode: strict, check: {route: check, prompt: x}}}}\n", `moderation.policies.p.mode: unknown mode "strict"`},
		{"no layer", "moderation: {policies: {p: {mode: fail_closed}}}\n", "moderation.policies.p: policy p has neither an endpoint, a check nor a guardrail"},
		{"endpoint provider", "moderation: {policies: {p: {endpoint: {provider: nope}}}}\n", `moderation.policies.p.endpoint.provider: unknown provider "nope"`},
		{"endpoint kind", "moderation: {policies: {p: {endpoint: {provider: a}}}}\n", "provider a is kind fake; a moderation endpoint is an OpenAI-compatible (kind openai) provider"},
		{"check route", "moderation: {policies: {p: {check: {route: chek, prompt: x}}}}\n", `moderation.policies.p.check.route: unknown route "chek", did you mean "check"?`},
		{"check prompt", "moderation: {policies: {p: {check: {route: check}}}}\n", "moderation.policies.p.check.prompt: the policy prompt is empty"},
		{"check timeout", "moderation: {policies: {p: {check: {route: check, prompt: x, timeout: 2m}}}}\n", "moderation.policies.p.check.timeout: 2m0s is not between 1ms and 1m0s"},
		{"route policy", "routes: {m: {moderation: kid, targets: [{provider: a}]}, check: {targets: [{provider: oai, model: x}]}}\n", `routes.m.moderation: unknown moderation policy "kid"`},
		{"team policy", "teams: {t: {moderation: kid}}\n", `teams.t.moderation: unknown moderation policy "kid"`},
		{"guardrail id", "moderation: {policies: {p: {guardrail: {id: gr-1, version: \"1\"}}}}\n", `moderation.policies.p.guardrail.id: "gr-1" is not a guardrail id`},
		{"guardrail version", "moderation: {policies: {p: {guardrail: {id: abc123, version: latest}}}}\n", `moderation.policies.p.guardrail.version: "latest" is not a guardrail version`},
		{"guardrail region", "moderation: {policies: {p: {guardrail: {id: abc123, version: DRAFT, region: mars}}}}\n", `moderation.policies.p.guardrail.region: "mars" is not an AWS region`},
		{"guardrail endpoint", "moderation: {policies: {p: {guardrail: {id: abc123, version: DRAFT, endpoint: \"ftp://x\"}}}}\n", `moderation.policies.p.guardrail.endpoint: "ftp://x" is not an http(s) URL`},
		{"guardrail timeout", "moderation: {policies: {p: {guardrail: {id: abc123, version: DRAFT, timeout: 2m}}}}\n", "moderation.policies.p.guardrail.timeout: 2m0s is not between 1ms and 1m0s"},
		{"output window", "moderation: {policies: {p: {output_window: -1, guardrail: {id: abc123, version: DRAFT}}}}\n", "moderation.policies.p.output_window: -1 is not between 0"},
	} {
		base := servingBase
		if strings.HasPrefix(c.in, "routes:") {
			base = strings.Replace(servingBase, "routes:\n  m: {targets: [{provider: a}]}\n  check: {targets: [{provider: oai, model: gpt-4.1-mini}]}\n", "", 1)
		}
		_, err := Parse([]byte(base + c.in))
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: %v\nwant %s", c.name, err, c.want)
		}
	}
}

// A guardrail layer takes its defaults (timeout, the output window) and
// the stack reads its identifiers (GuardrailIDs); prices default to
// Bedrock's list prices, each overridable.
func TestGuardrailPolicyDefaults(t *testing.T) {
	c, err := Parse([]byte(servingBase + `
moderation:
  guardrail_prices: {content: 0.2}
  policies:
    aws: {guardrail: {id: abc123, version: "2"}, output: true}
    arn: {guardrail: {id: "arn:aws:bedrock:eu-west-1:123456789012:guardrail/xyz789", version: DRAFT}, output_window: 50}
    whole: {endpoint: {provider: oai}, output: true}
`))
	if err != nil {
		t.Fatal(err)
	}
	p := c.Moderation.Policies
	if g := p["aws"].Guardrail; g.Timeout.D() != DefaultGuardrailTimeout || p["aws"].OutputWindow != DefaultGuardrailWindow {
		t.Errorf("guardrail defaults: %+v window %d", g, p["aws"].OutputWindow)
	}
	if p["arn"].OutputWindow != 50 || p["whole"].OutputWindow != 0 {
		t.Errorf("windows: arn %d, whole %d", p["arn"].OutputWindow, p["whole"].OutputWindow)
	}
	if got := c.GuardrailIDs(); len(got) != 2 || got[0] != "arn:aws:bedrock:eu-west-1:123456789012:guardrail/xyz789" || got[1] != "abc123" {
		t.Errorf("GuardrailIDs %v", got)
	}
	pr := c.Moderation.GuardrailPrices.Prices()
	if pr.Content != 0.2 || pr.Topic != DefaultGuardrailTopicPrice || pr.SensitiveInformation != DefaultGuardrailSensitiveInformationPrice {
		t.Errorf("prices %+v", pr)
	}
}

func TestCacheForAndModerationFor(t *testing.T) {
	c, err := Parse([]byte(servingBase + `
cache: {ttl: 2h}
moderation:
  policies:
    kids: {endpoint: {provider: oai}, check: {route: check, prompt: "Block what is unsuitable for children."}, output: true}
    adults: {mode: fail_open, endpoint: {provider: oai}}
    none: {mode: off}
teams:
  on: {cache: true, moderation: adults}
  off: {cache: false, moderation: kids}
  quiet: {moderation: none}
`))
	if err != nil {
		t.Fatal(err)
	}
	c.Routes["m"].Cache = &RouteCache{Enabled: true, TTL: Duration(time.Minute)}
	c.Routes["m"].Moderation = "kids"
	if p := c.CacheFor("m", "anyone"); !p.On || p.TTL != time.Minute || p.Shared {
		t.Errorf("route m: %+v", p)
	}
	if p := c.CacheFor("m", "off"); p.On {
		t.Errorf("team off: %+v", p)
	}
	if p := c.CacheFor("check", "on"); !p.On || p.TTL != 2*time.Hour {
		t.Errorf("team on, route check: %+v", p)
	}
	c.Routes["check"].Cache = &RouteCache{Uncacheable: true}
	if p := c.CacheFor("check", "on"); p.On {
		t.Errorf("uncacheable route: %+v", p)
	}
	kids := c.Moderation.Policies["kids"]
	if kids.Mode != ModerationFailClosed || kids.Endpoint.Model != DefaultModerationModel || kids.Endpoint.Timeout.D() != DefaultEndpointTimeout ||
		kids.Check.Timeout.D() != DefaultCheckTimeout || kids.Check.MaxTokens != DefaultCheckMaxTokens || kids.MaxOutputBytes != DefaultModerationHold {
		t.Errorf("kids defaults: %+v %+v %+v", kids, kids.Endpoint, kids.Check)
	}
	if ps := c.ModerationFor("m", "on"); len(ps) != 2 || ps[0] != "kids" || ps[1] != "adults" {
		t.Errorf("route then team: %v", ps)
	}
	if ps := c.ModerationFor("m", "off"); len(ps) != 1 {
		t.Errorf("the same policy twice: %v", ps)
	}
	if ps := c.ModerationFor("check", "quiet"); len(ps) != 0 {
		t.Errorf("an off policy: %v", ps)
	}
}
