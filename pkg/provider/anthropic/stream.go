package anthropic

import (
	"encoding/json"
	"io"
	"unicode/utf8"
	"unsafe"

	"github.com/tidwall/gjson"

	"github.com/llmgw/llmgw/pkg/anthropicwire"
	"github.com/llmgw/llmgw/pkg/openaiwire"
	"github.com/llmgw/llmgw/pkg/provider"
	"github.com/llmgw/llmgw/pkg/sse"
)

// Stream translation, Anthropic server-sent events -> OpenAI
// chat.completion.chunk frames. One event gives at most one frame:
//
//	message_start                  -> first chunk, delta {"role":"assistant","content":""}
//	content_block_start text       -> nothing (or its text, when not empty)
//	content_block_delta text_delta -> delta.content
//	content_block_start tool_use   -> delta.tool_calls[{index: i, id, type, function: {name, arguments: ""}}]
//	                                  where i counts tool_use blocks 0, 1, 2... (not Anthropic block indices)
//	content_block_delta input_json_delta -> delta.tool_calls[{index: i, function: {arguments: partial_json}}]
//	content_block_start thinking, thinking_delta -> delta.reasoning_content (signature_delta skipped)
//	content_block_stop, ping, redacted_thinking, server tool blocks, unknown events -> nothing
//	message_delta                  -> the finish chunk (stop_reason mapped by finishReason)
//	message_stop                   -> the usage chunk (choices []), then io.EOF
//	error                          -> provider.InBandError with the error's type
//
// Deltas with empty text or partial_json carry nothing and give no frame.
// A stream that ends before message_stop, or reaches message_stop without
// a stop_reason, is provider.Interrupted.

// finishReason maps an Anthropic stop_reason to OpenAI's finish_reason.
func finishReason(stop string) string {
	switch stop {
	case anthropicwire.StopMaxTokens, anthropicwire.StopModelContextWindowExceeded:
		return "length"
	case anthropicwire.StopToolUse:
		return "tool_calls"
	case anthropicwire.StopRefusal:
		return "content_filter"
	}
	return "stop" // end_turn, stop_sequence, pause_turn
}

// Kinds of content block, by Anthropic block index; a tool_use block is
// recorded as its tool call index (>= 0).
const (
	blockText     = -1
	blockThinking = -2
	blockOther    = -3
)

// translator state for one stream. It owns one output buffer (in the
// chunk builder), so a frame's Data is valid until the next event.
type streamTranslator struct {
	prov    string
	created int64
	b       openaiwire.ChunkBuilder

	started  bool // message_start seen
	finished bool // a stop_reason seen
	stopped  bool // message_stop seen: the stream is complete
	gotDelta bool // message_delta usage seen: output tokens are final

	blocks []int // by Anthropic block index: blockText, blockThinking, blockOther or a tool call index
	tools  int   // tool_use blocks seen

	u     anthropicwire.Usage
	chars int // generated characters, for an estimate when the stream is cut

	ev anthropicwire.StreamEvent // reused decode target for the rarer events
}

// bytesString views b as a string without copying; the string must not
// outlive b's contents.
func bytesString(b []byte) string {
	if len(b) == 0 {
		return ""
	}
	return unsafe.String(unsafe.SliceData(b), len(b))
}

