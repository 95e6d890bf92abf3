package resilience

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"os"
	"runtime"
	"runtime/pprof"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/llmgw/llmgw/pkg/exchange"
	"github.com/llmgw/llmgw/pkg/server"
)

// TestClientDisconnectsDuringConcurrentStreams: many concurrent streaming
// clients (1,000; 200 under -short) leave at random points: before the
// response headers, right after them, or after a random number of frames.
// The upstream never ends a stream on its own (it streams until its caller
// leaves, bounded), so it can tell whether the gateway cancelled each call.
//
// Every upstream call is cancelled, every request that reached the gateway
// has exactly one usage record (client_cancelled), and afterwards the
// goroutine count and the heap are back near their baseline.
func TestClientDisconnectsDuringConcurrentStreams(t *testing.T) {
	if os.Getenv("HEAPPROF") != "" { // HEAPPROF=file: write an exact heap profile at the end, to find a leak
		runtime.MemProfileRate = 1
	}
	n := 1000
	if testing.Short() {
		n = 200
	}
	up := newFake(t, openaiKind, script{forever: true, firstDelay: 10 * time.Millisecond, chunkDelay: 100 * time.Millisecond})
	up.forget.Store(true)
	// Records are kept small and preallocated, logs discarded, so the heap
	// comparison measures the gateway, not the test's own bookkeeping.
	var recMu sync.Mutex
	recs := make(map[string]string, n+16) // request id -> outcome
	dup := 0
	g := newGateway(t, fastPolicy+fmt.Sprintf(`
providers:
  p0: {kind: openai, base_url: "%s/v1"}
routes:
  m: {targets: [{provider: p0, model: up-model}]}
`, up.URL), func(o *server.Options) {
		o.Logger = slog.New(slog.NewJSONHandler(io.Discard, nil))
		o.Record = func(_ context.Context, r *exchange.Record) {
			recMu.Lock()
			defer recMu.Unlock()
			if _, ok := recs[r.RequestID]; ok {
				dup++
			}
			recs[r.RequestID] = r.Outcome
		}
	})
	answered := map[string]bool{} // request ids the gateway ended with an error
	markAnswered := func(rid string) { recMu.Lock(); answered[rid] = true; recMu.Unlock() }
	nrecs := func() int { recMu.Lock(); defer recMu.Unlock(); return len(recs) + dup }
	tr := &http.Transport{DisableKeepAlives: true, MaxConnsPerHost: 0}
	defer tr.CloseIdleConnections()
	c := &http.Client{Transport: tr}

	// one runs one client that leaves at a random point.
	one := func(rng *rand.Rand) {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		req, _ := http.NewRequestWithContext(ctx, http.MethodPost, g.URL+"/v1/chat/completions", strings.NewReader(streamBody))
		req.Header.Set("Content-Type", "application/json")
		if rng.IntN(10) == 0 {
			// Leave before the headers (the upstream's first byte comes
			// after 10 ms): before, during or after the gateway's call.
			d := time.Duration(rng.IntN(30)) * time.Millisecond
			time.AfterFunc(d, cancel)
		}
		resp, err := c.Do(req)
		if err != nil {
			return
		}
		defer resp.Body.Close()
		// A client the gateway answered with an error (an upstream that
		// failed under the load of the burst, before or after the first
		// byte) did not leave: its record may say why it failed.
		rid := resp.Header.Get("x-request-id")
		if resp.StatusCode != http.StatusOK {
			markAnswered(rid)
			return
		}
		fr := newFrameReader(resp)
		for k := rng.IntN(6); k > 0; k-- {
			data, err := fr.next()
			if err != nil {
				return
			}
			if strings.Contains(data, `"error"`) {
				markAnswered(rid)
				return
			}
		}
	}

	burst := func(stream uint64) {
		start := time.Now()
		var wg sync.WaitGroup
		for i := 0; i < n; i++ {
			wg.Add(1)
			go func(seed uint64) {
				defer wg.Done()
				one(rand.New(rand.NewPCG(seed, stream)))
			}(uint64(i))
		}
		wg.Wait()
		t.Logf("%d clients done in %v", n, time.Since(start))
	}

	// Warm up with a first burst of the same size, so the baseline holds
	// what the runtime keeps for good after a peak of concurrency (the
	// descriptors of finished goroutines are reused, never freed),
	// connection pools, and the race detector's shadow memory.
	burst(1)
	warm := g.served.Load()
	waitFor(t, 30*time.Second, func() bool { return up.cancelled.Load() == up.hits.Load() && nrecs() == int(warm) },
		func() string { return "warm-up did not settle" })
	baseG, baseHeap := settleRuntime(tr, g.Server, up.Server)
	servedBefore, hitsBefore := g.served.Load(), up.hits.Load()
	recMu.Lock()
	clear(recs)
	recMu.Unlock()

	burst(2)

	served := int(g.served.Load() - servedBefore)
	// Every upstream call ends because the gateway cancelled it.
	waitFor(t, 30*time.Second, func() bool { return up.cancelled.Load() == up.hits.Load() }, func() string {
		return fmt.Sprintf("%d upstream calls, %d saw their caller leave: the gateway did not cancel the rest", up.hits.Load(), up.cancelled.Load())
	})
	hits := int(up.hits.Load() - hitsBefore)
	if served < n*8/10 || hits < n*8/10 || hits > served {
		t.Errorf("%d clients, %d reached the gateway, %d reached the upstream", n, served, hits)
	}
	if up.completed.Load() != 0 {
		t.Errorf("%d upstream streams ran to their bound instead of being cancelled", up.completed.Load())
	}
	// One record per request that reached the gateway, each its own.
	waitFor(t, 10*time.Second, func() bool { return nrecs() >= served }, func() string {
		return fmt.Sprintf("%d records for %d requests", nrecs(), served)
	})
	time.Sleep(50 * time.Millisecond)
	recMu.Lock()
	if dup != 0 || len(recs) != served {
		t.Errorf("%d records (%d duplicates) for %d requests", len(recs)+dup, dup, served)
	}
	for id, outcome := range recs {
		if outcome != "client_cancelled" && !answered[id] {
			t.Errorf("record %s of a client that left: outcome %q", id, outcome)
		}
	}
	if len(answered) > n/10 {
		t.Errorf("%d of %d clients were answered with an error instead of being served", len(answered), n)
	} else if len(answered) > 0 {
		t.Logf("%d clients were answered with an error (the upstream failed under the burst's load)", len(answered))
	}
	recMu.Unlock()

	// Nothing is left behind: goroutines and heap back near the baseline.
	var afterG int
	var afterHeap uint64
	deadline := time.Now().Add(20 * time.Second)
	for {
		afterG, afterHeap = settleRuntime(tr, g.Server, up.Server)
		if afterG <= baseG+5 || time.Now().After(deadline) {
			break
		}
		time.Sleep(100 * time.Millisecond)
	}
	if os.Getenv("HEAPPROF") != "" {
		f, _ := os.Create(os.Getenv("HEAPPROF"))
		pprof.Lookup("heap").WriteTo(f, 0)
		f.Close()
	}
	t.Logf("goroutines %d -> %d, heap %d KiB -> %d KiB", baseG, afterG, baseHeap>>10, afterHeap>>10)
	if afterG > baseG+5 {
		buf := make([]byte, 1<<20)
		t.Errorf("goroutines leaked: %d before, %d after %d streams\n%s", baseG, afterG, n, buf[:runtime.Stack(buf, true)])
	}
	// Each leaked stream would hold its buffers (16 KiB for the SSE
	// reader alone, so 1,000 streams hold 16 MiB); 2 MiB of slack covers
	// allocator noise.
	if limit := baseHeap + 2<<20; afterHeap > limit {
		t.Errorf("heap grew from %d KiB to %d KiB after %d streams (limit %d KiB)", baseHeap>>10, afterHeap>>10, n, limit>>10)
	}
}

// settleRuntime closes idle keep-alive connections (client side, and
// server side, which also ends the gateway's pooled upstream connections:
// a pool is bounded, not a leak; a connection still carrying a response is
// not idle and stays), collects garbage and returns the goroutine count
// and the live heap.
func settleRuntime(tr *http.Transport, servers ...*httptest.Server) (int, uint64) {
	tr.CloseIdleConnections()
	http.DefaultClient.CloseIdleConnections()
	for _, s := range servers {
		s.Config.SetKeepAlivesEnabled(false) // closes its idle connections
		s.Config.SetKeepAlivesEnabled(true)
	}
	time.Sleep(50 * time.Millisecond) // the peers' read loops see the close
	runtime.GC()
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	return runtime.NumGoroutine(), ms.HeapAlloc
}
