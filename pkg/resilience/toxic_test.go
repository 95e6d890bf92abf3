package resilience

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"regexp"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/llmgw/llmgw/pkg/internal/testkit"

	toxiproxy "github.com/Shopify/toxiproxy/v2"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/rs/zerolog"

	"github.com/llmgw/llmgw/pkg/exchange"
)

// Toxiproxy runs in-process: its ApiServer holds the proxy collection, and
// toxics are added through the same JSON the HTTP API takes (no external
// binary, no API listener).

type toxiServer struct{ srv *toxiproxy.ApiServer }

func newToxiproxy() *toxiServer {
	return &toxiServer{srv: toxiproxy.NewServer(toxiproxy.NewMetricsContainer(prometheus.NewRegistry()), zerolog.Nop())}
}

var proxySeq atomic.Int64

// toxicProxy is one TCP proxy on loopback in front of one upstream.
type toxicProxy struct {
	p *toxiproxy.Proxy
}

// proxy starts a proxy to upstream (host:port) on a free loopback port; it
// is removed (its connections closed) when the test ends.
func (x *toxiServer) proxy(t testing.TB, upstream string) *toxicProxy {
	t.Helper()
	name := fmt.Sprintf("proxy%d", proxySeq.Add(1))
	p := toxiproxy.NewProxy(x.srv, name, "127.0.0.1:0", upstream)
	if err := x.srv.Collection.Add(p, true); err != nil {
		t.Fatalf("toxiproxy: %v", err)
	}
	t.Cleanup(func() { x.srv.Collection.Remove(name) })
	return &toxicProxy{p: p}
}

// addr is where the proxy listens (host:port).
func (tp *toxicProxy) addr() string { return tp.p.Listen }

// toxic adds a toxic; stream is "downstream" (upstream -> gateway) or
// "upstream" (gateway -> upstream); attrs is its attributes object.
func (tp *toxicProxy) toxic(t testing.TB, name, typ, stream, attrs string) {
	t.Helper()
	js := fmt.Sprintf(`{"name":%q,"type":%q,"stream":%q,"toxicity":1,"attributes":%s}`, name, typ, stream, attrs)
	if _, err := tp.p.Toxics.AddToxicJson(strings.NewReader(js)); err != nil {
		t.Fatalf("toxic %s: %v", js, err)
	}
}

func (tp *toxicProxy) removeToxic(t testing.TB, name string) {
	t.Helper()
	if err := tp.p.Toxics.RemoveToxic(context.Background(), name); err != nil {
		t.Fatalf("remove toxic %s: %v", name, err)
	}
}

// disable closes the listener: new connections are refused.
func (tp *toxicProxy) disable() { tp.p.Stop() }

// chainYAML is a config with route m: the primary (kind k at primaryAddr,
// usually a toxic proxy) then the secondary fake, directly.
func chainYAML(routeExtra string, k kind, primaryAddr string, secondary *fake) string {
	return fastPolicy + fmt.Sprintf(`
providers:
  primary: %s
  secondary: %s
routes:
  m:
%s    targets:
      - {provider: primary, model: %q}
      - {provider: secondary, model: %q}
`, providerYAML(k, primaryAddr, ""), providerYAML(secondary.kind, secondary.addr(), ""), routeExtra, modelFor(k), modelFor(secondary.kind))
}

// forKinds runs fn for each provider kind, in parallel subtests.
func forKinds(t *testing.T, fn func(t *testing.T, k kind)) {
	for _, k := range allKinds {
		t.Run(string(k), func(t *testing.T) {
			t.Parallel()
			fn(t, k)
		})
	}
}

// estimateFloor is what an adapter reports as output tokens of a stream
// cut before the upstream's final count, for the text the client saw: the
// documented estimate, and for anthropic at least message_start's
// placeholder (1 in the fake).
func estimateFloor(k kind, text string) int {
	n := exchange.EstimateTokens(len(text))
	if k == anthropicKind {
		n = max(n, 1)
	}
	return n
}

