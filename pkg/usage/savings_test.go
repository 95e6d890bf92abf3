package usage_test

import (
	"strings"
	"testing"
	"time"

	"github.com/llmgw/llmgw/pkg/store/embedded"
	"github.com/llmgw/llmgw/pkg/usage"
	"github.com/llmgw/llmgw/pkg/usage/usagetest"
)

// Response-cache hits are counted per team with the spend they saved, in
// the rollup, the report and the cost table; a hit itself costs nothing.
func TestRollupAndCostTableShowCacheSavings(t *testing.T) {
	clk := usagetest.NewClock(t0)
	s := embedded.OpenMemory(embedded.WithClock(clk.Now))
	defer s.Close()
	cfg := cfgFunc(t, testConfig)
	rec := usage.NewRecorder(s, cfg, nil)
	miss := sampleRecord("search", "req_miss", t0)
	miss.ResponseCache = "miss"
	if err := rec.Write(ctxT(t), miss); err != nil {
		t.Fatal(err)
	}
	for i, id := range []string{"req_hit1", "req_hit2", "req_hit3"} {
		hit := sampleRecord("search", id, t0.Add(time.Duration(i+1)*time.Second))
		hit.Target, hit.Provider, hit.InputTokens, hit.OutputTokens = "", "", 0, 0
		hit.ResponseCache, hit.SavedCostUSD = "hit", 0.0012
		if err := rec.Write(ctxT(t), hit); err != nil {
			t.Fatal(err)
		}
	}
	roller := usage.NewRoller(s, cfg)
	roller.Now = clk.Now
	if _, err := roller.Run(ctxT(t), t0, t0); err != nil {
		t.Fatal(err)
	}
	rep, err := usage.BuildReport(ctxT(t), s, []string{"search"}, t0, t0, false)
	if err != nil {
		t.Fatal(err)
	}
	tr := rep.Teams[0]
	if tr.Requests != 4 || tr.CacheHits != 3 || tr.SavedNanoUSD != 3_600_000 || tr.CostNanoUSD != usage.NanoUSD(usage.Cost(cfg(), miss)) ||
		tr.Routes["gpt-4.1-mini"].CacheHits != 3 || rep.Total.SavedNanoUSD != 3_600_000 {
		t.Fatalf("report %+v (routes %+v)", tr.Totals, tr.Routes["gpt-4.1-mini"])
	}
	var b strings.Builder
	if err := rep.WriteTable(&b, false); err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(b.String(), "\n")
	if !strings.Contains(lines[2], "CACHE HITS") || !strings.Contains(lines[2], "SAVED USD") ||
		!strings.HasSuffix(strings.Join(strings.Fields(lines[3]), " "), "100.0% 3 0.0036 0 0.0000 0.0000") {
		t.Fatalf("cost table:\n%s", b.String())
	}
}
