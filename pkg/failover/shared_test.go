package failover

import (
	"context"
	"io"
	"net/http"
	"testing"
	"time"

	"github.com/llmgw/llmgw/pkg/breaker"
	"github.com/llmgw/llmgw/pkg/config"
	"github.com/llmgw/llmgw/pkg/exchange"
	"github.com/llmgw/llmgw/pkg/keyledger"
	"github.com/llmgw/llmgw/pkg/provider"
	"github.com/llmgw/llmgw/pkg/retry"
	"github.com/llmgw/llmgw/pkg/store/embedded"
)

// The engine over the production breaker and key ledger (store-backed, here
// over the in-memory embedded store): a failing primary trips its breaker
// and is then skipped without a call; a 429 on one key moves to the other
// key of the same provider, which the ledger now prefers.
func TestEngineWithTheRealBreakerAndKeyLedger(t *testing.T) {
	now := time.Unix(1_800_000_000, 0)
	clock := func() time.Time { return now }
	st := embedded.OpenMemory(embedded.WithClock(clock))
	br := breaker.New(st, config.BreakerSettings{Window: config.Duration(time.Minute), MinRequests: 100, FailureRate: 0.5,
		ConsecutiveFailures: 3, Cooldown: config.Duration(30 * time.Second), MaxCooldown: config.Duration(time.Minute), HalfOpenProbes: 1},
		breaker.Options{Now: clock})
	ledger := keyledger.New(st, keyledger.Options{Now: clock})
	k1, k2 := keyledger.NewKey("sk-one", 0), keyledger.NewKey("sk-two", 1)
	ledger.SetKeys(map[string][]keyledger.Key{"b": {k1, k2}})

	var usedKeys []string
	a := &scripted{script: script{fails(provider.StatusError("a", 503, "", "", 0))}}
	b := &scripted{script: script{
		func(ctx context.Context, call *provider.Call) (provider.Stream, error) {
			usedKeys = append(usedKeys, call.Key.Fingerprint)
			if call.Key.Secret == "sk-one" {
				call.OnResponse(http.StatusTooManyRequests, http.Header{"Retry-After": {"30"}})
				return nil, provider.StatusError("b", 429, "rate_limit_error", "", 30*time.Second)
			}
			call.OnResponse(http.StatusOK, http.Header{})
			return &fakeStream{ctx: ctx, evs: []exchange.Event{text("ok"), finish}}, nil
		},
	}}
	r := &Router{Providers: map[string]provider.Provider{"a": a, "b": b}, Breakers: br, Keys: ledger,
		Budget: retry.NewBudget(), Now: clock, Rand: func() float64 { return 0 },
		Sleep: func(ctx context.Context, _ time.Duration) error { return ctx.Err() }}

	for i := 0; i < 3; i++ {
		rq := request(1, "a", "b")
		rq.Steps[1].Attempts = 2                               // room for a second key
		rq.Policy.RetryAfterCap = config.Duration(time.Second) // a key's 30 s Retry-After is beyond it: the other key serves at once
		s, err := r.Open(context.Background(), rq)
		if err != nil {
			t.Fatalf("request %d: %v", i, err)
		}
		for {
			if _, err := s.Next(); err != nil {
				s.End(err)
				if err != io.EOF {
					t.Fatalf("request %d ended %v", i, err)
				}
				break
			}
		}
	}
	if a.Calls() != 3 {
		t.Fatalf("a called %d times before its breaker opened, want 3 (consecutive_failures)", a.Calls())
	}
	rq := request(1, "a", "b")
	if _, err := r.Open(context.Background(), rq); err != nil {
		t.Fatal(err)
	}
	if a.Calls() != 3 || rq.Trace.Attempts[0].Skipped != "breaker_open" {
		t.Fatalf("a called %d times, trace %+v: an open breaker must skip the target without a call", a.Calls(), rq.Trace.Attempts)
	}
	// The first request met the 429 on key one and moved to key two; later
	// requests go straight to key two while key one cools down.
	if len(usedKeys) < 3 || usedKeys[0] != k1.Fingerprint || usedKeys[1] != k2.Fingerprint || usedKeys[2] != k2.Fingerprint {
		t.Fatalf("keys used %v, want %s then %s, %s...", usedKeys, k1.Fingerprint, k2.Fingerprint, k2.Fingerprint)
	}
}
