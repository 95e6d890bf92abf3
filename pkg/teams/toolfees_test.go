package teams_test

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/llmgw/llmgw/pkg/config"
	"github.com/llmgw/llmgw/pkg/exchange"
	"github.com/llmgw/llmgw/pkg/store"
	"github.com/llmgw/llmgw/pkg/teams"
	"github.com/llmgw/llmgw/pkg/usage/usagetest"
)

// TestEstimateReservesServerToolFees: a declared server-side tool billed
// per call reserves its max_uses calls (else teams.DefaultToolUses) at the
// target's per-call price, on top of the tokens.
func TestEstimateReservesServerToolFees(t *testing.T) {
	clk := usagetest.NewClock(tLimits)
	s := openEmbedded(t, clk.Now)
	y := strings.Replace(limitsYAMLWith("limits: {cost_per_day_usd: 100}"), `"up/up-model": {input: 1, output: 2}`,
		`"up/up-model": {input: 1, output: 2, tool_calls: {web_search: 0.01, web_fetch: 0.001}}`, 1)
	cfg, err := config.Parse([]byte(y))
	if err != nil {
		t.Fatal(err)
	}
	lim := teams.NewLimiter(s, func() *config.Config { return cfg }, nil)
	lim.Now = clk.Now
	a := admission(t, cfg, "search", "", body400)
	a.Prompt.Tools = append(a.Prompt.Tools,
		exchange.Tool{Kind: exchange.ToolBuiltin, Type: "web_search_20250305", Name: "web_search", Raw: json.RawMessage(`{"type":"web_search_20250305","name":"web_search","max_uses":3}`)},
		exchange.Tool{Kind: exchange.ToolBuiltin, Type: "web_fetch_20250910", Name: "web_fetch", Raw: json.RawMessage(`{"type":"web_fetch_20250910","name":"web_fetch"}`)},
		exchange.Tool{Kind: exchange.ToolBuiltin, Type: "bash_20250124", Name: "bash", Raw: json.RawMessage(`{"type":"bash_20250124","name":"bash"}`)})
	if _, err := lim.Admit(ctxT(t), a); err != nil {
		t.Fatal(err)
	}
	flush(t, lim)
	// Tokens as body400 (the tools' definitions count as a few dozen more input
	// tokens), 3 searches x 0.01 = 30,000,000 nano-USD, 10 fetches x
	// 0.001 = 10,000,000; bash bills no per-call fee.
	day := time.Date(2026, 11, 3, 0, 0, 0, 0, time.UTC)
	got := counterValue(t, s, store.BudgetKey("search", "", "day", day), "cost_nano_usd")
	if fees := got - reserve400; fees < 40_000_000 || fees > 40_100_000 {
		t.Fatalf("reserved %v nano-USD, want %d plus 40,000,000 of tool fees", got, reserve400)
	}
	if teams.DefaultToolUses != 10 {
		t.Errorf("DefaultToolUses %d: the docs and this test say 10", teams.DefaultToolUses)
	}
}

// TestEstimateReservesContainerTimeAndGrounding: a declared code-execution
// tool priced per hour reserves one container for the request's whole
// deadline (server.request_timeout, its longest possible charge); a
// declared google_search reserves one grounded prompt and DefaultToolUses
// search queries.
func TestEstimateReservesContainerTimeAndGrounding(t *testing.T) {
	for _, c := range []struct {
		name, price, typ string
		fees             float64 // nano-USD
	}{
		// 20 minutes at $0.6/hour = $0.20.
		{"container", `tool_hours: {code_execution: 0.6}`, "code_execution_20250825", 200_000_000},
		// 1 grounded prompt at $0.035 + 10 queries at $0.014.
		{"grounding", `tool_calls: {grounded_prompt: 0.035, web_search: 0.014}`, "google_search", 175_000_000},
	} {
		clk := usagetest.NewClock(tLimits)
		s := openEmbedded(t, clk.Now)
		y := strings.Replace(limitsYAMLWith("limits: {cost_per_day_usd: 100}"), `"up/up-model": {input: 1, output: 2}`,
			`"up/up-model": {input: 1, output: 2, `+c.price+`}`, 1)
		cfg, err := config.Parse([]byte("server: {request_timeout: 20m}\n" + y))
		if err != nil {
			t.Fatal(err)
		}
		lim := teams.NewLimiter(s, func() *config.Config { return cfg }, nil)
		lim.Now = clk.Now
		a := admission(t, cfg, "search", "", body400)
		a.Prompt.Tools = append(a.Prompt.Tools, exchange.Tool{Kind: exchange.ToolBuiltin, Type: c.typ, Raw: json.RawMessage(`{"type":"` + c.typ + `"}`)})
		if _, err := lim.Admit(ctxT(t), a); err != nil {
			t.Fatal(err)
		}
		flush(t, lim)
		day := time.Date(2026, 11, 3, 0, 0, 0, 0, time.UTC)
		got := counterValue(t, s, store.BudgetKey("search", "", "day", day), "cost_nano_usd")
		if fees := got - reserve400; fees < c.fees || fees > c.fees+100_000 {
			t.Errorf("%s: reserved %v nano-USD, want %d plus %.0f of tool fees", c.name, got, reserve400, c.fees)
		}
	}
}
