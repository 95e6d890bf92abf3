package teams_test

import (
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/llmgw/llmgw/pkg/config"
	"github.com/llmgw/llmgw/pkg/teams"
)

// readmeConfig is the teams/prices/usage example of the README.
const readmeConfig = `
providers:
  openai: {kind: openai, base_url: "https://api.openai.com/v1"}
  anthropic: {kind: anthropic, base_url: "https://api.anthropic.com"}
routes:
  gpt-4.1-mini: {targets: [{provider: openai, model: gpt-4.1-mini}]}
  claude-sonnet: {targets: [{provider: anthropic, model: claude-sonnet-4-5}]}
teams:
  search:
    keys: [{id: k1, sha256: "9F86D081884C7D659A2FEAA0C55AD015A3BF4F1B2B0B822CD15D6C15B0F00A08"}, {id: k0, sha256: "60303ae22b998861bce3b28f33eec1be758a213c86c93c076dbe9f558c11c752", revoked: true}]
    routes: [gpt-4.1-mini]
    limits: {requests_per_minute: 600, tokens_per_minute: 200000, cost_per_hour_usd: 5, cost_per_day_usd: 50, max_input_tokens: 32000, max_output_tokens: 4096}
    tags: {checkout: {cost_per_day_usd: 10}}
  platform:
    admin: true
    keys: [{id: k1, sha256: "fd61a03af4f77d870fc21e05e7e80678095c92d808cfb3b5c279ee04c74aca13"}]
prices:
  "openai/gpt-4.1-mini": {input: 0.40, output: 1.60, cached_input: 0.10}
  "claude-sonnet-4-5": {input: 3, output: 15, cached_input: 0.30, cache_write: 3.75}
usage: {ttl: 2160h, fail_closed: false, store_timeout: 250ms,
        lease: {share: 0.05, max_requests: 64, ttl: 10s, take_timeout: 1s}}
`

func TestConfigReferenceExampleParses(t *testing.T) {
	cfg, err := config.Parse([]byte(readmeConfig))
	if err != nil {
		t.Fatal(err)
	}
	s := cfg.Teams["search"]
	if s.Limits.RequestsPerMinute != 600 || s.Tags["checkout"].CostPerDayUSD != 10 || !s.Keys[1].Revoked {
		t.Fatalf("search: %+v", s)
	}
	if s.Keys[0].SHA256 != "9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08" {
		t.Fatal("hashes are normalised to lowercase")
	}
	if cfg.Usage.TTL.D() != 90*24*time.Hour || cfg.Usage.StoreTimeout.D() != 250*time.Millisecond ||
		cfg.Usage.Lease != (config.LeaseSettings{Share: 0.05, MaxRequests: 64, TTL: config.Duration(10 * time.Second), TakeTimeout: config.Duration(time.Second)}) {
		t.Fatalf("usage: %+v", cfg.Usage)
	}
	p, ok := cfg.PriceFor("bedrock", "claude-sonnet-4-5")
	if !ok || p.CacheWritePrice() != 3.75 || p.CachedInputPrice() != 0.30 {
		t.Fatalf("price: %+v %v", p, ok)
	}
	if p, _ := cfg.PriceFor("openai", "gpt-4.1-mini"); p.CacheWritePrice() != 0.40 {
		t.Fatal("cache_write defaults to input")
	}
	// Defaults when the sections are absent; the seed config's "teams: {}".
	cfg, err = config.Parse([]byte("providers: {a: {kind: fake}}\nroutes: {m: {targets: [{provider: a, model: x}]}}\nteams: {}\n"))
	if err != nil || cfg.Usage.TTL.D() != config.DefaultUsageTTL || cfg.Usage.StoreTimeout.D() != config.DefaultStoreTimeout || cfg.Usage.FailClosed ||
		cfg.Usage.Lease.Share != config.DefaultLeaseShare || cfg.Usage.Lease.MaxRequests != config.DefaultLeaseMaxRequests || cfg.Usage.Lease.TTL.D() != config.DefaultLeaseTTL {
		t.Fatalf("defaults: %+v %v", cfg.Usage, err)
	}
}