// TestToxicCutMidStreamEndsWithOneErrorEvent cuts the upstream connection
// part-way through a stream, twice over: limit_data (a clean FIN after N
// bytes) and reset_peer after the stream started (an RST). The client gets
// the chunks that made it, then exactly one interrupted error event and no
// [DONE]; the record says interrupted with the tokens seen; nothing is
// retried, on this provider or another.
func TestToxicCutMidStreamEndsWithOneErrorEvent(t *testing.T) {
	toxi := newToxiproxy()
	cuts := []struct {
		name string
		// before arms the toxic before the request; after, once the client
		// has seen three words.
		before, after func(t *testing.T, px *toxicProxy)
		delay         time.Duration
	}{
		{name: "limit_data", before: func(t *testing.T, px *toxicProxy) {
			px.toxic(t, "cut", "limit_data", "downstream", `{"bytes":4000}`)
		}},
		{name: "reset_peer mid-stream", delay: 10 * time.Millisecond,
			// reset_peer drops what it holds, so it is armed mid-stream:
			// present from the start with toxicity 0 (the proxy then sets
			// SO_LINGER 0 on the connection: the close is an RST), and
			// switched on after three words.
			before: func(t *testing.T, px *toxicProxy) {
				js := `{"name":"cut","type":"reset_peer","stream":"downstream","toxicity":0,"attributes":{"timeout":0}}`
				if _, err := px.p.Toxics.AddToxicJson(strings.NewReader(js)); err != nil {
					t.Fatal(err)
				}
			},
			after: func(t *testing.T, px *toxicProxy) {
				if _, err := px.p.Toxics.UpdateToxicJson("cut", strings.NewReader(`{"toxicity":1,"attributes":{"timeout":0}}`)); err != nil {
					t.Fatal(err)
				}
			}},
	}
	forKinds(t, func(t *testing.T, k kind) {
		for _, cut := range cuts {
			t.Run(cut.name, func(t *testing.T) {
				primary := newFake(t, k, script{words: words(400), chunkDelay: cut.delay})
				secondary := newFake(t, k, script{words: words(3)})
				px := toxi.proxy(t, primary.addr())
				cut.before(t, px)
				g := newGateway(t, chainYAML("", k, px.addr(), secondary))
				ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
				defer cancel()
				fr := newFrameReader(g.open(t, newClient(t), ctx, streamBody))
				if cut.after != nil {
					for seen := 0; seen < 3; {
						data, err := fr.next()
						if err != nil {
							t.Fatalf("stream ended after %d words: %v\n%s", seen, err, fr.raw.String())
						}
						if contentOf(data) != "" {
							seen++
						}
					}
					cut.after(t, px)
				}
				r := fr.rest()

				if r.Status != 200 {
					t.Fatalf("status %d: %s", r.Status, r.Body)
				}
				checkTerminal(t, r)
				if r.Done || len(r.Errors) != 1 {
					t.Fatalf("want one error event and no [DONE]:\n%s", r.Body)
				}
				e := r.Errors[0].Error
				if e.Category != "interrupted" || e.Provider != "primary" || !e.Retryable {
					t.Errorf("error event = %+v", e)
				}
				full := strings.Join(words(400), "")
				if r.Text == "" || !strings.HasPrefix(full, r.Text) || r.Text == full {
					t.Errorf("client text is not a proper prefix of the reply: %q", r.Text)
				}
				if len(r.Finish) != 0 {
					t.Errorf("a finish_reason reached the client of a cut stream: %v", r.Finish)
				}
				rec := g.waitRecords(t, 1)[0]
				want := estimateFloor(k, r.Text)
				if rec.Outcome != "interrupted" || rec.OutputTokens != want || !rec.Estimated || rec.Provider != "primary" {
					t.Errorf("record = %+v; want outcome interrupted with %d output tokens (estimated from %d characters)", rec, want, len(r.Text))
				}
				if e.Usage == nil || e.Usage.CompletionTokens != rec.OutputTokens {
					t.Errorf("error event usage %+v differs from the record's %d output tokens", e.Usage, rec.OutputTokens)
				}
				if len(rec.Attempts) != 1 || primary.hits.Load() != 1 || secondary.hits.Load() != 0 {
					t.Errorf("retried after the first token: attempts %+v, primary hits %d, secondary hits %d",
						rec.Attempts, primary.hits.Load(), secondary.hits.Load())
				}
			})
		}
	})
}

