// Package messageswire holds the Anthropic Messages API wire format as the
// gateway uses it: the request it sends (POST /v1/messages), the response
// it reads, the server-sent stream events and the error body, and the one
// reader of its answers (read.go), shared by the Anthropic adapter and the
// Messages ingress. The translation of requests lives in
// pkg/provider/anthropic.
package messageswire

import "encoding/json"

// DefaultVersion is the anthropic-version header sent when the provider's
// options do not name one.
const DefaultVersion = "2023-06-01"

// Roles of a message.
const (
	RoleUser      = "user"
	RoleAssistant = "assistant"
)

// Content block types.
const (
	BlockText             = "text"
	BlockImage            = "image"
	BlockDocument         = "document"
	BlockToolUse          = "tool_use"
	BlockToolResult       = "tool_result"
	BlockThinking         = "thinking"
	BlockRedactedThinking = "redacted_thinking"
	// BlockServerToolUse is a call of a tool Anthropic runs (web search,
	// code execution, ...).
	BlockServerToolUse = "server_tool_use"
)

// Stream event types: the "event:" line of each SSE frame and the "type"
// member of its data.
const (
	EventMessageStart      = "message_start"
	EventContentBlockStart = "content_block_start"
	EventContentBlockDelta = "content_block_delta"
	EventContentBlockStop  = "content_block_stop"
	EventMessageDelta      = "message_delta"
	EventMessageStop       = "message_stop"
	EventPing              = "ping"
	EventError             = "error"
)

// Delta types of a content_block_delta event.
const (
	DeltaText      = "text_delta"
	DeltaInputJSON = "input_json_delta"
	DeltaThinking  = "thinking_delta"
	DeltaSignature = "signature_delta"
)

// Stop reasons.
const (
	StopEndTurn                    = "end_turn"
	StopMaxTokens                  = "max_tokens"
	StopStopSequence               = "stop_sequence"
	StopToolUse                    = "tool_use"
	StopPauseTurn                  = "pause_turn"
	StopRefusal                    = "refusal"
	StopModelContextWindowExceeded = "model_context_window_exceeded"
)

// Request is the body of POST /v1/messages.
type Request struct {
	Model string `json:"model"`
	// ServiceTier is the target's service tier (auto, standard_only).
	ServiceTier   string         `json:"service_tier,omitempty"`
	MaxTokens     int            `json:"max_tokens"`
	System        []ContentBlock `json:"system,omitempty"` // text blocks only
	Messages      []Message      `json:"messages"`
	Stream        bool           `json:"stream,omitempty"`
	StopSequences []string       `json:"stop_sequences,omitempty"`
	Temperature   *float64       `json:"temperature,omitempty"`
	TopP          *float64       `json:"top_p,omitempty"`
	TopK          *int           `json:"top_k,omitempty"`
	Tools         []Tool         `json:"tools,omitempty"`
	ToolChoice    *ToolChoice    `json:"tool_choice,omitempty"`
	Metadata      *Metadata      `json:"metadata,omitempty"`
	Thinking      *Thinking      `json:"thinking,omitempty"`
}

// Thinking is the extended-thinking option: Type enabled (with
// BudgetTokens), adaptive or disabled.
type Thinking struct {
	Type         string `json:"type"`
	BudgetTokens int    `json:"budget_tokens,omitempty"`
}

// Message is one turn of the conversation. Roles alternate in practice:
// consecutive turns of one role are merged by the translator.
type Message struct {
	Role    string         `json:"role"`
	Content []ContentBlock `json:"content"`
}

// ContentBlock is one block of a message, of the system prompt, of a
// tool_result or of a response. Type says which fields are set:
//
//	text:              Text
//	image, document:   Source
//	tool_use:          ID, Name, Input
//	tool_result:       ToolUseID, Content, IsError
//	thinking:          Thinking, Signature
//	redacted_thinking: Data
//
// A document may have a Title, a Context and Citations ({"enabled":true});
// a text block's Citations are the citations of an earlier answer (an
// array).
//
// CacheControl (e.g. {"type":"ephemeral"}) marks a prompt-cache breakpoint
// on any request block. Text blocks are never empty: the API rejects them.
type ContentBlock struct {
	Type         string          `json:"type"`
	Text         string          `json:"text,omitempty"`
	Source       *Source         `json:"source,omitempty"`
	ID           string          `json:"id,omitempty"`
	Name         string          `json:"name,omitempty"`
	Input        json.RawMessage `json:"input,omitempty"`
	ToolUseID    string          `json:"tool_use_id,omitempty"`
	Content      []ContentBlock  `json:"content,omitempty"`
	IsError      bool            `json:"is_error,omitempty"`
	Thinking     string          `json:"thinking,omitempty"`
	Signature    string          `json:"signature,omitempty"`
	Data         string          `json:"data,omitempty"`
	Title        string          `json:"title,omitempty"`
	Context      string          `json:"context,omitempty"`
	Citations    json.RawMessage `json:"citations,omitempty"`
	CacheControl json.RawMessage `json:"cache_control,omitempty"`
}

// Source is where an image or document block's bytes come from: inline
// base64 (Type "base64", MediaType, Data), plain text (Type "text",
// MediaType "text/plain", Data) or a URL (Type "url", URL).
type Source struct {
	Type      string `json:"type"`
	MediaType string `json:"media_type,omitempty"`
	Data      string `json:"data,omitempty"`
	URL       string `json:"url,omitempty"`
}

