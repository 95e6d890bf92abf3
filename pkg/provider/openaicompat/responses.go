package openaicompat

import (
	"context"
	"encoding/json"
	"io"
	"strings"

	"github.com/tidwall/gjson"

	"github.com/llmgw/llmgw/pkg/exchange"
	"github.com/llmgw/llmgw/pkg/gwerr"
	"github.com/llmgw/llmgw/pkg/provider"
	"github.com/llmgw/llmgw/pkg/sse"
	"github.com/llmgw/llmgw/pkg/wire/chatwire"
	"github.com/llmgw/llmgw/pkg/wire/jsonb"
	"github.com/llmgw/llmgw/pkg/wire/responseswire"
)

// Responses API passthrough, for a provider configured with
// apis: [responses, ...] serving a client of the Responses API: the
// client's body goes to {base_url}/responses with only the model, the
// admitted output cap (as max_output_tokens) and the target's prompt
// variant (instructions, temperature, top_p) rewritten byte for byte, and
// the upstream's events come back as Raw events, untouched:
//
//	output_text / refusal / function_call_arguments / reasoning / custom tool input deltas,
//	output_item.added of a non-message item, any output_item.done -> HasContent
//	response.completed, response.incomplete                        -> HasFinish (and the usage)
//	response.failed, an error event                                -> the upstream's in-band error
//	the stream ending before a terminal event                      -> interrupted
//	a frame that is not valid JSON                                 -> skipped and counted
//
// A non-streaming call yields one Raw event holding the whole body.

// responsesVariant is how a target's prompt variant edits a Responses
// body: instructions (a string, or input items: a developer message is
// added first or last), temperature, top_p and max_output_tokens.
var responsesVariant = chatwire.MemberVariant{Prompt: "instructions", MaxTokens: "max_output_tokens",
	Block: func(text string) []byte {
		return append(append([]byte(`{"type":"message","role":"developer","content":`), jsonb.AppendString(nil, text)...), '}')
	}}

