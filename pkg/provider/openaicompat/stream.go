package openaicompat

import (
	"io"
	"time"

	"github.com/tidwall/gjson"

	"github.com/llmgw/llmgw/pkg/exchange"
	"github.com/llmgw/llmgw/pkg/provider"
	"github.com/llmgw/llmgw/pkg/sse"
	"github.com/llmgw/llmgw/pkg/wire/chatwire"
)

var timeNow = time.Now

// sseStream reads an OpenAI SSE response. On passthrough every frame is
// relayed as the upstream sent it (a Raw event: the data bytes are never
// re-encoded); otherwise each chunk is translated into canonical events.
type sseStream struct {
	id        string
	body      io.ReadCloser
	r         *sse.Reader
	reqBytes  int
	translate bool
	tr        chunkTranslator
	usage     exchange.TokenUsage
	hasUsage  bool
	chars     int
	finished  bool
	done      bool
	// trace counts the malformed frames skipped, on the request's trace.
	trace *exchange.Trace
}

func newSSEStream(id string, body io.ReadCloser, reqBytes int, translate bool, trace *exchange.Trace) *sseStream {
	return &sseStream{id: id, body: body, r: sse.NewReader(body, 0), reqBytes: reqBytes, translate: translate, trace: trace}
}

// Next implements provider.Stream.
func (s *sseStream) Next() (exchange.Event, error) {
	if ev, ok := s.tr.pop(); ok {
		return ev, nil
	}
	if s.done {
		return exchange.Event{}, io.EOF
	}
	for {
		f, err := s.r.Next()
		if err != nil {
			if err == io.EOF {
				// A stream that finished, and sent the usage the gateway
				// always asks for, is complete even without [DONE].
				if s.finished && s.hasUsage {
					s.done = true
					return exchange.Event{}, io.EOF
				}
				return exchange.Event{}, provider.Interrupted(s.id, "ended without [DONE]", nil)
			}
			return exchange.Event{}, provider.Interrupted(s.id, "broke off", err)
		}
		if len(f.Data) == 0 {
			continue
		}
		if string(f.Data) == "[DONE]" {
			if !s.finished {
				return exchange.Event{}, provider.Interrupted(s.id, "sent [DONE] without a finish_reason", nil)
			}
			s.done = true
			return exchange.Event{}, io.EOF
		}
		if !gjson.ValidBytes(f.Data) {
			// A malformed frame is never forwarded: skip it, count it, and
			// keep the stream if it otherwise completes.
			s.trace.MalformedFrames++
			continue
		}
		ci := chatwire.InspectChunk(f.Data)
		if ci.Error || string(f.Event) == "error" {
			return exchange.Event{}, provider.InBandError(s.id, ci.ErrorType)
		}
		if ci.HasUsage {
			s.hasUsage = true
			s.usage = usageOf(ci)
		}
		s.chars += ci.Chars
		if ci.Finish {
			s.finished = true
		}
		if s.translate {
			s.tr.chunk(f.Data, s.usage)
			if ev, ok := s.tr.pop(); ok {
				return ev, nil
			}
			continue
		}
		var flags exchange.Flags
		if ci.Content {
			flags |= exchange.HasContent
		}
		if ci.Finish {
			flags |= exchange.HasFinish
		}
		if ci.UsageOnly {
			flags |= exchange.UsageOnly
		}
		return exchange.Event{Kind: exchange.Raw, Raw: f.Data, RawAPI: exchange.Chat, Flags: flags, Finish: ci.FinishReason}, nil
	}
}

// Usage implements provider.Stream.
func (s *sseStream) Usage() exchange.TokenUsage {
	if s.hasUsage {
		return s.usage
	}
	return exchange.TokenUsage{Input: exchange.EstimateTokens(s.reqBytes), Output: exchange.EstimateTokens(s.chars), Estimated: true}
}

// Close implements provider.Stream.
func (s *sseStream) Close() error { return s.body.Close() }
