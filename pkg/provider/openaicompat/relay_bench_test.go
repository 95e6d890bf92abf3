package openaicompat_test

import (
	"context"
	"io"
	"net/http"
	"runtime"
	"strings"
	"testing"

	"github.com/llmgw/llmgw/pkg/config"
	"github.com/llmgw/llmgw/pkg/exchange"
	"github.com/llmgw/llmgw/pkg/provider"
	"github.com/llmgw/llmgw/pkg/provider/openaicompat"
	"github.com/llmgw/llmgw/pkg/wire/chatwire"
)

// A chunk as OpenAI sends it (gpt-4.1, include_usage on: "usage":null).
const benchChunk = `data: {"id":"chatcmpl-B9MBs8CjcvOU2jLn4n570S5qMJKcT","object":"chat.completion.chunk","created":1741569952,"model":"gpt-4.1-2025-04-14","service_tier":"default","system_fingerprint":"fp_c7ca0ebaca","choices":[{"index":0,"delta":{"content":" world"},"logprobs":null,"finish_reason":null}],"usage":null}` + "\n\n"

const (
	benchRole   = `data: {"id":"chatcmpl-B9MBs8CjcvOU2jLn4n570S5qMJKcT","object":"chat.completion.chunk","created":1741569952,"model":"gpt-4.1-2025-04-14","service_tier":"default","system_fingerprint":"fp_c7ca0ebaca","choices":[{"index":0,"delta":{"role":"assistant","content":"","refusal":null},"logprobs":null,"finish_reason":null}],"usage":null}` + "\n\n"
	benchFinish = `data: {"id":"chatcmpl-B9MBs8CjcvOU2jLn4n570S5qMJKcT","object":"chat.completion.chunk","created":1741569952,"model":"gpt-4.1-2025-04-14","service_tier":"default","system_fingerprint":"fp_c7ca0ebaca","choices":[{"index":0,"delta":{},"logprobs":null,"finish_reason":"stop"}],"usage":null}` + "\n\n"
	benchUsage  = `data: {"id":"chatcmpl-B9MBs8CjcvOU2jLn4n570S5qMJKcT","object":"chat.completion.chunk","created":1741569952,"model":"gpt-4.1-2025-04-14","service_tier":"default","system_fingerprint":"fp_c7ca0ebaca","choices":[],"usage":{"prompt_tokens":19,"completion_tokens":64,"total_tokens":83,"prompt_tokens_details":{"cached_tokens":0,"audio_tokens":0},"completion_tokens_details":{"reasoning_tokens":0,"audio_tokens":0,"accepted_prediction_tokens":0,"rejected_prediction_tokens":0}}}` + "\n\n"
	benchDone   = "data: [DONE]\n\n"
)

var benchRequest = []byte(`{"model":"gpt-4.1","stream":true,"messages":[{"role":"system","content":"You are a helpful assistant."},{"role":"user","content":"Write a haiku about gateways and the sea, please, in English."}]}`)

// repeatBody is an endless SSE body: the same frame over and over, read
// without allocating.
type repeatBody struct {
	frame string
	off   int
}

// Read implements io.Reader.
func (r *repeatBody) Read(p []byte) (int, error) {
	n := 0
	for n < len(p) {
		c := copy(p[n:], r.frame[r.off:])
		n += c
		r.off = (r.off + c) % len(r.frame)
	}
	return n, nil
}

// Close implements io.Closer.
func (r *repeatBody) Close() error { return nil }

// memTransport answers every request in memory with a fresh body from
// newBody, as an upstream's SSE response.
type memTransport struct {
	newBody func() io.ReadCloser
}

// RoundTrip implements http.RoundTripper.
func (t *memTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	if req.Body != nil {
		io.Copy(io.Discard, req.Body)
		req.Body.Close()
	}
	return &http.Response{
		Status: "200 OK", StatusCode: http.StatusOK, Proto: "HTTP/1.1", ProtoMajor: 1, ProtoMinor: 1,
		Header:        http.Header{"Content-Type": {"text/event-stream; charset=utf-8"}},
		Body:          t.newBody(),
		ContentLength: -1, Request: req,
	}, nil
}

func benchAdapter(b *testing.B, newBody func() io.ReadCloser) (*openaicompat.Adapter, *provider.Call) {
	b.Helper()
	a, err := openaicompat.New("bench", &config.Provider{Kind: "openai", BaseURL: "http://upstream.invalid/v1"},
		&http.Client{Transport: &memTransport{newBody: newBody}})
	if err != nil {
		b.Fatal(err)
	}
	req, err := chatwire.Parse(benchRequest, chatwire.Limits{})
	if err != nil {
		b.Fatal(err)
	}
	rq := &exchange.Request{API: exchange.Chat, Body: benchRequest, Stream: req.Stream, WantsUsage: req.WantsUsage()}
	return a, &provider.Call{Req: rq, Step: config.Step{Model: "gpt-4.1-2025-04-14"}}
}

// BenchmarkRelaySSEChunk relays one OpenAI SSE content chunk through the
// openai adapter's stream (Provider.Send against an in-memory
// RoundTripper, then Stream.Next): one op is one chunk, so allocs/op is
// allocations per relayed chunk on the passthrough path (the goal is 0).
func BenchmarkRelaySSEChunk(b *testing.B) {
	a, call := benchAdapter(b, func() io.ReadCloser { return &repeatBody{frame: benchChunk} })
	s, err := a.Send(context.Background(), call)
	if err != nil {
		b.Fatal(err)
	}
	defer s.Close()
	b.ReportAllocs()
	b.SetBytes(int64(len(benchChunk)))
	for b.Loop() {
		f, err := s.Next()
		if err != nil || !f.Commits() {
			b.Fatalf("frame %+v, err %v", f, err)
		}
	}
}

// BenchmarkRelaySSEStream64 is one whole streamed response through the
// adapter: Send (body rewrite, request, response) and 64 content chunks,
// the finish chunk, the usage chunk and [DONE]. It reports allocs per
// chunk over the whole stream (Send's own allocations included) next to
// allocs per stream.
func BenchmarkRelaySSEStream64(b *testing.B) {
	const chunks = 64
	body := benchRole + strings.Repeat(benchChunk, chunks) + benchFinish + benchUsage + benchDone
	a, call := benchAdapter(b, func() io.ReadCloser { return io.NopCloser(strings.NewReader(body)) })
	ctx := context.Background()
	b.ReportAllocs()
	b.SetBytes(int64(len(body)))
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	n := 0
	for b.Loop() {
		s, err := a.Send(ctx, call)
		if err != nil {
			b.Fatal(err)
		}
		frames := 0
		for {
			_, err := s.Next()
			if err == io.EOF {
				break
			}
			if err != nil {
				b.Fatal(err)
			}
			frames++
		}
		s.Close()
		if frames != chunks+3 {
			b.Fatalf("relayed %d frames, want %d", frames, chunks+3)
		}
		n++
	}
	runtime.ReadMemStats(&after)
	b.ReportMetric(float64(after.Mallocs-before.Mallocs)/float64(n*(chunks+3)), "allocs/chunk")
}
