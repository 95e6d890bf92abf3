package teams_test

import (
	"context"
	"testing"
	"time"

	"github.com/llmgw/llmgw/pkg/config"
	"github.com/llmgw/llmgw/pkg/exchange"
	"github.com/llmgw/llmgw/pkg/store"
	"github.com/llmgw/llmgw/pkg/store/storetest"
	"github.com/llmgw/llmgw/pkg/teams"
	"github.com/llmgw/llmgw/pkg/usage/usagetest"
)

// benchAdmit measures one request's admission and settlement with every
// team limit set (minute, hour and day counters), from one instance: the
// leases make almost every admission local (see BenchmarkHotTeam for the
// writes).
func benchAdmit(b *testing.B, s store.Store, clk *usagetest.Clock) {
	cfg := limitsConfigB(b)
	lim := teams.NewLimiter(s, func() *config.Config { return cfg }, nil)
	lim.Now = clk.Now
	a := admissionB(b, cfg)
	rec := &exchange.Record{Target: "up/up-model", Provider: "up", InputTokens: 100, OutputTokens: 200}
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		settle, err := lim.Admit(context.Background(), a)
		if err != nil {
			b.Fatal(err)
		}
		settle(context.Background(), rec)
	}
}

func limitsConfigB(b *testing.B) *config.Config {
	cfg, err := config.Parse([]byte(limitsYAMLWith("limits: {requests_per_minute: 100000000, tokens_per_minute: 100000000000, cost_per_hour_usd: 1000000, cost_per_day_usd: 1000000}")))
	if err != nil {
		b.Fatal(err)
	}
	return cfg
}

func BenchmarkAdmitSettleEmbedded(b *testing.B) {
	clk := usagetest.NewClock(tLimits)
	benchAdmit(b, openEmbedded(b, clk.Now), clk)
}

func BenchmarkAdmitSettleDynalite(b *testing.B) {
	clk := usagetest.NewClock(time.Now())
	endpoint := storetest.StartDynalite(b)
	benchAdmit(b, storetest.NewDynamoStore(b, endpoint), clk)
}
