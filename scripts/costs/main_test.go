package main

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/llmgw/llmgw/pkg/cmdhelp/cmdhelptest"
	"github.com/llmgw/llmgw/pkg/config"
	"github.com/llmgw/llmgw/pkg/deployment"
	"github.com/llmgw/llmgw/pkg/exchange"
	"github.com/llmgw/llmgw/pkg/store/embedded"
	"github.com/llmgw/llmgw/pkg/teams"
	"github.com/llmgw/llmgw/pkg/usage"
)

var now = time.Date(2026, 11, 20, 12, 0, 0, 0, time.UTC)

// setup writes usage for three teams into an embedded store file: ads
// spends most, then search, then anonymous callers.
func setup(t *testing.T, adminHash string) (state, cfgFile string, cfg *config.Config) {
	dir := t.TempDir()
	state, cfgFile = filepath.Join(dir, "state.db"), filepath.Join(dir, "gw.yaml")
	yaml := "providers: {a: {kind: fake}}\nroutes: {m: {targets: [{provider: a, model: x}]}}\n" +
		"teams: {search: {}, ads: {}, ops: {admin: true, keys: [{id: k1, sha256: \"" + adminHash + "\"}]}}\n"
	if err := os.WriteFile(cfgFile, []byte(yaml), 0o600); err != nil {
		t.Fatal(err)
	}
	cfg, err := config.Parse([]byte(yaml))
	if err != nil {
		t.Fatal(err)
	}
	s, err := embedded.Open(state)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	rec := usage.NewRecorder(s, func() *config.Config { return cfg }, nil)
	day := time.Date(2026, 11, 3, 9, 0, 0, 0, time.UTC)
	for i, r := range []struct {
		team string
		cost float64
	}{{"search", 1.25}, {"ads", 3}, {"ads", 4.5}, {"", 0.01}, {"search", 0.75}} {
		err := rec.Write(context.Background(), &exchange.Record{RequestID: "r" + string(rune('a'+i)), Time: day.Add(time.Duration(i) * time.Hour),
			Team: r.team, Route: "m", Tag: "checkout", Outcome: "ok", InputTokens: 1000, OutputTokens: 100, CostUSD: r.cost})
		if err != nil {
			t.Fatal(err)
		}
	}
	return state, cfgFile, cfg
}

func TestCostTableFromTheStore(t *testing.T) {
	state, cfgFile, _ := setup(t, strings.Repeat("a", 64))
	var b bytes.Buffer
	// Without -refresh there are no rollups yet.
	if err := run(context.Background(), []string{"-state", state, "-config", cfgFile}, &b, now); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(b.String(), "no usage in this range") {
		t.Fatalf("before the rollup:\n%s", b.String())
	}
	b.Reset()
	if err := run(context.Background(), []string{"-state", state, "-config", cfgFile, "-refresh", "-detail"}, &b, now); err != nil {
		t.Fatal(err)
	}
	out := b.String()
	t.Logf("\n%s", out)
	ads, search, anon := strings.Index(out, "\n  ads "), strings.Index(out, "\n  search "), strings.Index(out, "\n  anonymous ")
	if !strings.Contains(out, "\n    route m ") {
		t.Fatalf("detail rows not indented:\n%s", out)
	}
	if ads < 0 || search < ads || anon < search {
		t.Fatalf("not sorted by cost:\n%s", out)
	}
	for _, want := range []string{"2026-11-01 to 2026-11-20", "7.5000", "2.0000", "0.0100", "9.5100", "route m", "tag checkout"} {
		if !strings.Contains(out, want) {
			t.Fatalf("table lacks %q:\n%s", want, out)
		}
	}
	b.Reset()
	if err := run(context.Background(), []string{"-state", state, "-config", cfgFile, "-json", "-from", "2026-11-03", "-to", "2026-11-03"}, &b, now); err != nil {
		t.Fatal(err)
	}
	var rep usage.Report
	if err := json.Unmarshal(b.Bytes(), &rep); err != nil || rep.Total.Requests != 5 || rep.Teams[0].Team != "ads" {
		t.Fatalf("json: %v %s", err, b.String())
	}
	for _, bad := range [][]string{{"-state", state, "-from", "2026-11-05", "-to", "2026-11-01"}, {"-state", filepath.Join(t.TempDir(), "none.db")}, {"-from", "nov"}} {
		if err := run(context.Background(), bad, &b, now); err == nil {
			t.Errorf("%v accepted", bad)
		}
	}
}

func TestCostTableThroughTheGateway(t *testing.T) {
	key, hash, _ := teams.NewKey()
	state, _, cfg := setup(t, hash)
	s, err := embedded.Open(state)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	current := func() *config.Config { return cfg }
	auth := teams.NewAuthenticator(current, nil)
	srv := httptest.NewServer(usage.NewHandler(s, current, usage.HandlerOptions{Viewer: auth.UsageViewer, Roller: usage.NewRoller(s, current),
		Now: func() time.Time { return now }}))
	defer srv.Close()
	t.Setenv(deployment.EnvKey, key)
	var b bytes.Buffer
	if err := run(context.Background(), []string{"-url", srv.URL, "-refresh"}, &b, now); err != nil {
		t.Fatal(err)
	}
	if out := b.String(); strings.Index(out, "\n  ads ") > strings.Index(out, "\n  search ") || !strings.Contains(out, "9.5100") {
		t.Fatalf("through the gateway:\n%s", out)
	}
	t.Setenv(deployment.EnvKey, "llmgw_wrong")
	if err := run(context.Background(), []string{"-url", srv.URL}, &b, now); err == nil || !strings.Contains(err.Error(), "401") {
		t.Fatalf("wrong key: %v", err)
	}
}

func TestMain(m *testing.M) {
	cmdhelptest.MainIfChild(main)
	os.Exit(m.Run())
}

// TestHelp: -h explains both ways of reading, every flag and every LLMGW_*
// variable costs reads, and exits 0.
func TestHelp(t *testing.T) {
	want := []string{"costs - print the per-team cost table", "From the store (default)", "Through a gateway (-url)",
		"-from", "-to", "-refresh", "-detail", "-json", "-url", "-config", "-store", "-state", "-table"}
	cmdhelptest.CheckHelp(t, append(want, cmdhelptest.EnvNames(t, ".", "../../pkg/usage/usagecli/usagecli.go")...)...)
	if _, errOut, code := cmdhelptest.Run(t, nil, "-bogus"); code != 2 || !strings.Contains(errOut, "-bogus") {
		t.Errorf("bad flag: exit %d, stderr %q", code, errOut)
	}
	if _, errOut, code := cmdhelptest.Run(t, []string{"LLMGW_KEY="}, "-url", "http://127.0.0.1:1"); code != 1 || !strings.Contains(errOut, "$LLMGW_KEY") {
		t.Errorf("no key: exit %d, stderr %q", code, errOut)
	}
}
