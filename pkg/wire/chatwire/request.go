// Package chatwire holds the OpenAI Chat Completions wire format as the
// gateway sees it: a validating view of the request, a byte-level rewriter
// that changes only what the gateway must change, zero-copy inspection of
// streamed chunks, and the error envelope.
package chatwire

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"strings"
	"unicode/utf8"

	"github.com/llmgw/llmgw/pkg/gwerr"
	"github.com/llmgw/llmgw/pkg/wire/jsonb"
)

// ChatRequest is the validated view of a client's chat completion request.
// The gateway forwards the client's own bytes to OpenAI-compatible upstreams;
// this struct exists to validate them and to feed translators for other APIs.
// Fields the gateway does not know are not decoded here and are never lost.
type ChatRequest struct {
	Model               string             `json:"model"`
	Messages            []Message          `json:"messages"`
	Stream              bool               `json:"stream,omitempty"`
	StreamOptions       *StreamOptions     `json:"stream_options,omitempty"`
	N                   *int               `json:"n,omitempty"`
	MaxTokens           *int               `json:"max_tokens,omitempty"`
	MaxCompletionTokens *int               `json:"max_completion_tokens,omitempty"`
	Temperature         *float64           `json:"temperature,omitempty"`
	TopP                *float64           `json:"top_p,omitempty"`
	PresencePenalty     *float64           `json:"presence_penalty,omitempty"`
	FrequencyPenalty    *float64           `json:"frequency_penalty,omitempty"`
	Seed                *int64             `json:"seed,omitempty"`
	Stop                StopList           `json:"stop,omitempty"`
	Tools               []Tool             `json:"tools,omitempty"`
	ToolChoice          *ToolChoice        `json:"tool_choice,omitempty"`
	ParallelToolCalls   *bool              `json:"parallel_tool_calls,omitempty"`
	ResponseFormat      *ResponseFormat    `json:"response_format,omitempty"`
	User                string             `json:"user,omitempty"`
	Logprobs            *bool              `json:"logprobs,omitempty"`
	TopLogprobs         *int               `json:"top_logprobs,omitempty"`
	LogitBias           map[string]float64 `json:"logit_bias,omitempty"`
	Modalities          []string           `json:"modalities,omitempty"`
	Audio               json.RawMessage    `json:"audio,omitempty"`
	Metadata            map[string]string  `json:"metadata,omitempty"`
	ReasoningEffort     string             `json:"reasoning_effort,omitempty"`
	Store               *bool              `json:"store,omitempty"`
}

// StreamOptions is the stream_options object.
type StreamOptions struct {
	IncludeUsage bool `json:"include_usage,omitempty"`
}

// StopList is the stop field: a string or an array of up to 4 strings.
type StopList []string

// UnmarshalJSON accepts a string, an array of strings or null.
func (s *StopList) UnmarshalJSON(b []byte) error {
	b = bytes.TrimSpace(b)
	if string(b) == "null" {
		*s = nil
		return nil
	}
	if len(b) > 0 && b[0] == '"' {
		var one string
		if err := json.Unmarshal(b, &one); err != nil {
			return err
		}
		*s = StopList{one}
		return nil
	}
	var many []string
	if err := json.Unmarshal(b, &many); err != nil {
		return fieldTypeError("stop", "a string or an array of strings")
	}
	*s = many
	return nil
}

// Message is one chat message.
type Message struct {
	Role       string          `json:"role"`
	Content    Content         `json:"content"`
	Name       string          `json:"name,omitempty"`
	ToolCalls  []ToolCall      `json:"tool_calls,omitempty"`
	ToolCallID string          `json:"tool_call_id,omitempty"`
	Refusal    *string         `json:"refusal,omitempty"`
	CacheCtl   json.RawMessage `json:"cache_control,omitempty"` // Anthropic prompt caching, carried to providers that support it
}

// Content is a message's content: a plain string, or an array of parts.
// IsParts tells which form the client used.
type Content struct {
	Text    string
	Parts   []ContentPart
	IsParts bool
	Null    bool
}

