package teams_test

import (
	"context"
	"testing"
	"time"

	"github.com/llmgw/llmgw/pkg/config"
	"github.com/llmgw/llmgw/pkg/exchange"
	"github.com/llmgw/llmgw/pkg/store"
	"github.com/llmgw/llmgw/pkg/store/embedded"
	"github.com/llmgw/llmgw/pkg/teams"
	"github.com/llmgw/llmgw/pkg/usage/usagetest"
)

// heldAdder holds every Add until the test releases it, announcing it on
// entered first.
type heldAdder struct {
	store.Adder
	entered, release chan struct{}
}

func (h *heldAdder) Add(ctx context.Context, k store.Key, d map[string]float64, o store.AddOptions) (store.Item, error) {
	h.entered <- struct{}{}
	<-h.release
	return h.Adder.Add(ctx, k, d, o)
}

// TestNextLeaseIsTakenBeforeTheOneInHandRunsOut: after the first request
// (which has no lease and waits for the first take), no request waits for
// a store write: each time the unspent lease falls below half a lease, the
// next one is taken in the background while requests go on. A request that
// still waits shows as an Admit that does not return while a take is held
// (detected after holdLimit, which only a waiting request reaches).
func TestNextLeaseIsTakenBeforeTheOneInHandRunsOut(t *testing.T) {
	const holdLimit = 3 * time.Second
	clk := usagetest.NewClock(tLimits)
	s := embedded.OpenMemory(embedded.WithClock(clk.Now))
	t.Cleanup(func() { s.Close() })
	held := &heldAdder{Adder: s, entered: make(chan struct{}), release: make(chan struct{})}
	cfg := limitsConfig(t, "limits: {cost_per_day_usd: 100}")
	lim := teams.NewLimiter(held, func() *config.Config { return cfg }, nil)
	lim.Now = clk.Now
	takes := 0
	// drain lets background takes finish until none is left.
	drain := func() {
		idle := make(chan struct{})
		go func() { lim.Wait(); close(idle) }()
		for {
			select {
			case <-held.entered:
				takes++
				held.release <- struct{}{}
			case <-idle:
				return
			}
		}
	}
	for i := 0; i < 40; i++ {
		done := make(chan error, 1)
		go func() {
			settle, err := lim.Admit(context.Background(), admission(t, cfg, "search", "", body400))
			if err == nil {
				settle(context.Background(), &exchange.Record{Target: "up/up-model", Provider: "up", InputTokens: 107, OutputTokens: 1000})
			}
			done <- err
		}()
	wait:
		for {
			select {
			case err := <-done:
				if err != nil {
					t.Fatalf("request %d refused: %v", i, err)
				}
				break wait
			case <-held.entered:
				takes++
				if i == 0 {
					held.release <- struct{}{} // the first request has no lease: it waits
					continue
				}
				select {
				case err := <-done: // it went on while the take was held: a background take
					held.release <- struct{}{}
					if err != nil {
						t.Fatalf("request %d refused: %v", i, err)
					}
					break wait
				case <-time.After(holdLimit):
					held.release <- struct{}{}
					<-done
					t.Fatalf("request %d waited for a lease write: the next lease was not taken before the one in hand ran out", i)
				}
			}
		}
		drain()
	}
	if takes < 3 {
		t.Fatalf("%d takes for 40 requests: the leases were never renewed", takes)
	}
	flushed := make(chan error, 1)
	go func() { flushed <- lim.Flush(ctxT(t)) }()
	for {
		select {
		case <-held.entered:
			held.release <- struct{}{}
		case err := <-flushed:
			if err != nil {
				t.Fatal(err)
			}
			return
		}
	}
}