// sendResponses makes one Responses API passthrough attempt.
func (a *Adapter) sendResponses(ctx context.Context, call *provider.Call) (provider.Stream, error) {
	rq := call.Req
	src, err := chatwire.ApplyVariantMembers(rq.Body, call.Variant(), responsesVariant)
	if err != nil {
		return nil, err
	}
	body, err := chatwire.Rewrite(make([]byte, 0, len(src)+64), src,
		chatwire.RewriteOptions{Model: call.Model(), MaxTokens: call.OutputLimit(), MaxTokensField: "max_output_tokens"})
	if err == nil {
		body, err = call.ServiceTierMember(body)
	}
	if err != nil {
		return nil, err
	}
	resp, err := a.send.Post(ctx, call, a.responsesEndpoint, body, rq.Stream, nil)
	if err != nil {
		return nil, err
	}
	ct := resp.Header.Get("Content-Type")
	if rq.Stream && !strings.HasPrefix(ct, "application/json") {
		return &responsesStream{id: a.id, body: resp.Body, r: sse.NewReader(resp.Body, 0), reqBytes: len(body), trace: &rq.Trace}, nil
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(resp.Body) // bounded by the client (provider.LimitTransport)
	if err != nil {
		return nil, provider.TransportError(ctx, a.id, err)
	}
	ri := responseswire.InspectResponsesBody(data)
	switch {
	case ri.Failed:
		return nil, provider.InBandError(a.id, ri.ErrorCode)
	case rq.Stream:
		return nil, &gwerr.Error{Category: gwerr.Unavailable, Message: "provider answered a streaming request with JSON", Provider: a.id}
	case !json.Valid(data):
		return nil, &gwerr.Error{Category: gwerr.Unavailable, Message: "provider returned malformed JSON", Provider: a.id}
	case ri.Queued && background(rq.Body):
		// A background response, accepted: its answer is polled later. It
		// is an answer (never retried: a retry would start a second job),
		// committed with no tokens known yet (usage estimated from the
		// request; see docs/responses.md).
		return provider.Events(exchange.TokenUsage{Input: exchange.EstimateTokens(len(body)), Estimated: true},
			exchange.Event{Kind: exchange.Raw, Raw: data, RawAPI: exchange.Responses, Flags: exchange.HasContent | exchange.HasFinish | exchange.Whole}), nil
	case !ri.Content && ri.Usage.OutputTokens == 0 && ri.FinishReason != "length" && ri.FinishReason != "content_filter":
		return nil, provider.EmptyResponse(a.id)
	}
	u := responsesUsage(ri.Usage)
	if !ri.HasUsage {
		u = exchange.TokenUsage{Input: exchange.EstimateTokens(len(body)), Output: exchange.EstimateTokens(ri.Chars), Estimated: true}
	}
	flags := exchange.HasContent | exchange.Whole
	if ri.Finish {
		flags |= exchange.HasFinish
	}
	return provider.Events(u, exchange.Event{Kind: exchange.Raw, Raw: data, RawAPI: exchange.Responses, Flags: flags, Finish: ri.FinishReason}), nil
}

// background reports whether a Responses request asks for a background
// response (background: true).
func background(body []byte) bool {
	return gjson.GetBytes(body, "background").Type == gjson.True
}

// responsesUsage maps Responses API usage to the gateway's.
func responsesUsage(ru responseswire.ResponsesUsage) exchange.TokenUsage {
	return exchange.TokenUsage{Input: ru.InputTokens, Output: ru.OutputTokens, CacheRead: ru.CachedTokens, Reasoning: ru.ReasoningTokens,
		Tier:  ru.ServiceTier,
		Tools: exchange.ToolCalls{WebSearch: ru.WebSearchCalls, FileSearch: ru.FileSearchCalls, CodeExecution: ru.CodeInterpreterCalls}}
}

// responsesStream relays a Responses API event stream as Raw events.
type responsesStream struct {
	id       string
	body     io.ReadCloser
	r        *sse.Reader
	reqBytes int
	usage    exchange.TokenUsage
	hasUsage bool
	chars    int
	done     bool
	// trace counts the malformed frames skipped, on the request's trace.
	trace *exchange.Trace
}

// Next implements provider.Stream.
func (s *responsesStream) Next() (exchange.Event, error) {
	if s.done {
		return exchange.Event{}, io.EOF
	}
	for {
		f, err := s.r.Next()
		if err != nil {
			if err == io.EOF {
				return exchange.Event{}, provider.Interrupted(s.id, "ended without response.completed", nil)
			}
			return exchange.Event{}, provider.Interrupted(s.id, "broke off", err)
		}
		if len(f.Data) == 0 || string(f.Data) == "[DONE]" {
			continue
		}
		if !gjson.ValidBytes(f.Data) {
			// A malformed frame is never forwarded: skip it, count it, and
			// keep the stream if it otherwise completes.
			s.trace.MalformedFrames++
			continue
		}
		ri := responseswire.InspectResponsesEvent(f.Event, f.Data)
		if ri.HasUsage {
			s.hasUsage, s.usage = true, responsesUsage(ri.Usage)
		}
		if ri.Failed {
			return exchange.Event{}, provider.InBandError(s.id, ri.ErrorCode)
		}
		s.chars += ri.Chars
		var flags exchange.Flags
		if ri.Content {
			flags |= exchange.HasContent
		}
		if ri.Finish {
			flags |= exchange.HasFinish
			s.done = true // the terminal event: nothing follows it
		}
		return exchange.Event{Kind: exchange.Raw, Raw: f.Data, RawAPI: exchange.Responses, Flags: flags, Finish: ri.FinishReason}, nil
	}
}

// Usage implements provider.Stream.
func (s *responsesStream) Usage() exchange.TokenUsage {
	if s.hasUsage {
		return s.usage
	}
	return exchange.TokenUsage{Input: exchange.EstimateTokens(s.reqBytes), Output: exchange.EstimateTokens(s.chars), Estimated: true}
}

// Close implements provider.Stream.
func (s *responsesStream) Close() error { return s.body.Close() }