// UnmarshalJSON accepts a string, an array of parts or null.
func (c *Content) UnmarshalJSON(b []byte) error {
	b = bytes.TrimSpace(b)
	switch {
	case string(b) == "null":
		*c = Content{Null: true}
		return nil
	case len(b) > 0 && b[0] == '"':
		c.IsParts = false
		if text, ok := plainJSONString(b); ok {
			c.Text = text
			return nil
		}
		return json.Unmarshal(b, &c.Text)
	case len(b) > 0 && b[0] == '[':
		c.IsParts = true
		return json.Unmarshal(b, &c.Parts)
	}
	return fieldTypeError("content", "a string, an array of content parts or null")
}

// plainJSONString decodes a JSON string literal that needs no unescaping:
// quoted, no backslash, valid UTF-8 (its text is
// then the bytes between the quotes). It reports false for every other
// literal, which json.Unmarshal decodes instead. Message content is by far
// the largest part of a request: this saves decoding it twice (the
// decoder has already checked the whole document when it calls
// UnmarshalJSON, and json.Unmarshal would check and scan it again).
func plainJSONString(b []byte) (string, bool) {
	if len(b) < 2 || b[0] != '"' || b[len(b)-1] != '"' {
		return "", false
	}
	in := b[1 : len(b)-1]
	// The decoder calls UnmarshalJSON with a literal it has validated: no
	// raw control character or unescaped quote can be in it. Without a
	// backslash it needs no unescaping; invalid UTF-8 (which json.Unmarshal
	// replaces with U+FFFD) goes the slow way.
	if bytes.IndexByte(in, '\\') >= 0 || bytes.IndexByte(in, '"') >= 0 || !utf8.Valid(in) {
		return "", false
	}
	return string(in), true
}

// MarshalJSON writes the form the client used.
func (c Content) MarshalJSON() ([]byte, error) {
	switch {
	case c.IsParts:
		return json.Marshal(c.Parts)
	case c.Null:
		return []byte("null"), nil
	}
	return json.Marshal(c.Text)
}

// PlainText returns the concatenated text of the content (text parts only).
func (c Content) PlainText() string {
	if !c.IsParts {
		return c.Text
	}
	var sb strings.Builder
	for _, p := range c.Parts {
		if p.Type == "text" {
			sb.WriteString(p.Text)
		}
	}
	return sb.String()
}

// ContentPart is one part of an array content.
type ContentPart struct {
	Type       string          `json:"type"`
	Text       string          `json:"text,omitempty"`
	ImageURL   *ImageURL       `json:"image_url,omitempty"`
	InputAudio json.RawMessage `json:"input_audio,omitempty"`
	File       json.RawMessage `json:"file,omitempty"`
	Refusal    string          `json:"refusal,omitempty"`
	CacheCtl   json.RawMessage `json:"cache_control,omitempty"`
}

// ImageURL is an image part's address: an https URL or a data URL.
type ImageURL struct {
	URL    string `json:"url"`
	Detail string `json:"detail,omitempty"`
}

// ResponseFormat is response_format.
type ResponseFormat struct {
	Type       string          `json:"type"`
	JSONSchema json.RawMessage `json:"json_schema,omitempty"`
}

// Limits bounds what Parse accepts.
type Limits struct {
	MaxDepth     int // deepest nesting of arrays/objects; 0 means 64
	MaxMessages  int // 0 means 10,000
	MaxOutTokens int // ceiling on max_tokens; 0 means 10,000,000
}

// redirectFields are fields some clients and gateways use to choose an
// upstream address or credential. The gateway never takes an upstream address
// or key from a request, so their presence is an error rather than a no-op.
var redirectFields = map[string]bool{
	"api_base": true, "base_url": true, "api_key": true, "api_version": true, "azure_endpoint": true,
	"custom_llm_provider": true, "endpoint": true, "organization": true, "extra_headers": true,
}

// knownFields are the JSON names of ChatRequest's fields.
var knownFields = jsonb.FieldNames(ChatRequest{})

// foldsToField reports the known or redirect field that key k matches the
// way encoding/json matches names (strings.EqualFold, Unicode folding
// included: "ſtream" is "stream") without being that field.
func foldsToField(k string) (string, bool) {
	if knownFields[k] || redirectFields[k] {
		return "", false
	}
	for _, set := range []map[string]bool{knownFields, redirectFields} {
		for f := range set {
			if strings.EqualFold(k, f) {
				return f, true
			}
		}
	}
	return "", false
}