// TestToxicResetAndRefusedBeforeFirstByteFailOver: a connection reset on
// the first response byte, and a refused connection, are both invisible to
// the client: the target is retried (attempts: 2), then the next target
// serves a complete answer. Over several requests the retries stay within
// the retry budget's floor.
func TestToxicResetAndRefusedBeforeFirstByteFailOver(t *testing.T) {
	toxi := newToxiproxy()
	forKinds(t, func(t *testing.T, k kind) {
		for _, fault := range []string{"reset_peer", "refused"} {
			t.Run(fault, func(t *testing.T) {
				primary := newFake(t, k, script{words: words(5)})
				secondary := newFake(t, k, script{words: words(5)})
				px := toxi.proxy(t, primary.addr())
				if fault == "refused" {
					px.disable()
				} else {
					px.toxic(t, "reset", "reset_peer", "downstream", `{"timeout":0}`)
				}
				// A breaker that does not trip, so every request walks the chain.
				g := newGateway(t, "breaker: {consecutive_failures: 1000, min_requests: 1000}\n"+chainYAML("", k, px.addr(), secondary))
				c := newClient(t)
				const n = 8
				for i := 0; i < n; i++ {
					body := streamBody
					if i%2 == 1 || k == bedrockKind && testkit.RaceEnabled && i > 0 {
						body = chatBody // one bedrock stream per SDK client under -race (see oneBedrockStream)
					}
					r := g.post(t, c, body)
					if r.Status != 200 || r.Header.Get("x-gateway-provider") != "secondary" || r.Header.Get("x-gateway-fallback-depth") != "1" {
						t.Fatalf("request %d: status %d provider %q: %s", i, r.Status, r.Header.Get("x-gateway-provider"), r.Body)
					}
					if r.SSE {
						checkTerminal(t, r)
						if !r.Done || r.Text != strings.Join(words(5), "") {
							t.Fatalf("request %d: incomplete stream %q:\n%s", i, r.Text, r.Body)
						}
					} else if !strings.Contains(r.Body, "w0 w1 w2 w3 w4") || strings.Contains(r.Body, `"error"`) {
						t.Fatalf("request %d: body %s", i, r.Body)
					}
				}
				recs := g.waitRecords(t, n)
				primaryCalls := 0
				for _, rec := range recs {
					if rec.Outcome != "ok" || rec.FallbackDepth != 1 {
						t.Errorf("record = %+v", rec)
					}
					for _, a := range rec.Attempts {
						if a.Target == "primary/"+modelFor(k) {
							primaryCalls++
							if a.Category != "unavailable" || a.Phase != "first_byte" {
								t.Errorf("primary attempt = %+v; want unavailable at first_byte", a)
							}
						}
					}
				}
				// n first attempts plus at most the budget's floor of retries
				// (min_retries_per_minute: 5), and at least one retry.
				if primaryCalls < n+1 || primaryCalls > n+5 {
					t.Errorf("%d attempts on the primary for %d requests; want between %d and %d", primaryCalls, n, n+1, n+5)
				}
				if fault == "refused" && primary.hits.Load() != 0 {
					t.Errorf("refused proxy let %d requests through", primary.hits.Load())
				}
				if fault == "reset_peer" && int(primary.hits.Load()) != primaryCalls {
					t.Errorf("primary saw %d requests, the gateway counted %d attempts", primary.hits.Load(), primaryCalls)
				}
			})
		}
	})
}

// TestToxicStalledUpstreamFirstTokenTimeoutFailsOver: the primary's
// answer never arrives (timeout toxic: every byte dropped). The first-token
// timeout fires and the next target serves; the client sees one clean
// stream.
func TestToxicStalledUpstreamFirstTokenTimeoutFailsOver(t *testing.T) {
	toxi := newToxiproxy()
	forKinds(t, func(t *testing.T, k kind) {
		primary := newFake(t, k, script{words: words(5)})
		secondary := newFake(t, k, script{words: words(5)})
		px := toxi.proxy(t, primary.addr())
		px.toxic(t, "stall", "timeout", "downstream", `{"timeout":0}`)
		const ftt = 400 * time.Millisecond
		g := newGateway(t, chainYAML("    first_token_timeout: 400ms\n    attempts: 1\n", k, px.addr(), secondary))
		start := time.Now()
		r := g.post(t, newClient(t), streamBody)
		took := time.Since(start)
		if r.Status != 200 || r.Header.Get("x-gateway-provider") != "secondary" {
			t.Fatalf("status %d provider %q: %s", r.Status, r.Header.Get("x-gateway-provider"), r.Body)
		}
		checkTerminal(t, r)
		if !r.Done || r.Text != strings.Join(words(5), "") {
			t.Fatalf("incomplete stream:\n%s", r.Body)
		}
		if took < ftt {
			t.Errorf("answered in %v: the first-token timeout (%v) cannot have fired", took, ftt)
		}
		if took > 15*time.Second {
			t.Errorf("answered in %v: the stall was not bounded by the first-token timeout", took)
		}
		rec := g.waitRecords(t, 1)[0]
		if len(rec.Attempts) != 2 || rec.Attempts[0].Category != "timeout" || rec.Attempts[0].Target != "primary/"+modelFor(k) {
			t.Errorf("attempts = %+v", rec.Attempts)
		}
		if h := g.health(t, "primary/"+modelFor(k)); h.Breaker.Failures != 1 {
			t.Errorf("the stall should count once against the primary's breaker: %+v", h.Breaker)
		}
	})
}