// Tool is a client tool definition. InputSchema is a JSON Schema whose type
// is object.
type Tool struct {
	Name         string          `json:"name"`
	Description  string          `json:"description,omitempty"`
	InputSchema  json.RawMessage `json:"input_schema"`
	CacheControl json.RawMessage `json:"cache_control,omitempty"`
}

// ToolChoice is tool_choice: Type auto, any, tool (with Name) or none.
// DisableParallelToolUse limits the model to one tool call (not for none).
type ToolChoice struct {
	Type                   string `json:"type"`
	Name                   string `json:"name,omitempty"`
	DisableParallelToolUse bool   `json:"disable_parallel_tool_use,omitempty"`
}

// Metadata is the request's metadata; UserID is an opaque end-user id.
type Metadata struct {
	UserID string `json:"user_id,omitempty"`
}

// Response is a non-streaming Messages response, and the message of a
// message_start event (with empty content).
type Response struct {
	ID           string         `json:"id"`
	Type         string         `json:"type"` // "message"
	Role         string         `json:"role"`
	Model        string         `json:"model"`
	Content      []ContentBlock `json:"content"`
	StopReason   string         `json:"stop_reason,omitempty"`
	StopSequence *string        `json:"stop_sequence,omitempty"`
	Usage        Usage          `json:"usage"`
}

// Usage is the token usage of a response. InputTokens excludes the cached
// prompt tokens, which are counted separately as read from or written to
// the cache.
type Usage struct {
	InputTokens              int `json:"input_tokens"`
	OutputTokens             int `json:"output_tokens"`
	CacheCreationInputTokens int `json:"cache_creation_input_tokens,omitempty"`
	CacheReadInputTokens     int `json:"cache_read_input_tokens,omitempty"`
	// ServerToolUse counts the server-side tool calls billed per use.
	ServerToolUse ServerToolUse `json:"server_tool_use,omitzero"`
	// CacheCreation splits CacheCreationInputTokens by cache lifetime.
	CacheCreation CacheCreation `json:"cache_creation,omitzero"`
	// ServiceTier is the tier that served the request (standard,
	// priority, batch).
	ServiceTier string `json:"service_tier,omitempty"`
}

// CacheCreation is a usage's cache_creation: the cache writes by lifetime.
type CacheCreation struct {
	Ephemeral5mInputTokens int `json:"ephemeral_5m_input_tokens,omitempty"`
	Ephemeral1hInputTokens int `json:"ephemeral_1h_input_tokens,omitempty"`
}

// ServerToolUse is a usage's server_tool_use: the billed server-side tool
// requests (web search, web fetch).
type ServerToolUse struct {
	WebSearchRequests int `json:"web_search_requests,omitempty"`
	WebFetchRequests  int `json:"web_fetch_requests,omitempty"`
}

// DeltaUsage is the usage of a message_delta event: cumulative figures, of
// which output_tokens is always present and the others only in newer API
// versions (nil when absent).
type DeltaUsage struct {
	InputTokens              *int `json:"input_tokens,omitempty"`
	OutputTokens             *int `json:"output_tokens,omitempty"`
	CacheCreationInputTokens *int `json:"cache_creation_input_tokens,omitempty"`
	CacheReadInputTokens     *int `json:"cache_read_input_tokens,omitempty"`
}

// StreamEvent is the data of one server-sent event. Type says which fields
// are set:
//
//	message_start:       Message
//	content_block_start: Index, ContentBlock
//	content_block_delta: Index, Delta (text, partial_json, thinking, signature)
//	content_block_stop:  Index
//	message_delta:       Delta (stop_reason, stop_sequence), Usage
//	message_stop, ping:  nothing
//	error:               Error
type StreamEvent struct {
	Type         string        `json:"type"`
	Message      *Response     `json:"message,omitempty"`
	Index        int           `json:"index"`
	ContentBlock *ContentBlock `json:"content_block,omitempty"`
	Delta        *Delta        `json:"delta,omitempty"`
	Usage        *DeltaUsage   `json:"usage,omitempty"`
	Error        *ErrorDetail  `json:"error,omitempty"`
}

// Delta is the delta of a content_block_delta event (Type text_delta,
// input_json_delta, thinking_delta or signature_delta) or of a
// message_delta event (StopReason, StopSequence).
type Delta struct {
	Type         string  `json:"type,omitempty"`
	Text         string  `json:"text,omitempty"`
	PartialJSON  string  `json:"partial_json,omitempty"`
	Thinking     string  `json:"thinking,omitempty"`
	Signature    string  `json:"signature,omitempty"`
	StopReason   string  `json:"stop_reason,omitempty"`
	StopSequence *string `json:"stop_sequence,omitempty"`
}

// ErrorResponse is an error body, {"type":"error","error":{...}}, and the
// data of an error stream event.
type ErrorResponse struct {
	Type  string      `json:"type"`
	Error ErrorDetail `json:"error"`
}

// ErrorDetail is an error's type (invalid_request_error,
// authentication_error, permission_error, not_found_error,
// request_too_large, rate_limit_error, api_error, overloaded_error) and
// message.
type ErrorDetail struct {
	Type    string `json:"type"`
	Message string `json:"message"`
}