// event translates one SSE frame. A frame with nil Data means the event
// gives no output.
func (t *streamTranslator) event(name, data []byte) (provider.Frame, error) {
	typ := bytesString(name)
	if typ == "" {
		typ = gjson.Get(bytesString(data), "type").String()
	}
	if t.stopped {
		return provider.Frame{}, nil
	}
	switch typ {
	case anthropicwire.EventContentBlockDelta: // the hot path: no allocation for plain text
		return t.delta(data)
	case anthropicwire.EventPing, anthropicwire.EventContentBlockStop:
		return provider.Frame{}, nil
	case anthropicwire.EventError:
		var e anthropicwire.ErrorResponse
		_ = json.Unmarshal(data, &e)
		return provider.Frame{}, provider.InBandError(t.prov, e.Error.Type)
	case anthropicwire.EventMessageStart, anthropicwire.EventContentBlockStart, anthropicwire.EventMessageDelta, anthropicwire.EventMessageStop:
	default:
		return provider.Frame{}, nil // unknown events are skipped, as Anthropic's versioning policy asks
	}
	t.ev = anthropicwire.StreamEvent{}
	if err := json.Unmarshal(data, &t.ev); err != nil {
		return provider.Frame{}, provider.Interrupted(t.prov, "sent a malformed "+typ+" event", err)
	}
	if typ != anthropicwire.EventMessageStart && !t.started {
		return provider.Frame{}, provider.Interrupted(t.prov, "sent "+typ+" before message_start", nil)
	}
	switch typ {
	case anthropicwire.EventMessageStart:
		return t.messageStart()
	case anthropicwire.EventContentBlockStart:
		return t.blockStart()
	case anthropicwire.EventMessageDelta:
		return t.messageDelta()
	default: // message_stop
		if !t.finished {
			return provider.Frame{}, provider.Interrupted(t.prov, "reached message_stop without a stop_reason", nil)
		}
		t.stopped = true
		return provider.Frame{Data: t.b.Usage(openAIUsage(t.u)), UsageOnly: true}, nil
	}
}

func (t *streamTranslator) messageStart() (provider.Frame, error) {
	m := t.ev.Message
	if t.started || m == nil {
		return provider.Frame{}, nil
	}
	t.started = true
	t.u = m.Usage
	t.b.Reset("chatcmpl-"+m.ID, t.created, m.Model)
	return provider.Frame{Data: t.b.Role()}, nil
}

func (t *streamTranslator) blockStart() (provider.Frame, error) {
	cb := t.ev.ContentBlock
	i := t.ev.Index
	if cb == nil || i < 0 || i > 1<<16 {
		return provider.Frame{}, provider.Interrupted(t.prov, "sent a malformed content_block_start", nil)
	}
	for len(t.blocks) <= i {
		t.blocks = append(t.blocks, blockOther)
	}
	switch cb.Type {
	case anthropicwire.BlockText:
		t.blocks[i] = blockText
		if cb.Text != "" {
			return t.text(cb.Text), nil
		}
	case anthropicwire.BlockThinking:
		t.blocks[i] = blockThinking
		if cb.Thinking != "" {
			t.chars += utf8.RuneCountInString(cb.Thinking)
			return provider.Frame{Data: t.b.Reasoning(cb.Thinking), Content: true}, nil
		}
	case anthropicwire.BlockToolUse:
		n := t.tools
		t.tools++
		t.blocks[i] = n
		t.chars += len(cb.Name)
		return provider.Frame{Data: t.b.ToolCallStart(n, cb.ID, cb.Name), Content: true}, nil
	}
	return provider.Frame{}, nil
}

func (t *streamTranslator) text(s string) provider.Frame {
	t.chars += utf8.RuneCountInString(s)
	return provider.Frame{Data: t.b.Content(s), Content: true}
}

// delta translates a content_block_delta without decoding it into a struct:
// the strings it reads point into data unless they hold escapes.
func (t *streamTranslator) delta(data []byte) (provider.Frame, error) {
	if !t.started {
		return provider.Frame{}, provider.Interrupted(t.prov, "sent content_block_delta before message_start", nil)
	}
	s := bytesString(data)
	d := gjson.Get(s, "delta")
	switch d.Get("type").Str {
	case anthropicwire.DeltaText:
		if v := d.Get("text").String(); v != "" {
			return t.text(v), nil
		}
	case anthropicwire.DeltaInputJSON:
		i := int(gjson.Get(s, "index").Int())
		if i < 0 || i >= len(t.blocks) || t.blocks[i] < 0 {
			return provider.Frame{}, nil // a server tool's input: not a client tool call
		}
		if v := d.Get("partial_json").String(); v != "" {
			t.chars += len(v)
			return provider.Frame{Data: t.b.ToolCallArguments(t.blocks[i], v), Content: true}, nil
		}
	case anthropicwire.DeltaThinking:
		if v := d.Get("thinking").String(); v != "" {
			t.chars += utf8.RuneCountInString(v)
			return provider.Frame{Data: t.b.Reasoning(v), Content: true}, nil
		}
	}
	return provider.Frame{}, nil
}

