package messages

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"slices"
	"strings"
	"unicode/utf8"

	"github.com/llmgw/llmgw/pkg/exchange"
	"github.com/llmgw/llmgw/pkg/gwerr"
	"github.com/llmgw/llmgw/pkg/wire/chatwire"
	"github.com/llmgw/llmgw/pkg/wire/jsonb"
)

// Validation of a Messages request (POST /v1/messages, and the body of POST
// /v1/messages/count_tokens), done before any upstream call: the shapes
// and ranges Anthropic documents, so that a bad request gets a 400 here
// rather than failing differently on each target. Fields the gateway does
// not know are accepted: they reach an Anthropic upstream untouched, and
// are listed as untranslated for every other target (see canonical.go).

// request is the validating view of the body. Polymorphic members are kept
// raw and checked by hand, so every error names its field.
type request struct {
	Model         string            `json:"model"`
	MaxTokens     *int              `json:"max_tokens"`
	Messages      []message         `json:"messages"`
	System        json.RawMessage   `json:"system"`
	Stream        bool              `json:"stream"`
	StopSequences []string          `json:"stop_sequences"`
	Temperature   *float64          `json:"temperature"`
	TopP          *float64          `json:"top_p"`
	TopK          *int              `json:"top_k"`
	Tools         []json.RawMessage `json:"tools"`
	ToolChoice    json.RawMessage   `json:"tool_choice"`
	Metadata      json.RawMessage   `json:"metadata"`
	Thinking      json.RawMessage   `json:"thinking"`
}

// message is one turn.
type message struct {
	Role    string          `json:"role"`
	Content json.RawMessage `json:"content"`
}

// block is one content block of any type; Type says which fields apply.
type block struct {
	Type         string          `json:"type"`
	Text         *string         `json:"text"`
	Source       json.RawMessage `json:"source"`
	ID           string          `json:"id"`
	Name         string          `json:"name"`
	Input        json.RawMessage `json:"input"`
	ToolUseID    string          `json:"tool_use_id"`
	Content      json.RawMessage `json:"content"`
	IsError      *bool           `json:"is_error"`
	Thinking     *string         `json:"thinking"`
	Signature    *string         `json:"signature"`
	Data         *string         `json:"data"`
	Citations    json.RawMessage `json:"citations"`
	CacheControl json.RawMessage `json:"cache_control"`
}

// source is an image's or a document's source.
type source struct {
	Type      string `json:"type"`
	MediaType string `json:"media_type"`
	Data      string `json:"data"`
	URL       string `json:"url"`
}

// topLevel are the request members the gateway knows.
var topLevel = map[string]bool{
	"model": true, "max_tokens": true, "messages": true, "system": true, "stream": true,
	"stop_sequences": true, "temperature": true, "top_p": true, "top_k": true, "tools": true,
	"tool_choice": true, "metadata": true, "thinking": true,
}

// maxDepth bounds the nesting of a request body.
const maxDepth = 64

// bad is the invalid_request error for a field.
func bad(param, format string, args ...any) *gwerr.Error {
	return gwerr.New(gwerr.InvalidRequest, format, args...).WithParam(param)
}

// parse validates a body and returns its view and the names of its
// top-level members, in order. count is true for count_tokens, which takes
// no max_tokens.
func parse(body []byte, count bool) (*request, []string, error) {
	if len(bytes.TrimSpace(body)) == 0 {
		return nil, nil, gwerr.New(gwerr.InvalidRequest, "request body is empty; expected a JSON object")
	}
	if !utf8.Valid(body) {
		return nil, nil, gwerr.New(gwerr.InvalidRequest, "request body is not valid UTF-8")
	}
	// Unmarshal checks the whole document's syntax before decoding (no
	// separate json.Valid pass, as chatwire.Parse does); a type error is
	// reported after the depth and key checks below, which take precedence.
	var r request
	decodeErr := json.Unmarshal(body, &r)
	if decodeErr != nil {
		if syntax := (*json.SyntaxError)(nil); errors.As(decodeErr, &syntax) {
			return nil, nil, gwerr.New(gwerr.InvalidRequest, "request body is not valid JSON")
		}
	}
	if jsonb.Depth(body) > maxDepth {
		return nil, nil, gwerr.New(gwerr.InvalidRequest, "request JSON is nested more than %d levels deep", maxDepth)
	}
	var keys []string
	seen := map[string]bool{}
	var dup string
	if err := chatwire.Members(body, func(k string, _ []byte) bool {
		if seen[k] {
			dup = k
			return false
		}
		seen[k] = true
		keys = append(keys, k)
		return true
	}); err != nil {
		return nil, nil, err
	}
	if dup != "" {
		return nil, nil, bad(dup, "field %q appears more than once", dup)
	}
	for _, k := range keys {
		if topLevel[k] {
			continue
		}
		for f := range topLevel {
			// encoding/json matches names case-insensitively, Anthropic
			// does not: {"MODEL": ...} would route on one model and send
			// another.
			if strings.EqualFold(k, f) {
				return nil, nil, bad(k, "field %q must be written %q (field names are case-sensitive)", k, f)
			}
		}
	}
	// Nested objects get the same refusal (after the top-level checks,
	// whose messages name the known field).
	if err := jsonb.CheckKeys(body); err != nil {
		return nil, nil, err
	}
	if decodeErr != nil {
		return nil, nil, decodeError(decodeErr)
	}
	if err := r.validate(count); err != nil {
		return nil, nil, err
	}
	return &r, keys, nil
}