// TestToxicIdleGapMidStreamEndsWithTimeoutEvent: after some chunks have
// reached the client, the upstream link gets 5 s of latency. The idle
// timeout (400 ms) ends the stream with a timeout error event well before
// the delayed bytes could arrive, and the upstream call is cancelled.
func TestToxicIdleGapMidStreamEndsWithTimeoutEvent(t *testing.T) {
	toxi := newToxiproxy()
	forKinds(t, func(t *testing.T, k kind) {
		primary := newFake(t, k, script{words: words(300), chunkDelay: 20 * time.Millisecond})
		secondary := newFake(t, k, script{words: words(3)})
		px := toxi.proxy(t, primary.addr())
		g := newGateway(t, chainYAML("    idle_timeout: 400ms\n    first_token_timeout: 10s\n", k, px.addr(), secondary))
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		fr := newFrameReader(g.open(t, newClient(t), ctx, streamBody))
		seen := 0
		for seen < 3 {
			data, err := fr.next()
			if err != nil {
				t.Fatalf("stream ended after %d words: %v\n%s", seen, err, fr.raw.String())
			}
			if contentOf(data) != "" {
				seen++
			}
		}
		px.toxic(t, "gap", "latency", "downstream", `{"latency":5000}`)
		start := time.Now()
		r := fr.rest()
		took := time.Since(start)
		checkTerminal(t, r)
		if r.Done || len(r.Errors) != 1 || r.Errors[0].Error.Category != "timeout" {
			t.Fatalf("want one timeout error event:\n%s", r.Body)
		}
		if took > 4*time.Second {
			t.Errorf("the stream took %v to end after the gap began: the idle timeout did not fire", took)
		}
		rec := g.waitRecords(t, 1)[0]
		if rec.Outcome != "timeout" || rec.OutputTokens == 0 || secondary.hits.Load() != 0 {
			t.Errorf("record = %+v, secondary hits %d", rec, secondary.hits.Load())
		}
		waitFor(t, 10*time.Second, func() bool { return primary.cancelled.Load() == 1 },
			func() string { return "the upstream call was not cancelled after the idle timeout" })
	})
}