var validRoles = map[string]bool{"system": true, "developer": true, "user": true, "assistant": true, "tool": true, "function": true}

// Parse validates a chat completion request body and returns its view. Every
// failure is an invalid_request *gwerr.Error naming the field.
func Parse(body []byte, lim Limits) (*ChatRequest, error) {
	if lim.MaxDepth == 0 {
		lim.MaxDepth = 64
	}
	if lim.MaxMessages == 0 {
		lim.MaxMessages = 10000
	}
	if lim.MaxOutTokens == 0 {
		lim.MaxOutTokens = 10_000_000
	}
	if len(bytes.TrimSpace(body)) == 0 {
		return nil, gwerr.New(gwerr.InvalidRequest, "request body is empty; expected a JSON object")
	}
	if !utf8.Valid(body) {
		return nil, gwerr.New(gwerr.InvalidRequest, "request body is not valid UTF-8")
	}
	if d := maxDepth(body); d > lim.MaxDepth {
		return nil, gwerr.New(gwerr.InvalidRequest, "request JSON is nested %d levels deep; the limit is %d", d, lim.MaxDepth)
	}
	if body[skipSpace(body, 0)] != '{' {
		return nil, gwerr.New(gwerr.InvalidRequest, "request body must be a JSON object")
	}
	// Unmarshal checks the whole document's syntax before decoding (no
	// separate json.Valid pass). A type error is reported after the key
	// checks below, which take precedence.
	var req ChatRequest
	decodeErr := json.Unmarshal(body, &req)
	var syntax *json.SyntaxError
	if errors.As(decodeErr, &syntax) {
		return nil, gwerr.New(gwerr.InvalidRequest, "request body is not valid JSON")
	}
	keys, err := topLevelKeys(body)
	if err != nil {
		return nil, err
	}
	for k := range keys {
		// encoding/json matches field names case-insensitively, upstreams do
		// not: {"MODEL": ...} would route on one model and send another.
		if f, ok := foldsToField(k); ok {
			return nil, gwerr.New(gwerr.InvalidRequest, "field %q must be written %q (field names are case-sensitive)", k, f).WithParam(k)
		}
		if redirectFields[k] {
			return nil, gwerr.New(gwerr.InvalidRequest, "field %q is not accepted: the gateway chooses upstream addresses and credentials from its own config", k).WithParam(k)
		}
	}
	// Nested objects get the same refusal (after the top-level checks,
	// whose messages name the known field).
	if err := jsonb.CheckKeys(body); err != nil {
		return nil, err
	}
	if decodeErr != nil {
		return nil, decodeError(decodeErr)
	}
	if err := req.validate(lim); err != nil {
		return nil, err
	}
	req.keepRawTools(body)
	return &req, nil
}

