package chatwire

import (
	"encoding/json"
	"strconv"

	"github.com/llmgw/llmgw/pkg/wire/jsonb"
)

// This file holds the OUTPUT side of the OpenAI wire format for translators
// of non-OpenAI upstreams (Anthropic, Bedrock): a correct JSON string
// appender, an append-based chat.completion.chunk builder that reuses one
// buffer per stream, and the chat.completion body types for non-streaming
// responses.

// AppendUsage appends the OpenAI usage object for u. total_tokens is
// written as given; prompt_tokens_details is written when it is set.
func AppendUsage(dst []byte, u Usage) []byte {
	dst = append(dst, `{"prompt_tokens":`...)
	dst = strconv.AppendInt(dst, int64(u.PromptTokens), 10)
	dst = append(dst, `,"completion_tokens":`...)
	dst = strconv.AppendInt(dst, int64(u.CompletionTokens), 10)
	dst = append(dst, `,"total_tokens":`...)
	dst = strconv.AppendInt(dst, int64(u.TotalTokens), 10)
	if d := u.PromptTokensDetails; d != nil {
		dst = append(dst, `,"prompt_tokens_details":{"cached_tokens":`...)
		dst = strconv.AppendInt(dst, int64(d.CachedTokens), 10)
		if d.CacheCreationTokens != 0 {
			dst = append(dst, `,"cache_creation_tokens":`...)
			dst = strconv.AppendInt(dst, int64(d.CacheCreationTokens), 10)
		}
		dst = append(dst, '}')
	}
	return append(dst, '}')
}

// ChunkBuilder writes chat.completion.chunk JSON objects (one choice, index
// 0) for a translator of a non-OpenAI stream. It is a small per-stream
// object: it reuses one buffer, so each method's result is valid only until
// the next call on the builder (an encoder writes it out before the next event).
// The zero value is usable after Reset.
type ChunkBuilder struct {
	head []byte // {"id":...,"object":"chat.completion.chunk","created":N,"model":...
	buf  []byte
}

// Reset sets the id (e.g. "chatcmpl-..."), created time (Unix seconds) and
// model that every following chunk carries.
func (b *ChunkBuilder) Reset(id string, created int64, model string) {
	h := append(b.head[:0], `{"id":`...)
	h = jsonb.AppendString(h, id)
	h = append(h, `,"object":"chat.completion.chunk","created":`...)
	h = strconv.AppendInt(h, created, 10)
	h = append(h, `,"model":`...)
	h = jsonb.AppendString(h, model)
	b.head = h
	if cap(b.buf) == 0 {
		b.buf = make([]byte, 0, 512)
	}
}

// delta starts a chunk with one choice and an open delta object.
func (b *ChunkBuilder) delta() []byte {
	d := append(b.buf[:0], b.head...)
	return append(d, `,"choices":[{"index":0,"delta":{`...)
}

// end closes the delta and the chunk, with finish_reason null.
func (b *ChunkBuilder) end(d []byte) []byte {
	d = append(d, `},"finish_reason":null}]}`...)
	b.buf = d
	return d
}

// Role returns the first chunk of a stream: delta {"role":"assistant","content":""}.
func (b *ChunkBuilder) Role() []byte {
	return b.end(append(b.delta(), `"role":"assistant","content":""`...))
}

// Content returns a chunk whose delta carries generated text.
func (b *ChunkBuilder) Content(text string) []byte {
	d := append(b.delta(), `"content":`...)
	return b.end(jsonb.AppendString(d, text))
}

// Reasoning returns a chunk whose delta carries reasoning text as
// reasoning_content (the field DeepSeek, vLLM and others use).
func (b *ChunkBuilder) Reasoning(text string) []byte {
	d := append(b.delta(), `"reasoning_content":`...)
	return b.end(jsonb.AppendString(d, text))
}

// Refusal returns a chunk whose delta carries refusal text.
func (b *ChunkBuilder) Refusal(text string) []byte {
	d := append(b.delta(), `"refusal":`...)
	return b.end(jsonb.AppendString(d, text))
}

// ToolCallStart returns the chunk that opens tool call number index (0, 1,
// 2... in order of appearance): its id, type function, name and empty
// arguments.
func (b *ChunkBuilder) ToolCallStart(index int, id, name string) []byte {
	d := append(b.delta(), `"tool_calls":[{"index":`...)
	d = strconv.AppendInt(d, int64(index), 10)
	d = append(d, `,"id":`...)
	d = jsonb.AppendString(d, id)
	d = append(d, `,"type":"function","function":{"name":`...)
	d = jsonb.AppendString(d, name)
	return b.end(append(d, `,"arguments":""}}]`...))
}

// ToolCallArguments returns a chunk that appends a fragment of the JSON
// arguments of tool call number index.
func (b *ChunkBuilder) ToolCallArguments(index int, fragment string) []byte {
	d := append(b.delta(), `"tool_calls":[{"index":`...)
	d = strconv.AppendInt(d, int64(index), 10)
	d = append(d, `,"function":{"arguments":`...)
	d = jsonb.AppendString(d, fragment)
	return b.end(append(d, `}}]`...))
}

// Finish returns the chunk that carries the finish reason (stop, length,
// tool_calls, content_filter), with an empty delta.
func (b *ChunkBuilder) Finish(reason string) []byte {
	d := append(b.buf[:0], b.head...)
	d = append(d, `,"choices":[{"index":0,"delta":{},"finish_reason":`...)
	d = jsonb.AppendString(d, reason)
	d = append(d, `}]}`...)
	b.buf = d
	return d
}

// Usage returns the include_usage chunk: choices empty, usage set.
func (b *ChunkBuilder) Usage(u Usage) []byte {
	d := append(b.buf[:0], b.head...)
	d = append(d, `,"choices":[],"usage":`...)
	d = AppendUsage(d, u)
	d = append(d, '}')
	b.buf = d
	return d
}

// Completion is a non-streaming chat.completion body, for translators that
// build one from another API's response. It is encoded with encoding/json
// (once per response, off the streaming hot path).
type Completion struct {
	ID      string             `json:"id"`
	Object  string             `json:"object"` // "chat.completion"
	Created int64              `json:"created"`
	Model   string             `json:"model"`
	Choices []CompletionChoice `json:"choices"`
	Usage   *Usage             `json:"usage,omitempty"`
}

// CompletionChoice is one choice of a Completion.
type CompletionChoice struct {
	Index        int               `json:"index"`
	Message      CompletionMessage `json:"message"`
	FinishReason string            `json:"finish_reason"`
	Logprobs     json.RawMessage   `json:"logprobs"` // always null from translators
}

// CompletionMessage is the assistant message of a CompletionChoice. Content
// is null when the reply is only tool calls.
type CompletionMessage struct {
	Role             string     `json:"role"`
	Content          *string    `json:"content"`
	ReasoningContent string     `json:"reasoning_content,omitempty"`
	Refusal          *string    `json:"refusal"`
	ToolCalls        []ToolCall `json:"tool_calls,omitempty"`
}

// Marshal encodes the completion. Logprobs left nil are written as null.
func (c *Completion) Marshal() ([]byte, error) {
	if c.Object == "" {
		c.Object = "chat.completion"
	}
	for i := range c.Choices {
		if c.Choices[i].Logprobs == nil {
			c.Choices[i].Logprobs = json.RawMessage("null")
		}
	}
	return json.Marshal(c)
}
