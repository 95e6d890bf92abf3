package dynamo_test

import (
	"context"
	"errors"
	"fmt"
	"net"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb"

	"github.com/llmgw/llmgw/pkg/store"
	"github.com/llmgw/llmgw/pkg/store/dynamo"
	"github.com/llmgw/llmgw/pkg/store/storetest"
)

// TestDynamo runs everything that needs dynalite on one dynalite process
// (one table per subtest).
func TestDynamo(t *testing.T) {
	endpoint := storetest.StartDynalite(t)

	t.Run("Conformance", func(t *testing.T) {
		storetest.Run(t, func(t *testing.T) store.Store {
			// A small page Limit makes the suite's Query cross ~60 pages.
			return storetest.NewDynamoStore(t, endpoint, dynamo.WithPageSize(25))
		})
	})
	t.Run("QueryPagesOf1MB", func(t *testing.T) { testPagesOf1MB(t, endpoint) })
	t.Run("QueryEarlyStopReadsNoMorePages", func(t *testing.T) { testEarlyStop(t, endpoint) })
	t.Run("EnsureTableIsIdempotent", func(t *testing.T) {
		s := storetest.NewDynamoStore(t, endpoint)
		if err := s.EnsureTable(context.Background()); err != nil {
			t.Fatal(err)
		}
	})
	t.Run("LoadClientHonoursEndpointVariable", func(t *testing.T) { testLoadClient(t, endpoint) })
}

// countingAPI counts Query requests.
type countingAPI struct {
	dynamo.API
	queries atomic.Int64
}

func (c *countingAPI) Query(ctx context.Context, in *dynamodb.QueryInput, optFns ...func(*dynamodb.Options)) (*dynamodb.QueryOutput, error) {
	c.queries.Add(1)
	return c.API.Query(ctx, in, optFns...)
}

// Without a page Limit, DynamoDB (and dynalite) return pages of at most 1 MB:
// 300 items of 8 KB need at least three requests, and the store follows
// LastEvaluatedKey through all of them.
func testPagesOf1MB(t *testing.T, endpoint string) {
	api := &countingAPI{API: storetest.DynaliteClient(endpoint)}
	s := storetest.NewDynamoStoreWithAPI(t, api)
	ctx := context.Background()
	payload := []byte(strings.Repeat("x", 8<<10))
	const n = 300
	for i := 0; i < n; i++ {
		it := store.Item{Key: store.Key{PK: "big", SK: fmt.Sprintf("%04d", i)}, Data: payload}
		if _, err := s.Put(ctx, it, store.IfAbsent()); err != nil {
			t.Fatal(err)
		}
	}
	got := 0
	if err := s.Query(ctx, "big", "", "", func(it store.Item) bool {
		if it.Key.SK != fmt.Sprintf("%04d", got) || len(it.Data) != len(payload) {
			t.Fatalf("item %d: %v with %d bytes", got, it.Key, len(it.Data))
		}
		got++
		return true
	}); err != nil {
		t.Fatal(err)
	}
	if got != n {
		t.Fatalf("Query returned %d items, want %d", got, n)
	}
	if q := api.queries.Load(); q < 3 {
		t.Fatalf("%d Query requests for %d KB: the 1 MB pagination was not exercised", q, n*8)
	}
	t.Logf("%d items of 8 KB read in %d Query requests", n, api.queries.Load())
}

func testEarlyStop(t *testing.T, endpoint string) {
	api := &countingAPI{API: storetest.DynaliteClient(endpoint)}
	s := storetest.NewDynamoStoreWithAPI(t, api, dynamo.WithPageSize(10))
	ctx := context.Background()
	for i := 0; i < 100; i++ {
		if _, err := s.Put(ctx, store.Item{Key: store.Key{PK: "p", SK: fmt.Sprintf("%03d", i)}}, store.IfAbsent()); err != nil {
			t.Fatal(err)
		}
	}
	calls := 0
	if err := s.Query(ctx, "p", "", "", func(store.Item) bool { calls++; return calls < 15 }); err != nil {
		t.Fatal(err)
	}
	if calls != 15 || api.queries.Load() != 2 {
		t.Fatalf("stopping at item 15 of pages of 10: %d calls, %d requests; want 15 and 2", calls, api.queries.Load())
	}
}

func testLoadClient(t *testing.T, endpoint string) {
	t.Setenv("AWS_ENDPOINT_URL_DYNAMODB", endpoint)
	t.Setenv("AWS_REGION", "us-east-1")
	t.Setenv("AWS_ACCESS_KEY_ID", "fake")
	t.Setenv("AWS_SECRET_ACCESS_KEY", "fake")
	t.Setenv("AWS_SESSION_TOKEN", "")
	t.Setenv("AWS_PROFILE", "")
	t.Setenv("AWS_CONFIG_FILE", "/dev/null")
	t.Setenv("AWS_SHARED_CREDENTIALS_FILE", "/dev/null")
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	client, err := dynamo.LoadClient(ctx)
	if err != nil {
		t.Fatal(err)
	}
	s := dynamo.New(client, storetest.UniqueTableName(t))
	if err := s.EnsureTable(ctx); err != nil {
		t.Fatal(err)
	}
	k := store.Key{PK: "env", SK: "x"}
	if _, err := s.Add(ctx, k, map[string]float64{"n": 2}, store.AddOptions{}); err != nil {
		t.Fatal(err)
	}
	if it, found, err := s.Get(ctx, k); err != nil || !found || it.Nums["n"] != 2 {
		t.Fatalf("Get: %+v %v %v", it, found, err)
	}
}

// A server that accepts connections and never answers: every call must
// still return promptly when its context times out (the SDK's retries
// included).
func TestStalledServerHonoursContext(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	done := make(chan struct{})
	defer close(done)
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			go func() { <-done; c.Close() }()
		}
	}()
	s := dynamo.New(storetest.DynaliteClient("http://"+l.Addr().String()), "stalled")
	k := store.Key{PK: "p", SK: "s"}
	ops := map[string]func(ctx context.Context) error{
		"Get": func(ctx context.Context) error { _, _, err := s.Get(ctx, k); return err },
		"Put": func(ctx context.Context) error { _, err := s.Put(ctx, store.Item{Key: k}, store.Always()); return err },
		"Add": func(ctx context.Context) error {
			_, err := s.Add(ctx, k, map[string]float64{"n": 1}, store.AddOptions{})
			return err
		},
		"Delete": func(ctx context.Context) error { return s.Delete(ctx, k, store.Always()) },
		"Query": func(ctx context.Context) error {
			return s.Query(ctx, "p", "", "", func(store.Item) bool { return true })
		},
		"EnsureTable": func(ctx context.Context) error { return s.EnsureTable(ctx) },
	}
	for name, op := range ops {
		ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
		start := time.Now()
		err := op(ctx)
		cancel()
		if !errors.Is(err, context.DeadlineExceeded) {
			t.Errorf("%s: got %v, want DeadlineExceeded", name, err)
		}
		if d := time.Since(start); d > 2*time.Second {
			t.Errorf("%s: returned after %v", name, d)
		}
	}
}

func BenchmarkDynamo(b *testing.B) {
	endpoint := storetest.StartDynalite(b)
	storetest.Benchmark(b, func(b *testing.B) store.Store {
		return storetest.NewDynamoStore(b, endpoint)
	})
}
