package ssmconfig_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	awsconfig "github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/service/ssm"

	"github.com/llmgw/llmgw/pkg/config"
	"github.com/llmgw/llmgw/pkg/ssmconfig"
	"github.com/llmgw/llmgw/pkg/ssmconfig/ssmtest"
)

const base = `
providers:
  a: {kind: fake}
  b: {kind: openai, base_url: "https://api.openai.com/v1", keys: [{ssm: /llmgw/test/keys/b/1}]}
routes:
  chat: {targets: [{provider: a, model: x}, {provider: b, model: gpt-4.1}]}
`

// client is the real SDK client, pointed at the fake the standard way.
func client(t *testing.T, srv *ssmtest.Server) *ssm.Client {
	t.Setenv("AWS_ENDPOINT_URL_SSM", srv.URL)
	t.Setenv("AWS_REGION", "us-east-1")
	t.Setenv("AWS_ACCESS_KEY_ID", "AKIDTEST")
	t.Setenv("AWS_SECRET_ACCESS_KEY", "secret")
	cfg, err := awsconfig.LoadDefaultConfig(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	return ssm.NewFromConfig(cfg)
}

func TestLoadMergesParametersInNameOrderAcrossPages(t *testing.T) {
	srv := ssmtest.New()
	defer srv.Close()
	srv.Put("/llmgw/test/config/00-base", "String", base)
	// 12 overlay parameters: more than one GetParametersByPath page.
	for i := 1; i <= 12; i++ {
		srv.Put(fmt.Sprintf("/llmgw/test/config/%02d-route", 10+i), "String",
			fmt.Sprintf("routes:\n  r%d: {targets: [{provider: a, model: m%d}]}\n", i, i))
	}
	// A later document overrides one field of an earlier one, keeping the rest.
	srv.Put("/llmgw/test/config/99-incident", "String", "routes:\n  chat: {first_token_timeout: 3s}\n")
	l := &ssmconfig.Loader{API: client(t, srv), Path: "/llmgw/test/config/"}
	cfg, changed, err := l.Load(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if !changed || len(cfg.Routes) != 13 {
		t.Fatalf("routes = %v", cfg.RouteNames())
	}
	r := cfg.Routes["chat"]
	if r.FirstTokenTimeout.D() != 3*time.Second || len(r.Targets) != 2 {
		t.Errorf("merge lost or kept the wrong fields: %+v", r)
	}
	if srv.Count("GetParametersByPath") < 2 {
		t.Errorf("pagination not exercised: %d calls", srv.Count("GetParametersByPath"))
	}
	if _, changed, _ := l.Load(context.Background()); changed {
		t.Error("unchanged parameters reported as changed")
	}
}

func TestRefreshKeepsLastGoodConfigOnBadEditOrSSMError(t *testing.T) {
	srv := ssmtest.New()
	defer srv.Close()
	srv.Put("/llmgw/test/config/00-base", "String", base)
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	var logs bytes.Buffer
	var errs atomic.Int32
	l := &ssmconfig.Loader{API: client(t, srv), Path: "/llmgw/test/config/", Refresh: 15 * time.Second,
		Now: func() time.Time { return now }, Log: slog.New(slog.NewJSONHandler(&logs, nil)),
		OnError: func(error) { errs.Add(1) }}
	var current *config.Config
	apply := func(_ context.Context, c *config.Config) error { current = c; return nil }
	l.RefreshIfStale(context.Background(), apply)
	if current == nil {
		t.Fatal("cold start did not load")
	}
	good := current

	// An invalid edit: unknown provider in a route.
	srv.Put("/llmgw/test/config/50-bad", "String", "routes:\n  chat: {targets: [{provider: ghost, model: x}]}\n")
	now = now.Add(10 * time.Second)
	l.RefreshIfStale(context.Background(), apply)
	if srv.Count("GetParametersByPath") != 1 {
		t.Fatal("reloaded before the refresh period")
	}
	now = now.Add(10 * time.Second)
	l.RefreshIfStale(context.Background(), apply)
	if current != good || errs.Load() != 1 || !strings.Contains(logs.String(), "keeping the last good config") || !strings.Contains(logs.String(), "ghost") {
		t.Fatalf("bad edit applied or not reported: errs=%d logs=%s", errs.Load(), logs.String())
	}

	// SSM down: still the last good config.
	srv.Fail.Store(true)
	now = now.Add(20 * time.Second)
	l.RefreshIfStale(context.Background(), apply)
	if current != good || errs.Load() != 2 {
		t.Fatalf("SSM error replaced the config (errs=%d)", errs.Load())
	}

	// A valid edit takes effect within one refresh period.
	srv.Fail.Store(false)
	srv.Put("/llmgw/test/config/50-bad", "String", "routes:\n  chat: {targets: [{provider: b, model: gpt-4.1}]}\n")
	now = now.Add(16 * time.Second)
	l.RefreshIfStale(context.Background(), apply)
	if current == good || current.Routes["chat"].Targets[0].Provider != "b" {
		t.Fatalf("valid edit not applied")
	}
}

func TestSecureStringKeysAreDecryptedCachedAndNeverLogged(t *testing.T) {
	const secret = "sk-SENTINEL-from-ssm-0123456789"
	srv := ssmtest.New()
	defer srv.Close()
	srv.Put("/llmgw/test/keys/b/1", "SecureString", secret)
	var logs bytes.Buffer
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	l := &ssmconfig.Loader{API: client(t, srv), Path: "/llmgw/test/config/", Log: slog.New(slog.NewJSONHandler(&logs, nil)),
		Now: func() time.Time { return now }}
	for i := 0; i < 3; i++ {
		v, ok, err := l.ResolveKey(context.Background(), config.KeyRef{SSM: "/llmgw/test/keys/b/1"}, os.Getenv)
		if err != nil || !ok || v != secret {
			t.Fatalf("resolve = %q %v %v", v, ok, err)
		}
	}
	if srv.Count("GetParameter") != 1 {
		t.Errorf("key not cached: %d calls", srv.Count("GetParameter"))
	}
	now = now.Add(6 * time.Minute)
	l.ResolveKey(context.Background(), config.KeyRef{SSM: "/llmgw/test/keys/b/1"}, os.Getenv)
	if srv.Count("GetParameter") != 2 {
		t.Errorf("key cache never expires: rotation would not be picked up")
	}
	_, _, err := l.ResolveKey(context.Background(), config.KeyRef{SSM: "/llmgw/test/keys/missing"}, os.Getenv)
	if err == nil || strings.Contains(err.Error(), secret) {
		t.Errorf("missing key: %v", err)
	}
	if strings.Contains(logs.String(), "SENTINEL") {
		t.Error("key logged")
	}
}

func TestMergeReplacesListsAndMergesMaps(t *testing.T) {
	out, err := ssmconfig.Merge([]string{"a: {x: 1, l: [1, 2]}\nb: 2\n", "a: {y: 3, l: [9]}\n"})
	if err != nil {
		t.Fatal(err)
	}
	s := string(out)
	if !strings.Contains(s, "x: 1") || !strings.Contains(s, `"y": 3`) || !strings.Contains(s, "- 9") || strings.Contains(s, "- 2") || !strings.Contains(s, "b: 2") {
		t.Errorf("merged = %s", s)
	}
}

// TestErrorsNameTheParameterAndThePlaceInIt: every kind of config error,
// in a config merged from several parameters, names the parameter holding
// the offending value and the line and column within that value.
func TestErrorsNameTheParameterAndThePlaceInIt(t *testing.T) {
	const p = "/llmgw/test/config/"
	cases := []struct {
		name   string
		params map[string]string
		want   string
	}{
		{"validation, in a later parameter", map[string]string{"00-base": base, "50-teams": "teams:\n  search:\n    keys: [{id: k1, sha256: nothex}]\n"},
			"config parameter " + p + "50-teams: teams.search.keys[0].sha256: not 64 hex digits (put the SHA-256 of the key here, never the key; scripts/newkey prints it); the value is not shown (line 3, column 29)"},
		{"validation, in the base under an overlay", map[string]string{"00-base": base + "  fast: {attempts: 11, targets: [{provider: a, model: x}]}\n",
			"99-incident": "routes:\n  chat: {first_token_timeout: 3s}\n"},
			"config parameter " + p + "00-base: routes.fast.attempts: 11 is not between 1 and 10 (line 7, column 20)"},
		{"a list replaced by a later parameter", map[string]string{"00-base": base, "50-bad": "# an incident edit\nroutes:\n  chat:\n    targets: [{provider: a, model: x}, {provider: ghost, model: x}]\n"},
			"config parameter " + p + "50-bad: routes.chat.targets[1].provider: unknown provider \"ghost\" (providers: a, b) (line 4, column 51)"},
		{"unknown field", map[string]string{"00-base": base, "10-defaults": "defaults:\n  attempt: 3\n"},
			"config parameter " + p + "10-defaults: defaults.attempt: unknown field \"attempt\", did you mean \"attempts\"? (line 2, column 3)"},
		{"bad type", map[string]string{"00-base": base, "10-defaults": "defaults: {attempts: three}\n"},
			"config parameter " + p + "10-defaults: defaults.attempts: expected an integer, got string \"three\" (line 1, column 22)"},
		{"bad duration", map[string]string{"00-base": base, "99-incident": "routes:\n  chat: {first_token_timeout: soon}\n"},
			"config parameter " + p + "99-incident: routes.chat.first_token_timeout: \"soon\" is not a duration; write it like \"10s\", \"1.5s\" or \"250ms\" (line 2, column 31)"},
		{"a mapping merged from two parameters: the later one", map[string]string{"00-base": base, "99-incident": "routes:\n  chat: {targets: [{route: chat}]}\n"},
			"config parameter " + p + "99-incident: routes.chat: route references form a cycle: chat -> chat (line 2, column 9)"},
		{"missing everywhere", map[string]string{"00-providers": "providers: {a: {kind: fake}}\n", "10-teams": "teams: {}\n"},
			"config parameters under " + p + ": routes: at least one route is required"},
		{"YAML syntax in one parameter", map[string]string{"00-base": base, "50-teams": "teams:\n  search: {keys: [}\n"},
			"config parameter " + p + "50-teams: YAML syntax: did not find expected node content (line 2)"},
		{"a key given twice in one parameter", map[string]string{"00-base": base, "50-teams": "teams:\n  t: {}\n  t: {}\n"},
			"config parameter " + p + "50-teams: teams.t: key \"t\" is given twice (first at line 2) (line 3, column 3)"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			srv := ssmtest.New()
			defer srv.Close()
			for name, v := range c.params {
				srv.Put(p+name, "String", v)
			}
			l := &ssmconfig.Loader{API: client(t, srv), Path: p}
			_, _, err := l.Load(context.Background())
			if err == nil || err.Error() != c.want {
				t.Fatalf("got  %v\nwant %s", err, c.want)
			}
			var ce *config.Error
			if !errors.As(err, &ce) {
				t.Fatalf("%T is not a *config.Error", err)
			}
		})
	}
}

// TestVariantIsEditableThroughSSM: a per-target prompt variant is config
// like the rest: an SSM parameter sets it, a later edit changes it.
func TestVariantIsEditableThroughSSM(t *testing.T) {
	srv := ssmtest.New()
	defer srv.Close()
	srv.Put("/llmgw/test/config/00-base", "String", base)
	srv.Put("/llmgw/test/config/60-variants", "String",
		"routes:\n  chat:\n    targets:\n      - {provider: a, model: x, variant: {name: terse-v1, system_prefix: \"Be terse. \", max_tokens_cap: 256}}\n")
	l := &ssmconfig.Loader{API: client(t, srv), Path: "/llmgw/test/config/"}
	cfg, _, err := l.Load(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	steps, _, _ := cfg.Chain("chat")
	if v := steps[0].Variant; v == nil || v.Name != "terse-v1" || v.SystemPrefix != "Be terse. " || v.MaxTokensCap != 256 {
		t.Fatalf("variant from SSM = %+v", v)
	}
	srv.Put("/llmgw/test/config/60-variants", "String",
		"routes:\n  chat:\n    targets:\n      - {provider: a, model: x, variant: {name: terse-v2, system: \"Answer in one line.\"}}\n")
	cfg, changed, err := l.Load(context.Background())
	if err != nil || !changed {
		t.Fatalf("edit not loaded: changed %v err %v", changed, err)
	}
	steps, _, _ = cfg.Chain("chat")
	if v := steps[0].Variant; v == nil || v.Name != "terse-v2" || v.System != "Answer in one line." || v.SystemPrefix != "" {
		t.Errorf("edited variant = %+v", v)
	}
}