// TestToxicSlowTrickleWithinLimitsIsComplete: a slow link (bandwidth
// 16 KB/s) that also slices the bytes into tiny TCP segments and delays
// them a little stays within the timeouts: every stream is complete and
// byte-correct, and the breaker counts no failure.
func TestToxicSlowTrickleWithinLimitsIsComplete(t *testing.T) {
	toxi := newToxiproxy()
	forKinds(t, func(t *testing.T, k kind) {
		reply := words(30)
		primary := newFake(t, k, script{words: reply, chunkDelay: 5 * time.Millisecond})
		secondary := newFake(t, k, script{words: words(3)})
		px := toxi.proxy(t, primary.addr())
		px.toxic(t, "bw", "bandwidth", "downstream", `{"rate":16}`)
		px.toxic(t, "slicer", "slicer", "downstream", `{"average_size":24,"size_variation":16,"delay":500}`)
		px.toxic(t, "lat", "latency", "upstream", `{"latency":20,"jitter":10}`)
		g := newGateway(t, chainYAML("    idle_timeout: 2s\n    first_token_timeout: 5s\n", k, px.addr(), secondary))
		c := newClient(t)
		n := 3
		if k == bedrockKind && testkit.RaceEnabled {
			n = 1 // see oneBedrockStream
		}
		for i := 0; i < n; i++ {
			r := g.post(t, c, `{"model":"m","stream":true,"stream_options":{"include_usage":true},"messages":[{"role":"user","content":"hi"}]}`)
			if r.Status != 200 || r.Header.Get("x-gateway-provider") != "primary" {
				t.Fatalf("status %d provider %q: %s", r.Status, r.Header.Get("x-gateway-provider"), r.Body)
			}
			checkTerminal(t, r)
			if !r.Done || r.Text != strings.Join(reply, "") || len(r.Finish) != 1 || r.Finish[0] != "stop" {
				t.Fatalf("stream %d not complete and correct: text %q finish %v", i, r.Text, r.Finish)
			}
		}
		r := g.post(t, c, chatBody)
		if r.Status != 200 || !strings.Contains(r.Body, strings.Join(reply, "")) {
			t.Fatalf("non-streaming: status %d: %s", r.Status, r.Body)
		}
		for _, rec := range g.waitRecords(t, n+1) {
			if rec.Outcome != "ok" || len(rec.Attempts) != 1 || rec.OutputTokens != len(reply) || rec.Estimated {
				t.Errorf("record = %+v", rec)
			}
		}
		h := g.health(t, "primary/"+modelFor(k))
		if h.Breaker.State != "closed" || h.Breaker.Failures != 0 || h.Breaker.Requests != n+1 {
			t.Errorf("a slow but healthy link moved the breaker: %+v", h.Breaker)
		}
		if secondary.hits.Load() != 0 {
			t.Errorf("fell back %d times on a slow but healthy link", secondary.hits.Load())
		}
	})
}

// freeAddr returns a loopback address nothing listens on.
func freeAddr(t testing.TB) string {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	a := l.Addr().String()
	l.Close()
	return a
}

// oneBedrockStream: under the race detector, the tests open at most one
// ConverseStream per SDK client (per gateway provider). smithy-go v1.28.9
// shares one event-stream Codec between all the stream readers of a
// client, and the reader goroutine of a finished stream may still be
// running when the next stream starts: the detector reports a race in
// the dependency (see TestBedrockConcurrentStreamsStayApart).

// TestBedrockConcurrentStreamsStayApart runs concurrent ConverseStream
// calls through one gateway (one SDK client): every stream gets its own
// text, whole. Under the race detector it is skipped: smithy-go v1.28.9
// shares one event-stream Codec (internal/eventstream/codec.go:68, the
// payloadBuf reset and the lazily created decoder) between every stream
// reader of a client, a data race the detector reports. It is benign as
// the code stands (payloadBuf is always nil, the decoder stateless), and
// this test is what would catch it turning into streams mixing bytes.
func TestBedrockConcurrentStreamsStayApart(t *testing.T) {
	if testkit.RaceEnabled {
		t.Skip("smithy-go v1.28.9 races on the event-stream Codec shared by concurrent ConverseStream readers (a dependency bug, reported); run without -race")
	}
	up := newFake(t, bedrockKind, script{})
	up.set(func(_ *http.Request, body []byte, _ int) script {
		// Each request streams words derived from its own prompt.
		m := regexp.MustCompile(`stream-(\d+)`).FindSubmatch(body)
		ws := make([]string, 40)
		for i := range ws {
			ws[i] = fmt.Sprintf(" s%s-%d", m[1], i)
		}
		return script{words: ws, chunkDelay: time.Millisecond}
	})
	g := newGateway(t, fastPolicy+fmt.Sprintf(`
providers:
  br: %s
routes:
  m: {targets: [{provider: br, model: %q}]}
`, providerYAML(bedrockKind, up.addr(), ""), modelFor(bedrockKind)))
	c := newClient(t)
	var wg sync.WaitGroup
	for i := 0; i < 24; i++ {
		wg.Add(1)
		go func(i int) {
			defer wg.Done()
			r, err := g.tryPost(c, fmt.Sprintf(`{"model":"m","stream":true,"messages":[{"role":"user","content":"stream-%d"}]}`, i))
			if err != nil {
				t.Error(err)
				return
			}
			var want strings.Builder
			for j := 0; j < 40; j++ {
				fmt.Fprintf(&want, " s%d-%d", i, j)
			}
			if r.Status != 200 || !r.Done || r.Text != want.String() {
				t.Errorf("stream %d: status %d done %v text %q", i, r.Status, r.Done, r.Text)
			}
		}(i)
	}
	wg.Wait()
}