func (r *ChatRequest) validate(lim Limits) error {
	bad := func(param, format string, args ...any) error {
		return gwerr.New(gwerr.InvalidRequest, format, args...).WithParam(param)
	}
	if strings.TrimSpace(r.Model) == "" {
		return bad("model", "model is required")
	}
	if len(r.Messages) == 0 {
		return bad("messages", "messages must be a non-empty array")
	}
	if len(r.Messages) > lim.MaxMessages {
		return bad("messages", "too many messages: %d (limit %d)", len(r.Messages), lim.MaxMessages)
	}
	for i, m := range r.Messages {
		p := fmt.Sprintf("messages[%d]", i)
		if !validRoles[m.Role] {
			return bad(p+".role", "%s.role %q is not one of system, developer, user, assistant, tool", p, m.Role)
		}
		if m.Role == "tool" && m.ToolCallID == "" {
			return bad(p+".tool_call_id", "%s is a tool message without tool_call_id", p)
		}
		if m.Role != "assistant" && len(m.ToolCalls) > 0 {
			return bad(p+".tool_calls", "%s: only assistant messages carry tool_calls", p)
		}
		if m.Content.Null && m.Role != "assistant" {
			return bad(p+".content", "%s.content is null; only assistant messages may omit content", p)
		}
		for j, part := range m.Content.Parts {
			pp := fmt.Sprintf("%s.content[%d]", p, j)
			switch part.Type {
			case "text":
			case "image_url":
				if part.ImageURL == nil || part.ImageURL.URL == "" {
					return bad(pp+".image_url", "%s: image_url.url is required", pp)
				}
			case "input_audio", "file", "refusal":
			default:
				return bad(pp+".type", "%s.type %q is not a known content part type", pp, part.Type)
			}
		}
	}
	checkInt := func(name string, v *int, lo, hi int) error {
		if v != nil && (*v < lo || *v > hi) {
			return bad(name, "%s must be between %d and %d, got %d", name, lo, hi, *v)
		}
		return nil
	}
	checkFloat := func(name string, v *float64, lo, hi float64) error {
		if v != nil && (math.IsNaN(*v) || *v < lo || *v > hi) {
			return bad(name, "%s must be between %g and %g", name, lo, hi)
		}
		return nil
	}
	for _, err := range []error{
		checkInt("max_tokens", r.MaxTokens, 1, lim.MaxOutTokens),
		checkInt("max_completion_tokens", r.MaxCompletionTokens, 1, lim.MaxOutTokens),
		checkInt("n", r.N, 1, 128),
		checkInt("top_logprobs", r.TopLogprobs, 0, 20),
		checkFloat("temperature", r.Temperature, 0, 2),
		checkFloat("top_p", r.TopP, 0, 1),
		checkFloat("presence_penalty", r.PresencePenalty, -2, 2),
		checkFloat("frequency_penalty", r.FrequencyPenalty, -2, 2),
	} {
		if err != nil {
			return err
		}
	}
	if len(r.Stop) > 4 {
		return bad("stop", "stop takes at most 4 sequences")
	}
	for i, t := range r.Tools {
		switch {
		case t.Type == "":
			return bad(fmt.Sprintf("tools[%d].type", i), "tools[%d].type is required", i)
		case t.Type == "function" && t.Function.Name == "":
			return bad(fmt.Sprintf("tools[%d].function.name", i), "tools[%d].function.name is required", i)
		}
		if t.Type != "function" {
			continue // other tool types pass through; only function names have the providers' rule
		}
		if err := checkFunctionName(fmt.Sprintf("tools[%d].function.name", i), t.Function.Name); err != nil {
			return err
		}
	}
	if r.ToolChoice != nil && r.ToolChoice.Mode == "function" {
		if err := checkFunctionName("tool_choice.function.name", r.ToolChoice.Function); err != nil {
			return err
		}
	}
	if r.ToolChoice != nil && r.ToolChoice.Mode == "function" && !r.hasTool(r.ToolChoice.Function) {
		return bad("tool_choice", "tool_choice names function %q, which is not in tools", r.ToolChoice.Function)
	}
	if r.ResponseFormat != nil {
		switch r.ResponseFormat.Type {
		case "text", "json_object", "json_schema":
		default:
			return bad("response_format.type", "response_format.type %q is not text, json_object or json_schema", r.ResponseFormat.Type)
		}
	}
	if len(r.Audio) > 0 && r.Audio[0] != '{' && string(r.Audio) != "null" {
		return bad("audio", "field audio has the wrong type: want an object")
	}
	if r.StreamOptions != nil && !r.Stream {
		return bad("stream_options", "stream_options is only allowed when stream is true")
	}
	return nil
}

// MaxOutputTokens returns the larger of max_completion_tokens and
// max_tokens (0: neither is set). When a client sends both, both reach an
// upstream that is sent the body as it is, and an upstream may honour
// either: the larger is what admission must bound and reserve.
func (r *ChatRequest) MaxOutputTokens() int {
	n := 0
	if r.MaxCompletionTokens != nil {
		n = *r.MaxCompletionTokens
	}
	if r.MaxTokens != nil && *r.MaxTokens > n {
		n = *r.MaxTokens
	}
	return n
}

// WantsUsage reports whether the client asked for the streamed usage chunk.
func (r *ChatRequest) WantsUsage() bool {
	return r.Stream && r.StreamOptions != nil && r.StreamOptions.IncludeUsage
}
