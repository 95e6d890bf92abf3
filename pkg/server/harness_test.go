package server_test

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/llmgw/llmgw/pkg/exchange"
	"github.com/llmgw/llmgw/pkg/internal/testkit"

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"

	"github.com/llmgw/llmgw/pkg/config"
	"github.com/llmgw/llmgw/pkg/server"
)

// upstream is a scripted OpenAI-compatible provider on loopback.
type upstream struct {
	*httptest.Server
	hits    atomic.Int32
	mu      sync.Mutex
	bodies  [][]byte
	headers []http.Header
}

func newUpstream(t *testing.T, fn func(w http.ResponseWriter, r *http.Request, body []byte, n int)) *upstream {
	t.Helper()
	u := &upstream{}
	u.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		u.mu.Lock()
		u.bodies = append(u.bodies, body)
		u.headers = append(u.headers, r.Header.Clone())
		u.mu.Unlock()
		n := int(u.hits.Add(1))
		fn(w, r, body, n)
	}))
	t.Cleanup(u.Close)
	return u
}

func (u *upstream) body(i int) []byte {
	u.mu.Lock()
	defer u.mu.Unlock()
	return u.bodies[i]
}

func (u *upstream) header(i int) http.Header {
	u.mu.Lock()
	defer u.mu.Unlock()
	return u.headers[i]
}

// A real OpenAI stream, byte for byte in shape: role chunk, content chunks,
// finish chunk, usage chunk (when asked), [DONE].
const chunkHead = `{"id":"chatcmpl-B9MBs8CjcvOU2jLn4n570S5qMJKcT","object":"chat.completion.chunk","created":1741569952,"model":"gpt-4.1-2025-04-14","service_tier":"default","system_fingerprint":"fp_c7ca0ebaca","choices":`

func contentChunk(s string, includeUsage bool) string {
	tail := "}"
	if includeUsage {
		tail = `,"usage":null}`
	}
	return "data: " + chunkHead + fmt.Sprintf(`[{"index":0,"delta":{"content":%q},"logprobs":null,"finish_reason":null}]`, s) + tail + "\n\n"
}

func roleChunk(includeUsage bool) string {
	tail := "}"
	if includeUsage {
		tail = `,"usage":null}`
	}
	return "data: " + chunkHead + `[{"index":0,"delta":{"role":"assistant","content":"","refusal":null},"logprobs":null,"finish_reason":null}]` + tail + "\n\n"
}

func finishChunk(reason string, includeUsage bool) string {
	tail := "}"
	if includeUsage {
		tail = `,"usage":null}`
	}
	return "data: " + chunkHead + `[{"index":0,"delta":{},"logprobs":null,"finish_reason":"` + reason + `"}]` + tail + "\n\n"
}

func usageChunk(in, out, cached int) string {
	return "data: " + chunkHead + fmt.Sprintf(`[],"usage":{"prompt_tokens":%d,"completion_tokens":%d,"total_tokens":%d,"prompt_tokens_details":{"cached_tokens":%d,"audio_tokens":0},"completion_tokens_details":{"reasoning_tokens":0,"audio_tokens":0,"accepted_prediction_tokens":0,"rejected_prediction_tokens":0}}}`, in, out, in+out, cached) + "\n\n"
}

// streamReply writes a complete OpenAI stream of the words.
func streamReply(w http.ResponseWriter, words []string, withUsage bool) {
	w.Header().Set("Content-Type", "text/event-stream; charset=utf-8")
	w.WriteHeader(200)
	fl := w.(http.Flusher)
	io.WriteString(w, roleChunk(withUsage))
	for _, s := range words {
		io.WriteString(w, contentChunk(s, withUsage))
		fl.Flush()
	}
	io.WriteString(w, finishChunk("stop", withUsage))
	if withUsage {
		io.WriteString(w, usageChunk(11, len(words), 3))
	}
	io.WriteString(w, "data: [DONE]\n\n")
}

// okStream answers streams and non-streams with "Hello world".
func okStream(w http.ResponseWriter, r *http.Request, body []byte) {
	if bytes.Contains(body, []byte(`"stream":true`)) {
		streamReply(w, []string{"Hello", " world"}, bytes.Contains(body, []byte(`"include_usage":true`)))
		return
	}
	completionReply(w, "Hello world")
}

func completionReply(w http.ResponseWriter, text string) {
	w.Header().Set("Content-Type", "application/json")
	fmt.Fprintf(w, `{"id":"chatcmpl-B9MHDbslfkBeAs8l4bebGdFOJ6PeG","object":"chat.completion","created":1741570283,"model":"gpt-4.1-2025-04-14","choices":[{"index":0,"message":{"role":"assistant","content":%q,"refusal":null,"annotations":[]},"logprobs":null,"finish_reason":"stop"}],"usage":{"prompt_tokens":1117,"completion_tokens":46,"total_tokens":1163,"prompt_tokens_details":{"cached_tokens":0,"audio_tokens":0},"completion_tokens_details":{"reasoning_tokens":0,"audio_tokens":0,"accepted_prediction_tokens":0,"rejected_prediction_tokens":0}},"service_tier":"default","system_fingerprint":"fp_fc9f1d7035"}`, text)
}

