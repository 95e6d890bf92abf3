package failover

import (
	"context"
	"io"
	"sync"
	"testing"
	"time"

	"github.com/llmgw/llmgw/pkg/breaker"
)

// timedGuard is a fake latency-aware breaker: it records each outcome's
// time to first token.
type timedGuard struct {
	mu    sync.Mutex
	ttfts []time.Duration
	ctxs  []context.Context
}

func (g *timedGuard) Allow(string, breaker.Force) (func(breaker.Outcome), error) {
	panic("the router must use AllowContext when the guard has it")
}

func (g *timedGuard) AllowContext(ctx context.Context, _ string, _ breaker.Force) (func(breaker.Outcome, time.Duration), error) {
	return func(_ breaker.Outcome, ttft time.Duration) {
		g.mu.Lock()
		defer g.mu.Unlock()
		g.ttfts = append(g.ttfts, ttft)
		g.ctxs = append(g.ctxs, ctx)
	}, nil
}

// TestTimeToFirstTokenReachesTheBreaker: a committed stream reports its
// attempt's latency at commit with its outcome; a failed attempt and a
// non-streaming response (whose latency is the whole body's) report none.
func TestTimeToFirstTokenReachesTheBreaker(t *testing.T) {
	clock := time.Unix(1_800_000_000, 0)
	for _, stream := range []bool{true, false} {
		rg := newRig(map[string]script{
			"a": {fails(overloaded())},
			"b": {serves(io.EOF, start, text("hi"), finish)},
		})
		g := &timedGuard{}
		rg.router.Breakers = g
		var mu sync.Mutex
		rg.router.Now = func() time.Time {
			mu.Lock()
			defer mu.Unlock()
			clock = clock.Add(300 * time.Millisecond) // every reading is 300ms later
			return clock
		}
		rq := request(1, "a", "b")
		rq.Stream = stream
		ctx := context.WithValue(context.Background(), struct{}{}, "req")
		s, err := rg.router.Open(ctx, rq)
		if err != nil {
			t.Fatal(err)
		}
		drain(t, s)
		g.mu.Lock()
		if len(g.ttfts) != 2 || g.ttfts[0] != 0 || g.ctxs[1] != ctx {
			t.Fatalf("stream=%v: ttfts %v", stream, g.ttfts)
		}
		if want := rq.Trace.Attempts[1].Latency; stream && (g.ttfts[1] != want || want <= 0) || !stream && g.ttfts[1] != 0 {
			t.Errorf("stream=%v: committed ttft %v, attempt latency %v", stream, g.ttfts[1], want)
		}
		g.mu.Unlock()
	}
}
