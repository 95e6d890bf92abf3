package resilience

import (
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"net/http"
	"os"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/llmgw/llmgw/pkg/internal/testkit"
)

// soakDuration is SOAK_DURATION (a Go duration), else 30s, or 5s with
// -short.
func soakDuration(t *testing.T) time.Duration {
	if v := os.Getenv("SOAK_DURATION"); v != "" {
		d, err := time.ParseDuration(v)
		if err != nil {
			t.Fatalf("SOAK_DURATION: %v", err)
		}
		return d
	}
	if testing.Short() {
		return 5 * time.Second
	}
	return 30 * time.Second
}

// faultyScript is what a primary does while its fault is on: mostly
// failures before the first token (503, a dropped connection, a stall),
// some mid-stream cuts and idle gaps.
func faultyScript(rng *rand.Rand, reply []string) script {
	switch p := rng.IntN(100); {
	case p < 30:
		return script{status: 503, errMsg: "overloaded"}
	case p < 40:
		return script{abort: true}
	case p < 50:
		return script{stall: true}
	case p < 90:
		return script{words: reply, cutAfter: 1 + rng.IntN(len(reply)-1)}
	default:
		return script{words: reply, chunkDelay: 2 * time.Second} // an idle gap after the first word
	}
}

// TestSoak runs a bounded soak (SOAK_DURATION, default 30s; 5s with
// -short): two routes (openai -> openai, anthropic -> bedrock) under
// moderate concurrency while the primaries' faults switch on and off, so
// failover, mid-stream cuts, idle timeouts, breaker trips and probes all
// happen, then the faults stop for good. Throughout: every stream ends
// with [DONE] xor exactly one error frame (and nothing after it), every
// request has exactly one record that agrees with what the client saw,
// and goroutines stay bounded; at the end the breakers have recovered
// (half-open -> closed) and goroutines are back near their baseline.
func TestSoak(t *testing.T) {
	dur := soakDuration(t)
	reply := words(8)
	full := strings.Join(reply, "")
	var faulty atomic.Bool
	primaryPlan := func(_ *http.Request, _ []byte, n int) script {
		if faulty.Load() {
			return faultyScript(rand.New(rand.NewPCG(uint64(n), 42)), reply)
		}
		return script{words: reply, chunkDelay: time.Millisecond}
	}
	// Bedrock serves route k's fallback, except under the race detector:
	// concurrent ConverseStream calls on one SDK client race inside
	// smithy-go (see TestBedrockConcurrentStreamsStayApart), and a
	// dependency's race must not fail the soak.
	dkind := bedrockKind
	if testkit.RaceEnabled {
		dkind = openaiKind
	}
	a, b := newFake(t, openaiKind, script{}), newFake(t, openaiKind, script{words: reply})
	c, d := newFake(t, anthropicKind, script{}), newFake(t, dkind, script{words: reply})
	for _, f := range []*fake{a, b, c, d} {
		f.forget.Store(true)
	}
	a.set(primaryPlan)
	c.set(primaryPlan)
	g := newGateway(t, fmt.Sprintf(`
defaults:
  backoff_base: 1ms
  backoff_max: 2ms
  first_token_timeout: 300ms
  response_timeout: 2s
  idle_timeout: 300ms
breaker: {window: 10s, min_requests: 5, failure_rate: 0.5, consecutive_failures: 3, cooldown: 200ms, max_cooldown: 800ms, half_open_probes: 1}
providers:
  a: %s
  b: %s
  c: %s
  d: %s
routes:
  m: {targets: [{provider: a, model: up-model}, {provider: b, model: up-model}]}
  k: {targets: [{provider: c, model: claude-fake}, {provider: d, model: %q}]}
`, providerYAML(openaiKind, a.addr(), ""), providerYAML(openaiKind, b.addr(), ""),
		providerYAML(anthropicKind, c.addr(), ""), providerYAML(dkind, d.addr(), ""), modelFor(dkind)))
	primaries := map[string]string{"m": "a", "k": "c"}
	targets := []string{"a/up-model", "c/claude-fake"}

	tr := &http.Transport{MaxIdleConnsPerHost: 32}
	client := &http.Client{Transport: tr, Timeout: 30 * time.Second}
	baseG, _ := settleRuntime(tr, g.Server, a.Server, b.Server, c.Server, d.Server)

	// The client's view of each request, by request id.
	type seen struct {
		route, outcome, provider string
	}
	var mu sync.Mutex
	views := map[string]seen{}
	var requests, failures atomic.Int64
	fail := func(format string, args ...any) {
		if failures.Add(1) <= 20 {
			t.Errorf(format, args...)
		}
	}

	one := func(rng *rand.Rand) {
		route := "m"
		if rng.IntN(2) == 0 {
			route = "k"
		}
		stream := rng.IntN(10) != 0
		body := fmt.Sprintf(`{"model":%q,"stream":%v,"messages":[{"role":"user","content":"soak"}]}`, route, stream)
		hr, _ := newRequest(g.URL, strings.NewReader(body))
		resp, err := client.Do(hr)
		if err != nil {
			fail("%s: %v", route, err)
			return
		}
		requests.Add(1)
		r := newFrameReader(resp).rest()
		rid, prov := r.Header.Get("x-request-id"), r.Header.Get("x-gateway-provider")
		v := seen{route: route, provider: prov}
		switch {
		case r.Status != 200:
			// The secondaries never fail: every request must be served.
			fail("%s: status %d: %.300s", route, r.Status, r.Body)
			v.outcome = "status"
		case !stream:
			var cc struct {
				Choices []struct {
					Message struct{ Content string } `json:"message"`
				} `json:"choices"`
			}
			if json.Unmarshal([]byte(r.Body), &cc) != nil || len(cc.Choices) != 1 || cc.Choices[0].Message.Content != full {
				fail("%s: non-streaming answer: %.300s", route, r.Body)
			}
			v.outcome = "ok"
		default:
			if msg := terminalProblem(r); msg != "" {
				fail("%s (provider %s): %s:\n%s", route, prov, msg, r.Body)
			}
			if r.Done {
				v.outcome = "ok"
				if r.Text != full || len(r.Finish) != 1 {
					fail("%s: a [DONE] stream with text %q finish %v", route, r.Text, r.Finish)
				}
			} else if len(r.Errors) == 1 {
				e := r.Errors[0].Error
				v.outcome = e.Category
				// Only a primary fails after its first token, and only
				// by a cut (interrupted) or an idle gap (timeout).
				if prov != primaries[route] || e.Provider != prov || (e.Category != "interrupted" && e.Category != "timeout") {
					fail("%s: error event from %s: %+v", route, prov, e)
				}
				// A cut drops part of the text; an idle gap may come after
				// the last word, before the finish chunk (on a loaded
				// machine the healthy script's 1 ms pauses can stretch).
				if !strings.HasPrefix(full, r.Text) || r.Text == full && e.Category != "timeout" {
					fail("%s: cut stream text %q", route, r.Text)
				}
			}
		}
		mu.Lock()
		defer mu.Unlock()
		if _, dup := views[rid]; dup || rid == "" {
			fail("request id %q seen twice", rid)
		}
		views[rid] = v
	}

	// Workers run until stop; a sampler watches the goroutine count.
	const workers = 8
	stop := make(chan struct{})
	var wg sync.WaitGroup
	for w := 0; w < workers; w++ {
		wg.Add(1)
		go func(w int) {
			defer wg.Done()
			rng := rand.New(rand.NewPCG(uint64(w), 99))
			for {
				select {
				case <-stop:
					return
				default:
				}
				one(rng)
				time.Sleep(time.Duration(rng.IntN(4)) * time.Millisecond) // moderate, not a flood
			}
		}(w)
	}
	var maxG atomic.Int64
	samplerDone := make(chan struct{})
	go func() {
		defer close(samplerDone)
		tk := time.NewTicker(100 * time.Millisecond)
		defer tk.Stop()
		for {
			select {
			case <-stop:
				return
			case <-tk.C:
				if n := int64(runtime.NumGoroutine()); n > maxG.Load() {
					maxG.Store(n)
				}
			}
		}
	}()

	// Faults on and off, then off for good for the last 30%.
	start := time.Now()
	faultEnd := start.Add(dur * 7 / 10)
	for time.Now().Before(faultEnd) {
		faulty.Store(true)
		time.Sleep(min(700*time.Millisecond, time.Until(faultEnd)))
		faulty.Store(false)
		time.Sleep(min(500*time.Millisecond, max(0, time.Until(faultEnd))))
	}
	faulty.Store(false)
	time.Sleep(time.Until(start.Add(dur)))

	// The faults have stopped: with traffic still flowing, every breaker
	// closes again (bounded).
	recovered := func() bool {
		for _, id := range targets {
			if g.health(t, id).Breaker.State != "closed" {
				return false
			}
		}
		return true
	}
	deadline := time.Now().Add(15 * time.Second)
	for !recovered() && time.Now().Before(deadline) {
		time.Sleep(50 * time.Millisecond)
	}
	close(stop)
	wg.Wait()
	<-samplerDone
	for _, id := range targets {
		if h := g.health(t, id); h.Breaker.State != "closed" {
			t.Errorf("breaker of %s did not recover after the faults stopped: %+v", id, h.Breaker)
		}
	}

	// One record per request, agreeing with the client.
	n := int(requests.Load())
	recs := g.waitRecords(t, n)
	counts := map[string]int{}
	for _, rec := range recs {
		mu.Lock()
		v, ok := views[rec.RequestID]
		mu.Unlock()
		if !ok {
			fail("record for a request no client saw: %+v", rec)
			continue
		}
		if rec.Outcome != v.outcome || rec.Route != v.route || rec.Provider != v.provider {
			fail("record %s says %s via %s, the client saw %s via %s", rec.RequestID, rec.Outcome, rec.Provider, v.outcome, v.provider)
		}
		counts["outcome "+rec.Outcome]++
		if rec.Outcome == "interrupted" || rec.Outcome == "timeout" {
			counts["mid-stream error"]++
		}
		if rec.Outcome == "ok" && rec.FallbackDepth > 0 {
			counts["failover"]++
		}
		for _, at := range rec.Attempts {
			if at.Skipped == "breaker_open" {
				counts["skipped (breaker open)"]++
				break
			}
		}
	}
	// The soak did what it claims: each kind of event happened.
	logs := g.logs.String()
	for _, tr := range []string{`"to":"open"`, `"to":"half_open"`, `"from":"half_open","to":"closed"`} {
		counts["breaker "+tr] = strings.Count(logs, tr)
	}
	t.Logf("%d requests in %v, peak %d goroutines (baseline %d): %v", n, time.Since(start).Round(time.Millisecond), maxG.Load(), baseG, counts)
	for _, k := range []string{"outcome ok", "mid-stream error", "failover", "skipped (breaker open)",
		`breaker "to":"open"`, `breaker "to":"half_open"`, `breaker "from":"half_open","to":"closed"`} {
		if counts[k] == 0 {
			t.Errorf("the soak never produced %s: %v", k, counts)
		}
	}

	// Goroutines: bounded during the soak (a few per in-flight request),
	// back near the baseline after.
	if limit := int64(baseG + workers*40 + 50); maxG.Load() > limit {
		t.Errorf("goroutines peaked at %d (baseline %d, limit %d)", maxG.Load(), baseG, limit)
	}
	var afterG int
	for end := time.Now().Add(10 * time.Second); ; {
		afterG, _ = settleRuntime(tr, g.Server, a.Server, b.Server, c.Server, d.Server)
		if afterG <= baseG+5 || time.Now().After(end) {
			break
		}
		time.Sleep(100 * time.Millisecond)
	}
	if afterG > baseG+5 {
		buf := make([]byte, 1<<20)
		t.Errorf("goroutines: %d before the soak, %d after\n%s", baseG, afterG, buf[:runtime.Stack(buf, true)])
	}
}

// terminalProblem is checkTerminal as a message ("" when the stream obeys
// the rule), for use from worker goroutines.
func terminalProblem(r result) string {
	n := len(r.Frames)
	switch {
	case !r.SSE:
		return "not a stream"
	case r.Done && len(r.Errors) > 0:
		return "both [DONE] and an error frame"
	case !r.Done && len(r.Errors) == 0:
		return "neither [DONE] nor an error frame"
	case len(r.Errors) > 1:
		return fmt.Sprintf("%d error frames", len(r.Errors))
	case r.Done && r.DoneIndex != n-1:
		return "frames after [DONE]"
	case len(r.Errors) == 1 && r.ErrorIndex != n-1:
		return "frames after the error frame"
	case strings.Count(r.Body, "[DONE]") > 1:
		return "[DONE] twice"
	}
	return ""
}
