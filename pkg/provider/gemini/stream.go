package gemini

import (
	"encoding/json"
	"io"

	"github.com/llmgw/llmgw/pkg/exchange"
	"github.com/llmgw/llmgw/pkg/provider"
	"github.com/llmgw/llmgw/pkg/sse"
)

// Stream translation: streamGenerateContent?alt=sse sends one
// GenerateContentResponse per SSE data frame (read as in response.go). The
// API sends no end marker: a stream is complete when a chunk carried a
// finishReason (or a blocked prompt's blockReason) and the connection then
// ended. Usage is sent as the last event, from the last usageMetadata
// seen. A stream that ends before a finishReason is provider.Interrupted; a
// frame that is not JSON is skipped and counted on the request's trace
// (MalformedFrames); an error object in a frame is an in-band error.

// sseStream reads a Gemini SSE response and yields canonical events.
type sseStream struct {
	body  io.ReadCloser
	r     *sse.Reader
	t     events
	done  bool
	trace *exchange.Trace
}

func newSSEStream(prov string, body io.ReadCloser, reqBytes int, created int64, trace *exchange.Trace) *sseStream {
	s := &sseStream{body: body, r: sse.NewReader(body, 0), trace: trace}
	s.t.prov, s.t.created, s.t.reqBytes = prov, created, reqBytes
	return s
}

// Next implements provider.Stream.
func (s *sseStream) Next() (exchange.Event, error) {
	for {
		if ev, ok := s.t.pop(); ok {
			return ev, nil
		}
		if s.done {
			return exchange.Event{}, io.EOF
		}
		f, err := s.r.Next()
		if err == io.EOF {
			if !s.t.finished {
				return exchange.Event{}, provider.Interrupted(s.t.prov, "ended without a finishReason", nil)
			}
			s.done = true
			s.t.push(exchange.Event{Kind: exchange.Usage, Usage: s.t.usage()})
			continue
		}
		if err != nil {
			return exchange.Event{}, provider.Interrupted(s.t.prov, "broke off", err)
		}
		if len(f.Data) == 0 {
			continue
		}
		var r response
		if !json.Valid(f.Data) || json.Unmarshal(f.Data, &r) != nil {
			s.trace.MalformedFrames++
			continue
		}
		if err := s.t.read(&r); err != nil {
			return exchange.Event{}, err
		}
	}
}

// Usage implements provider.Stream.
func (s *sseStream) Usage() exchange.TokenUsage { return s.t.usage() }

// Close implements provider.Stream.
func (s *sseStream) Close() error { return s.body.Close() }
