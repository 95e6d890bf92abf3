package usage_test

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/llmgw/llmgw/pkg/usage"
	"github.com/llmgw/llmgw/pkg/usage/usagetest"
)

// testViewer reads the caller from test headers (the gateway uses
// teams.UsageViewer).
func testViewer(r *http.Request) (usage.Viewer, bool) {
	team := r.Header.Get("X-Test-Team")
	return usage.Viewer{Team: team, Admin: r.Header.Get("X-Test-Admin") == "1"}, team != ""
}

func testHandler(t *testing.T, open usagetest.Opener) {
	clk := usagetest.NewClock(time.Date(2026, 11, 2, 12, 0, 0, 0, time.UTC))
	s := open(t, clk.Now)
	cfg := cfgFunc(t, testConfig)
	rec := usage.NewRecorder(s, cfg, nil)
	write := func(team, id string, at time.Time, cost float64) {
		r := sampleRecord(team, id, at)
		r.CostUSD = cost
		if err := rec.Write(ctxT(t), r); err != nil {
			t.Fatal(err)
		}
	}
	d1 := time.Date(2026, 11, 1, 10, 0, 0, 0, time.UTC)
	write("search", "a1", d1, 1.5)
	write("search", "a2", d1.AddDate(0, 0, 1), 0.5)
	write("ads", "b1", d1, 7)
	write("", "c1", d1, 0.25)
	roller := usage.NewRoller(s, cfg)
	roller.Now = clk.Now
	if _, err := roller.Run(ctxT(t), d1, d1); err != nil { // day 2 not rolled up yet
		t.Fatal(err)
	}
	srv := httptest.NewServer(usage.NewHandler(s, cfg, usage.HandlerOptions{Viewer: testViewer, Roller: roller, Now: clk.Now}))
	defer srv.Close()

	get := func(query, team string, admin bool) (int, usage.Report, string) {
		req, _ := http.NewRequest(http.MethodGet, srv.URL+"/v1/usage"+query, nil)
		if team != "" {
			req.Header.Set("X-Test-Team", team)
		}
		if admin {
			req.Header.Set("X-Test-Admin", "1")
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		var raw json.RawMessage
		json.NewDecoder(resp.Body).Decode(&raw)
		var rep usage.Report
		json.Unmarshal(raw, &rep)
		return resp.StatusCode, rep, string(raw)
	}
	teamsOf := func(rep usage.Report) string {
		var names []string
		for _, tr := range rep.Teams {
			names = append(names, tr.Team)
		}
		return strings.Join(names, ",")
	}

	// A team sees its own usage only.
	code, rep, body := get("?from=2026-11-01&to=2026-11-02", "search", false)
	if code != 200 || teamsOf(rep) != "search" || rep.Teams[0].Requests != 1 || rep.Teams[0].CostUSD != 1.5 {
		t.Fatalf("team view: %d %s", code, body)
	}
	if code, _, body := get("?team=ads", "search", false); code != 403 || !strings.Contains(body, `"type":"permission"`) {
		t.Fatalf("other team: %d %s", code, body)
	}
	// An admin sees every team, highest cost first, and the total.
	code, rep, body = get("?from=2026-11-01&to=2026-11-02", "ops", true)
	if code != 200 || teamsOf(rep) != "ads,search,anonymous" || rep.Total.CostUSD != 8.75 || rep.Total.Requests != 3 {
		t.Fatalf("admin view: %d %s", code, body)
	}
	if code, rep, _ := get("?from=2026-11-01&to=2026-11-01&team=ads", "ops", true); code != 200 || teamsOf(rep) != "ads" {
		t.Fatalf("admin team=ads: %d %v", code, teamsOf(rep))
	}
	if code, _, _ := get("?team=nobody", "ops", true); code != 404 {
		t.Fatalf("unknown team: %d", code)
	}
	// Refresh (admin only) recomputes before reading: day 2 appears.
	if code, _, _ := get("?from=2026-11-01&to=2026-11-02&refresh=true", "search", false); code != 403 {
		t.Fatalf("refresh by a team key: %d", code)
	}
	code, rep, body = get("?from=2026-11-01&to=2026-11-02&team=search&refresh=true", "ops", true)
	if code != 200 || rep.Teams[0].Requests != 2 || len(rep.Teams[0].Days) != 2 || rep.Teams[0].CostUSD != 2 {
		t.Fatalf("refresh: %d %s", code, body)
	}
	// Defaults: the current month to today.
	if _, rep, _ := get("", "search", false); rep.From != "2026-11-01" || rep.To != "2026-11-02" {
		t.Fatalf("default range %s..%s", rep.From, rep.To)
	}
	for _, q := range []string{"?from=yesterday", "?from=2026-11-05&to=2026-11-01", "?from=2020-01-01&to=2026-11-01"} {
		if code, _, body := get(q, "search", false); code != 400 || !strings.Contains(body, `"type":"invalid_request"`) {
			t.Fatalf("%s: %d %s", q, code, body)
		}
	}
	if code, _, body := get("", "", false); code != 401 || !strings.Contains(body, `"code":"invalid_api_key"`) {
		t.Fatalf("no viewer: %d %s", code, body)
	}
	resp, err := http.Post(srv.URL+"/v1/usage", "application/json", nil)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 405 {
		t.Fatalf("POST: %d", resp.StatusCode)
	}
}

func TestWriteTableSortedByCost(t *testing.T) {
	rep := &usage.Report{From: "2026-11-01", To: "2026-11-30", Teams: []usage.TeamReport{
		{Team: "ads", Totals: usage.Totals{Requests: 1234567, CostNanoUSD: 7_500_000_000}},
		{Team: "search", Totals: usage.Totals{Requests: 3, CostNanoUSD: 2_500_000_000},
			Routes: map[string]*usage.Totals{"cheap": {Requests: 2, CostNanoUSD: 1}, "dear": {Requests: 1, CostNanoUSD: 2_499_999_999}}},
	}}
	for _, tr := range rep.Teams {
		rep.Total.Merge(tr.Totals)
	}
	var b strings.Builder
	if err := rep.WriteTable(&b, true); err != nil {
		t.Fatal(err)
	}
	out := b.String()
	for _, want := range []string{"1,234,567", "7.5000", "75.0%", "25.0%", "10.0000", "TOTAL"} {
		if !strings.Contains(out, want) {
			t.Fatalf("table lacks %q:\n%s", want, out)
		}
	}
	if strings.Index(out, "ads") > strings.Index(out, "search") || strings.Index(out, "route dear") > strings.Index(out, "route cheap") {
		t.Fatalf("not sorted by cost:\n%s", out)
	}
}
