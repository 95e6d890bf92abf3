package server_test

import (
	"bytes"
	"context"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"runtime"
	"strconv"
	"strings"
	"testing"

	"github.com/llmgw/llmgw/pkg/config"
	"github.com/llmgw/llmgw/pkg/provider"
	"github.com/llmgw/llmgw/pkg/provider/openaicompat"
	providerregistry "github.com/llmgw/llmgw/pkg/provider/registry"
	"github.com/llmgw/llmgw/pkg/server"
)

// These benchmarks run whole requests through the gateway's handler
// (parse, route, breaker, key, the openai adapter, relay, log line) with
// the upstream answered in memory, so that allocations and CPU are the
// gateway's own. Run with -benchmem; scripts/bench.sh runs them and also
// takes a CPU profile of BenchmarkServerChat.

const benchHead = `{"id":"chatcmpl-B9MBs8CjcvOU2jLn4n570S5qMJKcT","object":"chat.completion.chunk","created":1741569952,"model":"gpt-4.1-2025-04-14","service_tier":"default","system_fingerprint":"fp_c7ca0ebaca","choices":`

var (
	benchRoleFrame    = "data: " + benchHead + `[{"index":0,"delta":{"role":"assistant","content":"","refusal":null},"logprobs":null,"finish_reason":null}],"usage":null}` + "\n\n"
	benchContentFrame = "data: " + benchHead + `[{"index":0,"delta":{"content":" world"},"logprobs":null,"finish_reason":null}],"usage":null}` + "\n\n"
	benchFinishFrame  = "data: " + benchHead + `[{"index":0,"delta":{},"logprobs":null,"finish_reason":"stop"}],"usage":null}` + "\n\n"
	benchUsageFrame   = "data: " + benchHead + `[],"usage":{"prompt_tokens":19,"completion_tokens":64,"total_tokens":83,"prompt_tokens_details":{"cached_tokens":0,"audio_tokens":0}}}` + "\n\n"
	benchDoneFrame    = "data: [DONE]\n\n"

	benchCompletion = `{"id":"chatcmpl-B9MBs8CjcvOU2jLn4n570S5qMJKcT","object":"chat.completion","created":1741569952,"model":"gpt-4.1-2025-04-14","choices":[{"index":0,"message":{"role":"assistant","content":"Gateways by the sea, tides of tokens come and go, one stream, many shores.","refusal":null,"annotations":[]},"logprobs":null,"finish_reason":"stop"}],"usage":{"prompt_tokens":19,"completion_tokens":18,"total_tokens":37,"prompt_tokens_details":{"cached_tokens":0,"audio_tokens":0},"completion_tokens_details":{"reasoning_tokens":0,"audio_tokens":0,"accepted_prediction_tokens":0,"rejected_prediction_tokens":0}},"service_tier":"default","system_fingerprint":"fp_c7ca0ebaca"}`
)

// benchStreamBody is an upstream SSE body with n content chunks, produced
// as it is read (n may be b.N).
type benchStreamBody struct {
	r       strings.Reader
	left    int // content chunks still to produce
	stage   int // 0 role, 1 content, 2 tail, 3 done
	pending string
}

func newBenchStreamBody(n int) *benchStreamBody { return &benchStreamBody{left: n} }

// Read implements io.Reader.
func (s *benchStreamBody) Read(p []byte) (int, error) {
	for s.r.Len() == 0 {
		switch {
		case s.stage == 0:
			s.r.Reset(benchRoleFrame)
			s.stage = 1
		case s.stage == 1 && s.left > 0:
			s.r.Reset(benchContentFrame)
			s.left--
		case s.stage == 1:
			s.r.Reset(benchFinishFrame + benchUsageFrame + benchDoneFrame)
			s.stage = 2
		default:
			return 0, io.EOF
		}
	}
	return s.r.Read(p)
}

// Close implements io.Closer.
func (s *benchStreamBody) Close() error { return nil }

// benchUpstream answers the adapter's requests in memory: SSE with
// chunks content chunks when the request streams, the completion otherwise.
type benchUpstream struct{ chunks int }

// RoundTrip implements http.RoundTripper.
func (u *benchUpstream) RoundTrip(req *http.Request) (*http.Response, error) {
	io.Copy(io.Discard, req.Body)
	req.Body.Close()
	resp := &http.Response{Status: "200 OK", StatusCode: http.StatusOK, Proto: "HTTP/1.1", ProtoMajor: 1, ProtoMinor: 1, Request: req}
	if req.Header.Get("Accept") == "text/event-stream" {
		resp.Header = http.Header{"Content-Type": {"text/event-stream; charset=utf-8"}}
		resp.Body, resp.ContentLength = newBenchStreamBody(u.chunks), -1
		return resp, nil
	}
	resp.Header = http.Header{"Content-Type": {"application/json"}}
	resp.Body, resp.ContentLength = io.NopCloser(strings.NewReader(benchCompletion)), int64(len(benchCompletion))
	return resp, nil
}

// benchHandler returns the gateway handler with one route, "bench", whose
// only target is an openai provider answered by up.
func benchHandler(b *testing.B, up http.RoundTripper) http.Handler {
	b.Helper()
	hc := &http.Client{Transport: up}
	return handlerWith(b, map[string]providerregistry.Factory{
		"openai": func(_ context.Context, id string, p *config.Provider) (provider.Provider, error) {
			return openaicompat.New(id, p, hc)
		},
	}, `
providers:
  up: {kind: openai, base_url: "http://upstream.invalid/v1"}
routes:
  bench:
    targets: [{provider: up, model: gpt-4.1-2025-04-14}]
`)
}

