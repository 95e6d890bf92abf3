package teams_test

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/llmgw/llmgw/pkg/config"
	"github.com/llmgw/llmgw/pkg/exchange"
	"github.com/llmgw/llmgw/pkg/store"
	"github.com/llmgw/llmgw/pkg/store/dynamo"
	"github.com/llmgw/llmgw/pkg/store/storetest"
	"github.com/llmgw/llmgw/pkg/teams"
)

// hotLimits sets every limit of the team (requests and tokens per minute,
// cost per hour and day, both ceilings) and of a tag (requests per minute,
// cost per day): six counter items per request, none of them binding.
const hotLimits = `limits: {requests_per_minute: 100000000, tokens_per_minute: 100000000000, cost_per_hour_usd: 1000000,
      cost_per_day_usd: 1000000, max_input_tokens: 100000, max_output_tokens: 8192}
    tags: {checkout: {requests_per_minute: 100000000, cost_per_day_usd: 1000000}}`

// BenchmarkHotTeam drives one team with every limit set (six counter
// items a request) as hard as the machine allows, through several limiter
// instances (gateway instances) over one DynamoDB table in dynalite, and
// counts every write request that reaches DynamoDB per item (FaultyAPI,
// below the store: retries and refused conditions included). Metrics:
//
//	req/s            requests admitted and settled per second
//	writes/req       DynamoDB write requests per request (leases taken,
//	                 and the final give-back of every lease)
//	item-writes/s    the most written item's writes per second
//	part-writes/s    writes per second to the team's budget partition
//	                 (budget#<team>: all six items)
//	refused/req      requests refused (the store timing out beyond the
//	                 outage allowance, on an overloaded machine); 0 normally
//
// Sub-benchmarks vary the instances (the workers are spread over them;
// with as many workers as instances each instance serves one request at a
// time, as on Lambda), the pace (rate=0: as fast as it goes) and
// usage.lease.max_requests (1: a lease of exactly each request's
// reservation, the baseline of about one write per item per request).
// With -benchtime Nx, a paced sub-benchmark runs N/rate seconds:
//
//	go test -run '^$' -bench BenchmarkHotTeam -benchtime 10000x ./pkg/teams
func BenchmarkHotTeam(b *testing.B) {
	endpoint := storetest.StartDynalite(b)
	for _, c := range []struct {
		instances, workers, rate, maxRequests int
	}{{1, 32, 0, 1}, {8, 32, 1000, 0}, {256, 256, 1000, 0}, {8, 32, 0, 0}} {
		name := fmt.Sprintf("instances=%d/workers=%d/rate=%d", c.instances, c.workers, c.rate)
		if c.maxRequests > 0 {
			name += fmt.Sprintf("/max_requests=%d", c.maxRequests)
		}
		b.Run(name, func(b *testing.B) {
			api := storetest.NewFaultyAPI(storetest.DynaliteClient(endpoint))
			s := storetest.NewDynamoStoreWithAPI(b, api, dynamo.WithClock(time.Now))
			cfg, err := config.Parse([]byte(limitsYAMLWith(hotLimits)))
			if err != nil {
				b.Fatal(err)
			}
			if c.maxRequests > 0 {
				cfg.Usage.Lease.MaxRequests = c.maxRequests
			}
			lims := make([]*teams.Limiter, c.instances)
			for i := range lims {
				lims[i] = teams.NewLimiter(s, func() *config.Config { return cfg }, nil)
			}
			body := strings.Replace(body400, `"model":"m"`, `"model":"m","metadata":{"tag":"checkout"}`, 1)
			rec := &exchange.Record{Target: "up/up-model", Provider: "up", InputTokens: 107, OutputTokens: 300}
			var next, refused atomic.Int64
			var wg sync.WaitGroup
			b.ResetTimer()
			start := time.Now()
			for w := 0; w < c.workers; w++ {
				wg.Add(1)
				go func() {
					defer wg.Done()
					lim := lims[w%len(lims)]
					for {
						i := next.Add(1)
						if i > int64(b.N) {
							return
						}
						if c.rate > 0 {
							time.Sleep(time.Until(start.Add(time.Duration(i) * time.Second / time.Duration(c.rate))))
						}
						adm := admission(b, cfg, "search", "checkout", body)
						settle, err := lim.Admit(context.Background(), adm)
						if err != nil {
							refused.Add(1)
							continue
						}
						settle(context.Background(), rec)
					}
				}()
			}
			wg.Wait()
			elapsed := time.Since(start)
			for _, l := range lims {
				if err := l.Flush(context.Background()); err != nil {
					b.Fatal(err)
				}
			}
			b.StopTimer()
			total, per := api.Writes()
			var hottest, part int64
			for k, n := range per {
				if k.PK == store.BudgetPK("search") {
					part += n
					hottest = max(hottest, n)
				}
			}
			secs := elapsed.Seconds()
			b.ReportMetric(float64(b.N)/secs, "req/s")
			b.ReportMetric(float64(total)/float64(b.N), "writes/req")
			b.ReportMetric(float64(hottest)/secs, "item-writes/s")
			b.ReportMetric(float64(part)/secs, "part-writes/s")
			b.ReportMetric(float64(refused.Load())/float64(b.N), "refused/req")
		})
	}
}