func (t *streamTranslator) messageDelta() (provider.Frame, error) {
	if u := t.ev.Usage; u != nil {
		if u.OutputTokens != nil {
			t.u.OutputTokens = *u.OutputTokens
			t.gotDelta = true
		}
		if u.InputTokens != nil {
			t.u.InputTokens = *u.InputTokens
		}
		if u.CacheReadInputTokens != nil {
			t.u.CacheReadInputTokens = *u.CacheReadInputTokens
		}
		if u.CacheCreationInputTokens != nil {
			t.u.CacheCreationInputTokens = *u.CacheCreationInputTokens
		}
	}
	if t.ev.Delta == nil || t.ev.Delta.StopReason == "" || t.finished {
		return provider.Frame{}, nil
	}
	t.finished = true
	return provider.Frame{Data: t.b.Finish(finishReason(t.ev.Delta.StopReason)), Finish: true}, nil
}

// openAIUsage maps Anthropic usage to OpenAI's: prompt_tokens counts every
// prompt token, cached or not; cached_tokens the cache reads and the
// gateway's cache_creation_tokens the cache writes.
func openAIUsage(u anthropicwire.Usage) openaiwire.Usage {
	in := u.InputTokens + u.CacheReadInputTokens + u.CacheCreationInputTokens
	ou := openaiwire.Usage{PromptTokens: in, CompletionTokens: u.OutputTokens, TotalTokens: in + u.OutputTokens}
	if u.CacheReadInputTokens > 0 || u.CacheCreationInputTokens > 0 {
		ou.PromptTokensDetails = &openaiwire.PromptTokensDetails{CachedTokens: u.CacheReadInputTokens, CacheCreationTokens: u.CacheCreationInputTokens}
	}
	return ou
}

// providerUsage maps Anthropic usage to the gateway's.
func providerUsage(u anthropicwire.Usage) provider.Usage {
	return provider.Usage{Input: u.InputTokens + u.CacheReadInputTokens + u.CacheCreationInputTokens,
		Output: u.OutputTokens, CacheRead: u.CacheReadInputTokens, CacheWrite: u.CacheCreationInputTokens}
}

// usage returns the figures counted so far.
func (t *streamTranslator) usage(reqBytes int) provider.Usage {
	if !t.started {
		return provider.Usage{Input: provider.EstimateTokens(reqBytes), Output: provider.EstimateTokens(t.chars), Estimated: true}
	}
	u := providerUsage(t.u)
	if !t.gotDelta { // cut before message_delta: the output count is message_start's placeholder
		u.Output = max(u.Output, provider.EstimateTokens(t.chars))
		u.Estimated = true
	}
	return u
}

// sseStream reads an Anthropic SSE response and yields OpenAI chunks.
type sseStream struct {
	body     io.ReadCloser
	r        *sse.Reader
	t        streamTranslator
	reqBytes int
	done     bool
}

func newSSEStream(prov string, body io.ReadCloser, reqBytes int, created int64) *sseStream {
	s := &sseStream{body: body, r: sse.NewReader(body, 0), reqBytes: reqBytes}
	s.t.prov, s.t.created = prov, created
	return s
}

// Next implements provider.Stream.
func (s *sseStream) Next() (provider.Frame, error) {
	for {
		if s.t.stopped {
			s.done = true
			return provider.Frame{}, io.EOF
		}
		f, err := s.r.Next()
		if err != nil {
			if err == io.EOF {
				return provider.Frame{}, provider.Interrupted(s.t.prov, "ended before message_stop", nil)
			}
			return provider.Frame{}, provider.Interrupted(s.t.prov, "broke off", err)
		}
		if len(f.Data) == 0 && len(f.Event) == 0 {
			continue
		}
		out, err := s.t.event(f.Event, f.Data)
		if err != nil {
			return provider.Frame{}, err
		}
		if out.Data != nil {
			return out, nil
		}
	}
}

// Usage implements provider.Stream.
func (s *sseStream) Usage() provider.Usage { return s.t.usage(s.reqBytes) }

// Close implements provider.Stream.
func (s *sseStream) Close() error { return s.body.Close() }