// handlerWith builds the gateway handler of config yaml with the given
// provider kinds' factories in place of the registry's (restored after).
func handlerWith(b testing.TB, factories map[string]providerregistry.Factory, yaml string) http.Handler {
	b.Helper()
	for kind, f := range factories {
		orig := providerregistry.Factories[kind]
		providerregistry.Factories[kind] = f
		defer func() { providerregistry.Factories[kind] = orig }()
	}
	cfg, err := config.Parse([]byte(yaml))
	if err != nil {
		b.Fatal(err)
	}
	h, err := server.New(context.Background(), cfg, server.Options{Logger: slog.New(slog.NewJSONHandler(io.Discard, nil))})
	if err != nil {
		b.Fatal(err)
	}
	return h
}

// benchWriter is a ResponseWriter that keeps nothing but counts: like
// httptest.ResponseRecorder without the buffer, reusable across requests.
type benchWriter struct {
	h      http.Header
	status int
	writes int
	bytes  int
}

// Header implements http.ResponseWriter.
func (w *benchWriter) Header() http.Header { return w.h }

// WriteHeader implements http.ResponseWriter.
func (w *benchWriter) WriteHeader(code int) {
	if w.status == 0 {
		w.status = code
	}
}

// Write implements http.ResponseWriter: it counts and drops.
func (w *benchWriter) Write(p []byte) (int, error) {
	if w.status == 0 {
		w.status = http.StatusOK
	}
	w.writes++
	w.bytes += len(p)
	return len(p), nil
}

// Flush implements http.Flusher.
func (w *benchWriter) Flush() {}

func (w *benchWriter) reset() {
	clear(w.h)
	w.status, w.writes, w.bytes = 0, 0, 0
}

// benchBody is a reusable request body.
type benchBody struct{ bytes.Reader }

// Close implements io.Closer.
func (*benchBody) Close() error { return nil }

// benchRequestBody returns a chat request for route bench of about size
// bytes.
func benchRequestBody(stream bool, size int) []byte {
	head := `{"model":"bench",`
	if stream {
		head += `"stream":true,`
	}
	head += `"messages":[{"role":"system","content":"You are a helpful assistant."},{"role":"user","content":"`
	tail := `"}]}`
	n := max(1, size-len(head)-len(tail))
	const words = "the quick brown fox jumps over the lazy dog "
	return []byte(head + strings.Repeat(words, n/len(words)+1)[:n] + tail)
}

// serveBench runs one request per iteration through h and checks it.
func serveBench(b *testing.B, h http.Handler, payload []byte, stream bool, frames int) {
	req := httptest.NewRequest(http.MethodPost, "/v1/chat/completions", nil)
	req.Header.Set("Content-Type", "application/json")
	if stream {
		req.Header.Set("Accept", "text/event-stream")
	}
	body := &benchBody{}
	w := &benchWriter{h: http.Header{}}
	b.ReportAllocs()
	b.SetBytes(int64(len(payload)))
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	n := 0
	for b.Loop() {
		w.reset()
		body.Reset(payload)
		req.Body, req.ContentLength = body, int64(len(payload))
		h.ServeHTTP(w, req)
		if w.status != http.StatusOK || (stream && w.writes != frames) {
			b.Fatalf("status %d, %d writes (want %d)", w.status, w.writes, frames)
		}
		n++
	}
	runtime.ReadMemStats(&after)
	if stream {
		b.ReportMetric(float64(after.Mallocs-before.Mallocs)/float64(n*frames), "allocs/frame")
	}
}

// BenchmarkServerChat is one whole request through the gateway handler:
// non-streaming with a ~200 B and a ~10 KB body, and streaming with 64
// content chunks (allocs/op is per request; allocs/frame spreads them over
// the frames written).
func BenchmarkServerChat(b *testing.B) {
	const chunks = 64
	h := benchHandler(b, &benchUpstream{chunks: chunks})
	for _, size := range []int{200, 10 << 10} {
		b.Run("nonstream_"+sizeName(size), func(b *testing.B) {
			serveBench(b, h, benchRequestBody(false, size), false, 1)
		})
	}
	// Writes: the head (role and first content, read before the commit)
	// in one, each further content frame, finish, [DONE] (the usage chunk
	// is dropped: the client did not ask for it).
	b.Run("stream_64chunks", func(b *testing.B) {
		serveBench(b, h, benchRequestBody(true, 200), true, chunks+2)
	})
}

func sizeName(n int) string {
	if n >= 1<<10 {
		return strconv.Itoa(n>>10) + "KB"
	}
	return strconv.Itoa(n) + "B"
}

// BenchmarkServerStreamChunk is the marginal cost of one relayed chunk
// through the whole gateway (adapter stream, failover session, SSE encoder,
// write and flush): one streaming request whose upstream sends b.N content
// chunks, so the per-request cost vanishes as b.N grows and allocs/op is
// allocations per chunk.
func BenchmarkServerStreamChunk(b *testing.B) {
	up := &benchUpstream{}
	h := benchHandler(b, up)
	payload := benchRequestBody(true, 200)
	req := httptest.NewRequest(http.MethodPost, "/v1/chat/completions", bytes.NewReader(payload))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "text/event-stream")
	w := &benchWriter{h: http.Header{}}
	up.chunks = b.N
	b.ReportAllocs()
	b.SetBytes(int64(len(benchContentFrame)))
	b.ResetTimer()
	h.ServeHTTP(w, req)
	b.StopTimer()
	if w.status != http.StatusOK || w.writes != b.N+2 { // the head (role + first content) is one write
		b.Fatalf("status %d, %d writes (want %d)", w.status, w.writes, b.N+2)
	}
}
