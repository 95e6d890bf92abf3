package status

import (
	"context"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/llmgw/llmgw/pkg/breaker"
	"github.com/llmgw/llmgw/pkg/config"
	"github.com/llmgw/llmgw/pkg/exchange"
	"github.com/llmgw/llmgw/pkg/gwerr"
	"github.com/llmgw/llmgw/pkg/keyledger"
	_ "github.com/llmgw/llmgw/pkg/provider/registry" // the provider kinds the config names
)

// fleetDoc is a seeded fleet's config: three providers, a three-target
// chain (one target with settings a rewrite must keep), a chain spliced
// into another, two teams with budgets.
const fleetDoc = `
providers:
  openai: {kind: openai, base_url: "https://api.openai.com/v1", keys: [{env: K_OPENAI_1}, {env: K_OPENAI_2}]}
  anthropic: {kind: anthropic, base_url: "https://api.anthropic.com", keys: [{env: K_ANTHROPIC_1}]}
  bedrock: {kind: bedrock, region: us-east-1}
routes:
  claude-sonnet:
    targets:
      - {provider: anthropic, model: claude-sonnet-4-5, attempts: 2, first_token_timeout: 4s}
      - {provider: bedrock, model: "us.anthropic.claude-sonnet-4-5-20250929-v1:0"}
      - {provider: openai, model: gpt-4.1}
  gpt-4.1-mini:
    targets:
      - {provider: openai, model: gpt-4.1-mini}
      - {route: claude-sonnet}
teams:
  search:
    keys: [{id: k1, sha256: "1111111111111111111111111111111111111111111111111111111111111111"}, {id: k2, sha256: "2222222222222222222222222222222222222222222222222222222222222222"}]
    limits: {cost_per_day_usd: 50}
    tags: {checkout: {cost_per_day_usd: 10}}
  ops:
    admin: true
    keys: [{id: k1, sha256: "3333333333333333333333333333333333333333333333333333333333333333"}]
prices:
  claude-sonnet-4-5: {input: 3, output: 15}
  "us.anthropic.claude-sonnet-4-5-20250929-v1:0": {input: 3, output: 15}
  gpt-4.1: {input: 2, output: 8}
  gpt-4.1-mini: {input: 0.4, output: 1.6}
`

var seedNow = time.Date(2026, 12, 1, 14, 30, 0, 0, time.UTC)

func fleetConfig(t *testing.T) *config.Config {
	t.Helper()
	cfg, err := config.Parse([]byte(fleetDoc))
	if err != nil {
		t.Fatal(err)
	}
	return cfg
}

// seededFleet is the status page's sources for the seeded fleet in the
// middle of an incident: Anthropic's breaker open after overloads,
// Bedrock half-open, one OpenAI key cooling down after a 429, search near
// its budget and over its checkout tag's, a failed reload.
func seededFleet(t *testing.T) Options {
	cfg := fleetConfig(t)
	rec := NewRecent()
	at := seedNow.Add(-2 * time.Minute)
	var attempts []exchange.Attempt
	for i, c := range []gwerr.Category{"overloaded", "overloaded", "overloaded", "timeout", ""} {
		attempts = append(attempts, exchange.Attempt{Target: "anthropic/claude-sonnet-4-5", Category: c, Start: at.Add(time.Duration(i) * time.Second), LatencyM: 900})
	}
	rec.Observe(&exchange.Record{Stream: true, Time: at, Attempts: attempts})
	for _, ms := range []float64{380, 400, 420, 450, 1200} {
		rec.Observe(&exchange.Record{Stream: true, Time: at, Attempts: []exchange.Attempt{{Target: "openai/gpt-4.1", Start: at, LatencyM: ms}}})
	}
	version := ConfigState{Version: "9f2c4e1b7a3d5f60a1b2c3d4e5f60718293a4b5c6d7e8f90a1b2c3d4e5f60718", AppliedAt: seedNow.Add(-time.Hour),
		LastFailed: &Failure{At: seedNow.Add(-5 * time.Minute),
			Error: `config: routes.claude-sonnet.targets[1].provider: unknown provider "bedrok" (parameter /llmgw/prod/config/90-incident, line 1, column 42)`}}
	return Options{
		Config: func() *config.Config { return cfg },
		Breaker: func(target string) breaker.Snapshot {
			switch target {
			case "anthropic/claude-sonnet-4-5":
				return breaker.Snapshot{State: breaker.Open, ErrorRate: 0.8, Requests: 20, Failures: 16, Reason: "error_rate", OpenUntil: seedNow.Add(8 * time.Second)}
			case "bedrock/us.anthropic.claude-sonnet-4-5-20250929-v1:0":
				return breaker.Snapshot{State: breaker.HalfOpen, Requests: 4, Failures: 2, Reason: "probing"}
			}
			return breaker.Snapshot{State: breaker.Closed, Requests: 40}
		},
		Keys: func(provider, model string) []keyledger.Status {
			switch provider {
			case "openai":
				return []keyledger.Status{{Fingerprint: "openai#1-3f9a", Available: true},
					{Fingerprint: "openai#2-b71c", Reason: "rate_limited", UnavailableUntil: seedNow.Add(20 * time.Second)}}
			case "anthropic":
				return []keyledger.Status{{Fingerprint: "anthropic#1-c0de", Available: true}}
			}
			return nil
		},
		Spend: func(ctx context.Context, teams []string, day time.Time) (map[string]TeamSpend, error) {
			return map[string]TeamSpend{"search": {CostUSD: 41.3, Tags: map[string]float64{"checkout": 10.4}, AsOf: seedNow.Add(-time.Minute)},
				"ops": {CostUSD: 3.2}}, nil
		},
		Version:    func() ConfigState { return version },
		Recent:     rec,
		ConfigPath: "/llmgw/prod/config/",
		Now:        func() time.Time { return seedNow },
	}
}