// validate checks the top-level members; the conversation, tools and
// options are checked while they are converted (canonical.go).
func (r *request) validate(count bool) error {
	if strings.TrimSpace(r.Model) == "" {
		return bad("model", "model: field required")
	}
	if !count {
		if r.MaxTokens == nil {
			return bad("max_tokens", "max_tokens: field required")
		}
		if *r.MaxTokens < 1 {
			return bad("max_tokens", "max_tokens: must be at least 1, got %d", *r.MaxTokens)
		}
	}
	if len(r.Messages) == 0 {
		return bad("messages", "messages: must be a non-empty array")
	}
	for _, c := range []struct {
		name string
		v    *float64
	}{{"temperature", r.Temperature}, {"top_p", r.TopP}} {
		if c.v != nil && (math.IsNaN(*c.v) || *c.v < 0 || *c.v > 1) {
			return bad(c.name, "%s: must be between 0 and 1", c.name)
		}
	}
	if r.TopK != nil && *r.TopK < 0 {
		return bad("top_k", "top_k: must be a non-negative integer")
	}
	for i, s := range r.StopSequences {
		if s == "" {
			return bad(fmt.Sprintf("stop_sequences[%d]", i), "stop_sequences[%d]: must not be empty", i)
		}
	}
	return nil
}

// decodeError turns a decoding error into an invalid_request naming the field.
func decodeError(err error) error {
	var te *json.UnmarshalTypeError
	if errors.As(err, &te) {
		field := te.Field
		if field == "" {
			field = "body"
		}
		return bad(field, "%s: wrong type: got JSON %s", field, te.Value)
	}
	return gwerr.New(gwerr.InvalidRequest, "request body could not be decoded: %s", gwerr.Redact(err.Error()))
}

// isObject reports whether raw is a JSON object.
func isObject(raw json.RawMessage) bool {
	raw = bytes.TrimSpace(raw)
	return len(raw) > 0 && raw[0] == '{'
}

// isNull reports whether raw is absent or JSON null.
func isNull(raw json.RawMessage) bool {
	raw = bytes.TrimSpace(raw)
	return len(raw) == 0 || string(raw) == "null"
}

// keysOf returns the member names of a JSON object (nil for anything else).
func keysOf(raw json.RawMessage) []string {
	var keys []string
	if !isObject(raw) {
		return nil
	}
	_ = chatwire.Members(raw, func(k string, _ []byte) bool {
		keys = append(keys, k)
		return true
	})
	return keys
}

// converter builds the retiring Chat form (canonical.go) and collects what
// it cannot carry.
type converter struct {
	chat *chatwire.ChatRequest
	losses
}

// losses collects the features a conversion cannot carry.
type losses struct {
	lost []exchange.Feature
}

// lose records a feature the target form cannot carry: param is where it
// is, key its stable name (what a route's translate_without lists).
func (c *losses) lose(param, key, format string, args ...any) {
	c.lost = append(c.lost, exchange.Feature{Param: param, Key: key, What: fmt.Sprintf(format, args...)})
}

// extraKeys records the members of a JSON object outside known.
func (c *losses) extraKeys(param string, raw json.RawMessage, known ...string) {
	for _, k := range keysOf(raw) {
		if !slices.Contains(known, k) {
			c.lose(param+"."+k, exchange.FeatureKey(param+"."+k), "field %q", param+"."+k)
		}
	}
}

// imageTypes are the image media types Anthropic accepts inline.
var imageTypes = map[string]bool{"image/jpeg": true, "image/png": true, "image/gif": true, "image/webp": true}

// decodeBlock reads one content block, which must have a type.
func decodeBlock(p string, raw json.RawMessage) (block, error) {
	var b block
	if !isObject(raw) || json.Unmarshal(raw, &b) != nil || b.Type == "" {
		return b, bad(p, "%s: must be a content block object with a type", p)
	}
	return b, nil
}

// cacheCtl returns a raw member (a cache_control value, a tool definition)
// trimmed, nil when absent or null.
func cacheCtl(raw json.RawMessage) json.RawMessage {
	if isNull(raw) {
		return nil
	}
	return bytes.TrimSpace(raw)
}
