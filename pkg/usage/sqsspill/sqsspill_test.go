package sqsspill_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/sqs"

	"github.com/llmgw/llmgw/pkg/config"
	"github.com/llmgw/llmgw/pkg/exchange"
	"github.com/llmgw/llmgw/pkg/store"
	"github.com/llmgw/llmgw/pkg/store/storetest"
	"github.com/llmgw/llmgw/pkg/usage"
	"github.com/llmgw/llmgw/pkg/usage/sqsspill"
	"github.com/llmgw/llmgw/pkg/usage/sqsspill/sqstest"
	"github.com/llmgw/llmgw/pkg/usage/usagetest"
)

var t0 = time.Date(2026, 11, 3, 12, 0, 0, 0, time.UTC)

const cfgYAML = `
providers: {a: {kind: fake}}
routes: {m: {targets: [{provider: a, model: x}]}}
teams: {search: {}}
usage: {store_timeout: 5s}
`

func client(url string) *sqs.Client {
	return sqs.New(sqs.Options{Region: "us-east-1", BaseEndpoint: aws.String(url),
		Credentials: credentials.NewStaticCredentialsProvider("fake", "fake", "")})
}

// TestQueueKeepsEveryRecordUntilTheStoreIsBack: the Lambda spill. 100
// concurrent records while the table fails go to the queue through the
// real SDK client; a drain while the table still fails deletes nothing;
// once it is back, a drain writes every record once and empties the queue.
func TestQueueKeepsEveryRecordUntilTheStoreIsBack(t *testing.T) {
	usagetest.Run(t, []usagetest.Case{{Name: "Queue", Fn: func(t *testing.T, open usagetest.Opener) {
		srv := sqstest.New()
		defer srv.Close()
		url := srv.QueueURL("usage")
		clk := usagetest.NewClock(t0)
		base := open(t, clk.Now)
		fs := storetest.NewFaulty(t, base)
		cfg, err := config.Parse([]byte(cfgYAML))
		if err != nil {
			t.Fatal(err)
		}
		rec := usage.NewRecorder(fs, func() *config.Config { return cfg }, slog.New(slog.NewTextHandler(io.Discard, nil)))
		rec.Spill = sqsspill.New(client(srv.URL), url)
		fs.Set(storetest.Failing)
		var wg sync.WaitGroup
		for i := 0; i < 100; i++ {
			wg.Add(1)
			go func() {
				defer wg.Done()
				rec.Record(context.Background(), &exchange.Record{RequestID: fmt.Sprintf("req_%d", i), Time: t0.Add(time.Duration(i) * time.Second),
					Team: "search", Outcome: "ok", InputTokens: 3, CostUSD: 0.002})
			}()
		}
		wg.Wait()
		if n := srv.Len(url); n != 100 {
			t.Fatalf("%d messages queued, want 100", n)
		}
		if _, err := rec.Drain(context.Background()); !errors.Is(err, storetest.ErrInjected) {
			t.Fatalf("drain into a failing table: %v", err)
		}
		if n := srv.Len(url); n != 100 {
			t.Fatalf("%d messages left after a failed drain, want 100", n)
		}
		fs.Set(storetest.Healthy)
		// Messages received by the failed drain are invisible for a while;
		// the fake honours the visibility timeout, so use a fresh view of it.
		srv.ResetVisibility(url)
		sum, err := rec.Drain(context.Background())
		if err != nil || sum.Records != 100 || !sum.Earliest.Equal(t0.Truncate(24*time.Hour)) {
			t.Fatalf("drain %+v %v", sum, err)
		}
		n := 0
		base.Query(context.Background(), store.UsagePK("search", t0), "", "", func(store.Item) bool { n++; return true })
		if n != 100 || srv.Len(url) != 0 {
			t.Fatalf("%d records stored, %d messages left", n, srv.Len(url))
		}
	}}})
}