// adminAs puts a caller in the request context, as the server front does.
func adminAs(h http.Handler, c *exchange.Caller) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if c != nil {
			r = r.WithContext(exchange.WithCaller(r.Context(), c))
		}
		h.ServeHTTP(w, r)
	})
}

func TestSnapshotOfTheSeededFleet(t *testing.T) {
	snap := Build(context.Background(), seededFleet(t))
	if len(snap.Routes) != 2 || snap.Routes[0].Name != "claude-sonnet" || len(snap.Routes[0].Targets) != 3 || len(snap.Routes[1].Targets) != 4 {
		t.Fatalf("routes %+v", snap.Routes)
	}
	a := snap.Routes[0].Targets[0]
	if a.Breaker.State != breaker.Open || a.Recent.Errors["overloaded"] != 3 || a.Recent.Errors["timeout"] != 1 || a.Recent.Attempts != 5 {
		t.Errorf("anthropic target %+v", a)
	}
	o := snap.Routes[0].Targets[2]
	if o.Recent.TTFTP50Ms != 420 || o.Recent.TTFTP95Ms != 1200 || o.Recent.TTFTSamples != 5 {
		t.Errorf("openai ttft %+v", o.Recent)
	}
	// The spliced chain's targets are edited in their own route: only the
	// pull command is offered in the route that references it.
	if sp := snap.Routes[1].Targets[1]; len(sp.Commands) != 1 || sp.Commands[0].Action != "pull" {
		t.Errorf("spliced target's commands %+v", sp.Commands)
	}
	var openai ProviderState
	for _, p := range snap.Providers {
		if p.ID == "openai" {
			openai = p
		}
	}
	if openai.Available != 1 || len(openai.Keys) != 4 { // two keys for each of two models
		t.Errorf("openai pool %+v", openai)
	}
	if len(snap.Teams) != 2 || snap.Teams[1].Name != "search" || snap.Teams[1].SpentUSD != 41.3 || snap.Teams[1].BudgetUSD != 50 ||
		snap.Teams[1].Tags[0].SpentUSD != 10.4 || snap.Teams[1].Tags[0].BudgetUSD != 10 {
		t.Errorf("teams %+v", snap.Teams)
	}
	if snap.Config.Version == "" || snap.Config.LastFailed == nil || !strings.Contains(snap.Config.LastFailed.Error, "bedrok") {
		t.Errorf("config %+v", snap.Config)
	}
}

func TestDataIsForAdminsOnly(t *testing.T) {
	o := seededFleet(t)
	for _, tc := range []struct {
		name   string
		caller *exchange.Caller
		want   int
	}{
		{"admin team", &exchange.Caller{Team: "ops", KeyID: "k1", Admin: true}, 200},
		{"other team", &exchange.Caller{Team: "search", KeyID: "k1"}, 403},
		{"anonymous where teams exist", &exchange.Caller{}, 403},
		{"no caller", nil, 403},
	} {
		w := &recorder{h: http.Header{}}
		r, _ := http.NewRequest(http.MethodGet, DataPath, nil)
		adminAs(Handler(o), tc.caller).ServeHTTP(w, r)
		if w.code != tc.want {
			t.Errorf("%s: %d, want %d: %s", tc.name, w.code, tc.want, w.body.String())
		}
		if tc.want == 403 && (!strings.Contains(w.body.String(), `"code":"admin_required"`) || strings.Contains(w.body.String(), "claude")) {
			t.Errorf("%s: refusal %s", tc.name, w.body.String())
		}
	}
	cfg, _ := config.Parse([]byte("providers: {p: {kind: fake}}\nroutes: {m: {targets: [{provider: p, model: x}]}}\n"))
	local := o
	local.Config = func() *config.Config { return cfg }
	w := &recorder{h: http.Header{}}
	r, _ := http.NewRequest(http.MethodGet, DataPath, nil)
	adminAs(Handler(local), &exchange.Caller{}).ServeHTTP(w, r)
	if w.code != 200 {
		t.Errorf("the anonymous caller of a gateway without teams (local, loopback only): %d", w.code)
	}
}

type recorder struct {
	h    http.Header
	code int
	body strings.Builder
}

func (r *recorder) Header() http.Header { return r.h }
func (r *recorder) WriteHeader(c int) {
	if r.code == 0 {
		r.code = c
	}
}
func (r *recorder) Write(b []byte) (int, error) {
	if r.code == 0 {
		r.code = 200
	}
	return r.body.Write(b)
}