// okHandler answers every request well.
func okHandler(w http.ResponseWriter, r *http.Request, body []byte, _ int) { okStream(w, r, body) }

// syncBuffer is a goroutine-safe buffer (log sinks, process output).
type syncBuffer = testkit.SyncBuffer

// gateway is a gateway under test, served on loopback.
type gateway struct {
	*httptest.Server
	h       *server.Handler
	logs    *syncBuffer
	mu      sync.Mutex
	records []exchange.Record
	sleeps  []time.Duration
}

func (g *gateway) recs() []exchange.Record {
	g.mu.Lock()
	defer g.mu.Unlock()
	return append([]exchange.Record(nil), g.records...)
}

// waitRecs waits until n usage records exist: a record is written after
// the response's last byte, so a client may finish first. They come in
// the order their requests started (a stream's record may be written after
// the next request's), so tests sending requests one after another can
// index them.
func (g *gateway) waitRecs(t *testing.T, n int) []exchange.Record {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for len(g.recs()) < n && time.Now().Before(deadline) {
		time.Sleep(2 * time.Millisecond)
	}
	recs := g.recs()
	if len(recs) != n {
		t.Fatalf("%d usage records, want %d", len(recs), n)
	}
	sort.SliceStable(recs, func(i, j int) bool { return recs[i].Time.Before(recs[j].Time) })
	return recs
}

func (g *gateway) waits() []time.Duration {
	g.mu.Lock()
	defer g.mu.Unlock()
	return append([]time.Duration(nil), g.sleeps...)
}

// newGateway serves a config given as YAML. Sleeps between retries are
// recorded and skipped so tests never wait on backoff.
func newGateway(t *testing.T, yaml string, opts ...func(*server.Options)) *gateway {
	t.Helper()
	cfg, err := config.Parse([]byte(yaml))
	if err != nil {
		t.Fatalf("config: %v", err)
	}
	g := &gateway{logs: &syncBuffer{}}
	o := server.Options{
		Logger: slog.New(slog.NewJSONHandler(g.logs, nil)),
		Upstream: server.Upstream{
			Sleep: func(ctx context.Context, d time.Duration) error {
				g.mu.Lock()
				g.sleeps = append(g.sleeps, d)
				g.mu.Unlock()
				return ctx.Err()
			},
		},
		Reporting: server.Reporting{
			Record: func(_ context.Context, r *exchange.Record) {
				g.mu.Lock()
				g.records = append(g.records, *r)
				g.mu.Unlock()
			},
		},
	}
	for _, f := range opts {
		f(&o)
	}
	h, err := server.New(context.Background(), cfg, o)
	if err != nil {
		t.Fatalf("server.New: %v", err)
	}
	g.h = h
	g.Server = httptest.NewServer(h)
	t.Cleanup(g.Close)
	return g
}

// sdk returns the official OpenAI client pointed at the gateway.
func (g *gateway) sdk() openai.Client {
	return openai.NewClient(option.WithBaseURL(g.URL+"/v1"), option.WithAPIKey("sk-client-test"), option.WithMaxRetries(0))
}

// post sends a raw chat completion request.
func (g *gateway) post(t *testing.T, body string, hdr ...string) *http.Response {
	t.Helper()
	req, _ := http.NewRequest(http.MethodPost, g.URL+"/v1/chat/completions", strings.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	for i := 0; i+1 < len(hdr); i += 2 {
		req.Header.Set(hdr[i], hdr[i+1])
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("post: %v", err)
	}
	t.Cleanup(func() { resp.Body.Close() })
	return resp
}

func readAll(t *testing.T, r io.Reader) string {
	t.Helper()
	b, err := io.ReadAll(r)
	if err != nil {
		t.Fatalf("read: %v", err)
	}
	return string(b)
}

// fastPolicy keeps test configs from waiting on real backoff.
const fastPolicy = `
defaults:
  backoff_base: 1ms
  backoff_max: 2ms
`

// oneRoute returns a config with one route "m" over the given targets,
// each an OpenAI-compatible provider at a URL.
func oneRoute(extra string, urls ...string) string {
	var b strings.Builder
	b.WriteString(fastPolicy)
	b.WriteString("providers:\n")
	for i, u := range urls {
		fmt.Fprintf(&b, "  p%d: {kind: openai, base_url: %q}\n", i, u+"/v1")
	}
	b.WriteString("routes:\n  m:\n")
	b.WriteString(extra)
	b.WriteString("    targets:\n")
	for i := range urls {
		fmt.Fprintf(&b, "      - {provider: p%d, model: up-model-%d}\n", i, i)
	}
	return b.String()
}

const chatBody = `{"model":"m","messages":[{"role":"user","content":"hi"}]}`
const streamBody = `{"model":"m","stream":true,"messages":[{"role":"user","content":"hi"}]}`
