package openaicompat

import (
	"io"
	"time"

	"github.com/llmgw/llmgw/pkg/openaiwire"
	"github.com/llmgw/llmgw/pkg/provider"
	"github.com/llmgw/llmgw/pkg/sse"
)

var timeNow = time.Now

// sseStream relays an OpenAI SSE response frame by frame. Frames are passed
// through as the upstream sent them: the data bytes are never re-encoded.
type sseStream struct {
	id       string
	body     io.ReadCloser
	r        *sse.Reader
	reqBytes int
	usage    provider.Usage
	hasUsage bool
	chars    int
	finished bool
	done     bool
}

func newSSEStream(id string, body io.ReadCloser, reqBytes int) *sseStream {
	return &sseStream{id: id, body: body, r: sse.NewReader(body, 0), reqBytes: reqBytes}
}

// Next implements provider.Stream.
func (s *sseStream) Next() (provider.Frame, error) {
	if s.done {
		return provider.Frame{}, io.EOF
	}
	for {
		f, err := s.r.Next()
		if err != nil {
			if err == io.EOF {
				return provider.Frame{}, provider.Interrupted(s.id, "ended without [DONE]", nil)
			}
			return provider.Frame{}, provider.Interrupted(s.id, "broke off", err)
		}
		if len(f.Data) == 0 {
			continue
		}
		if string(f.Data) == "[DONE]" {
			if !s.finished {
				return provider.Frame{}, provider.Interrupted(s.id, "sent [DONE] without a finish_reason", nil)
			}
			s.done = true
			return provider.Frame{}, io.EOF
		}
		ci := openaiwire.InspectChunk(f.Data)
		if ci.Error || string(f.Event) == "error" {
			return provider.Frame{}, provider.InBandError(s.id, ci.ErrorType)
		}
		if ci.HasUsage {
			s.hasUsage = true
			s.usage = provider.Usage{Input: ci.Usage.PromptTokens, Output: ci.Usage.CompletionTokens}
			if ci.Usage.PromptTokensDetails != nil {
				s.usage.CacheRead = ci.Usage.PromptTokensDetails.CachedTokens
			}
		}
		s.chars += ci.Chars
		if ci.Finish {
			s.finished = true
		}
		return provider.Frame{Data: f.Data, Content: ci.Content, Finish: ci.Finish, UsageOnly: ci.UsageOnly}, nil
	}
}

// Usage implements provider.Stream.
func (s *sseStream) Usage() provider.Usage {
	if s.hasUsage {
		return s.usage
	}
	return provider.Usage{Input: provider.EstimateTokens(s.reqBytes), Output: provider.EstimateTokens(s.chars), Estimated: true}
}

// Close implements provider.Stream.
func (s *sseStream) Close() error { return s.body.Close() }
