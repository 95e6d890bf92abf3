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
		{"no layer", "moderation: {policies: {p: {mode: fail_closed}}}\n", "moderation.policies.p: policy p has neither an endpoint nor a check"},
		{"endpoint provider", "moderation: {policies: {p: {endpoint: {provider: nope}}}}\n", `moderation.policies.p.endpoint.provider: unknown provider "nope"`},
		{"endpoint kind", "moderation: {policies: {p: {endpoint: {provider: a}}}}\n", "provider a is kind fake; a moderation endpoint is an OpenAI-compatible (kind openai) provider"},
		{"check route", "moderation: {policies: {p: {check: {route: chek, prompt: x}}}}\n", `moderation.policies.p.check.route: unknown route "chek", did you mean "check"?`},
		{"check prompt", "moderation: {policies: {p: {check: {route: check}}}}\n", "moderation.policies.p.check.prompt: the policy prompt is empty"},
		{"check timeout", "moderation: {policies: {p: {check: {route: check, prompt: x, timeout: 2m}}}}\n", "moderation.policies.p.check.timeout: 2m0s is not between 1ms and 1m0s"},
		{"route policy", "routes: {m: {moderation: kid, targets: [{provider: a}]}, check: {targets: [{provider: oai, model: x}]}}\n", `routes.m.moderation: unknown moderation policy "kid"`},
		{"team policy", "teams: {t: {moderation: kid}}\n", `teams.t.moderation: unknown moderation policy "kid"`},
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