func TestConfigValidationNamesFieldAndValue(t *testing.T) {
	const head = "providers: {a: {kind: fake}}\nroutes: {m: {targets: [{provider: a, model: x}]}}\n"
	const h1 = `"1111111111111111111111111111111111111111111111111111111111111111"`
	cases := map[string]struct{ yaml, want string }{
		"key pasted instead of hash": {"teams: {t: {keys: [{id: k1, sha256: llmgw_abcdefSECRETxx}]}}",
			"teams.t.keys[0].sha256: not 64 hex digits"},
		"same hash twice": {"teams: {t: {keys: [{id: k1, sha256: " + h1 + "}]}, u: {keys: [{id: k1, sha256: " + h1 + "}]}}",
			"teams.u.keys[0].sha256: the same key hash is also teams.t.keys[0]"},
		"duplicate key id":  {"teams: {t: {keys: [{id: k1, sha256: " + h1 + "}, {id: k1, sha256: '" + strings.Repeat("2", 64) + "'}]}}", `duplicate key id "k1"`},
		"missing key id":    {"teams: {t: {keys: [{sha256: " + h1 + "}]}}", `teams.t.keys[0].id: ""`},
		"unknown route":     {"teams: {t: {routes: [nope]}}", `teams.t.routes[0]: unknown route "nope"`},
		"reserved name":     {"teams: {anonymous: {}}", `teams.anonymous: "anonymous" is reserved`},
		"bad team name":     {"teams: {\"a#b\": {}}", `team name "a#b"`},
		"negative limit":    {"teams: {t: {limits: {requests_per_minute: -1}}}", "teams.t.limits.requests_per_minute: -1"},
		"bad tag":           {"teams: {t: {tags: {\"a b\": {requests_per_minute: 1}}}}", `tag "a b"`},
		"tag limit":         {"teams: {t: {tags: {x: {cost_per_day_usd: -3}}}}", "teams.t.tags.x.cost_per_day_usd: -3"},
		"unpriced cost cap": {"teams: {t: {limits: {cost_per_day_usd: 5}}}", "teams.t: has a cost limit but target a/x (route m) has no entry in prices"},
		"negative price":    {"prices: {x: {input: -1, output: 1}}", "prices.x.input: -1"},
		"bad price key":     {"prices: {\"a/\": {input: 1, output: 1}}", `prices.a/: a price is keyed by`},
		"short ttl":         {"usage: {ttl: 1h}", "usage.ttl: 1h0m0s is shorter than the minimum 72h0m0s"},
		"long timeout":      {"usage: {store_timeout: 1m}", "usage.store_timeout: 1m0s is longer than 10s"},
		"unknown field":     {"teams: {t: {limts: {}}}", `unknown field "limts"`},
		"lease share":       {"usage: {lease: {share: 1.5}}", "usage.lease.share: 1.5 is not in (0, 1]"},
		"lease requests":    {"usage: {lease: {max_requests: -2}}", "usage.lease.max_requests: -2 is less than 1"},
		"lease ttl":         {"usage: {lease: {ttl: 100ms}}", "usage.lease.ttl: 100ms is not between 1s and 10m"},
	}
	for name, c := range cases {
		_, err := config.Parse([]byte(head + c.yaml))
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: got %v, want %q", name, err, c.want)
		}
		if err != nil && strings.Contains(err.Error(), "SECRET") {
			t.Errorf("%s: the error echoes what may be a key: %v", name, err)
		}
	}
	// A cost cap with every reachable target priced is fine; the team's
	// route allow-list narrows what must be priced.
	ok := "providers: {a: {kind: fake}}\nroutes: {m: {targets: [{provider: a, model: x}]}, n: {targets: [{provider: a, model: y}]}}\n" +
		"prices: {a/x: {input: 1, output: 1}}\nteams: {t: {routes: [m], limits: {cost_per_day_usd: 5}}}"
	if _, err := config.Parse([]byte(ok)); err != nil {
		t.Fatal(err)
	}
}

func TestAnonymousOnlyWithoutTeamsAndWhenAllowed(t *testing.T) {
	cfg, err := config.Parse([]byte("providers: {a: {kind: fake}}\nroutes: {m: {targets: [{provider: a, model: x}]}}\n"))
	if err != nil {
		t.Fatal(err)
	}
	a := teams.NewAuthenticator(func() *config.Config { return cfg }, nil)
	r, _ := http.NewRequest(http.MethodPost, "/v1/chat/completions", nil)
	r.Host = "127.0.0.1:8080"
	if _, err := a.Authenticate(r); err == nil {
		t.Fatal("no teams and anonymous not allowed: must refuse")
	}
	a.AnonymousWithoutTeams = true
	c, err := a.Authenticate(r)
	if err != nil || c.Team != "" {
		t.Fatalf("anonymous: %+v %v", c, err)
	}
	// Once a team exists, keys are required even with the flag.
	cfg2, err := config.Parse([]byte("providers: {a: {kind: fake}}\nroutes: {m: {targets: [{provider: a, model: x}]}}\nteams: {t: {}}\n"))
	if err != nil {
		t.Fatal(err)
	}
	cfg = cfg2
	a2 := teams.NewAuthenticator(func() *config.Config { return cfg }, nil)
	a2.AnonymousWithoutTeams = true
	if _, err := a2.Authenticate(r); err == nil {
		t.Fatal("teams configured: a request without a key must be refused")
	}
}
