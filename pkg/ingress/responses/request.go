package responses

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"reflect"
	"strings"

	"github.com/llmgw/llmgw/pkg/exchange"
	"github.com/llmgw/llmgw/pkg/gwerr"
	"github.com/llmgw/llmgw/pkg/wire/chatwire"
	"github.com/llmgw/llmgw/pkg/wire/jsonb"
)

// wireRequest is the part of a Responses API request the gateway reads to
// validate it and to translate it. Fields it does not name are kept in the
// client's bytes for passthrough and are not needed for translation
// (include, prompt_cache_key, service_tier, ...).
type wireRequest struct {
	Model              string            `json:"model"`
	Input              json.RawMessage   `json:"input"`
	Instructions       *string           `json:"instructions"`
	Tools              []json.RawMessage `json:"tools"`
	ToolChoice         json.RawMessage   `json:"tool_choice"`
	ParallelToolCalls  *bool             `json:"parallel_tool_calls"`
	Text               *wireText         `json:"text"`
	Reasoning          *wireReasoning    `json:"reasoning"`
	MaxOutputTokens    *int              `json:"max_output_tokens"`
	Store              *bool             `json:"store"`
	Metadata           map[string]string `json:"metadata"`
	PreviousResponseID *string           `json:"previous_response_id"`
	Conversation       json.RawMessage   `json:"conversation"`
	Stream             *bool             `json:"stream"`
	Temperature        *float64          `json:"temperature"`
	TopP               *float64          `json:"top_p"`
	User               *string           `json:"user"`
	Background         *bool             `json:"background"`
	Prompt             json.RawMessage   `json:"prompt"`
	TopLogprobs        *int              `json:"top_logprobs"`
}

type wireText struct {
	Format    json.RawMessage `json:"format"`
	Verbosity *string         `json:"verbosity"`
}

type wireReasoning struct {
	Effort  *string `json:"effort"`
	Summary *string `json:"summary"`
}

// wireItem is one input item: a message (type "message" or no type), a
// function_call, a function_call_output, a reasoning item, or an item the
// gateway can only pass through.
type wireItem struct {
	Type      string          `json:"type"`
	Role      string          `json:"role"`
	Content   json.RawMessage `json:"content"`
	CallID    string          `json:"call_id"`
	Name      string          `json:"name"`
	Arguments *string         `json:"arguments"`
	Output    json.RawMessage `json:"output"`
	Namespace string          `json:"namespace"`
	// Summary and EncryptedContent are a reasoning item's.
	Summary          json.RawMessage `json:"summary"`
	EncryptedContent string          `json:"encrypted_content"`
}

// wirePart is one content part of a message or a function_call_output.
type wirePart struct {
	Type     string  `json:"type"`
	Text     *string `json:"text"`
	ImageURL string  `json:"image_url"`
	FileID   string  `json:"file_id"`
	Detail   string  `json:"detail"`
	FileData string  `json:"file_data"`
	FileURL  string  `json:"file_url"`
	Filename string  `json:"filename"`
	Refusal  string  `json:"refusal"`
}

// wireTool is one entry of tools (or of a namespace's tools).
type wireTool struct {
	Type        string            `json:"type"`
	Name        string            `json:"name"`
	Description string            `json:"description"`
	Parameters  json.RawMessage   `json:"parameters"`
	Strict      *bool             `json:"strict"`
	Tools       []json.RawMessage `json:"tools"`
}

// The reasons a feature needs an upstream that speaks the Responses API.
const (
	whyNative = "only an upstream that speaks the Responses API natively (a provider with apis: [responses]) can serve it"
	whyState  = "the gateway does not store conversations (prompts are never persisted), so only an upstream that speaks the Responses API natively and holds the state can serve it"
)

// Value bounds, as OpenAI documents them.
const (
	maxOutputTokens  = 10_000_000
	maxMetadataPairs = 16
	maxMetadataKey   = 64
	maxMetadataValue = 512
)

var validEfforts = map[string]bool{"none": true, "minimal": true, "low": true, "medium": true, "high": true, "xhigh": true}

// knownFields are the JSON names of wireRequest's fields.
var knownFields = jsonb.FieldNames(wireRequest{})

// decoded is a validated request: its wire view, its canonical Prompt and
// what the Prompt cannot carry (lost), and the stateful features the
// top-level validation noted (native), which the Prompt decode adds to lost.
type decoded struct {
	wire   wireRequest
	prompt *exchange.Prompt
	lost   []exchange.Feature
	native []exchange.Feature
}

func bad(param, format string, args ...any) error {
	return gwerr.New(gwerr.InvalidRequest, format, args...).WithParam(param)
}

// decode validates a Responses API request body and decodes it into the
// canonical Prompt (and the retiring chat form). Every failure is an invalid_request *gwerr.Error
// naming the field.
func decode(body []byte) (*decoded, error) {
	d := &decoded{}
	keys, decodeErr, err := chatwire.CheckDecode(body, 0, &d.wire)
	if err != nil {
		return nil, err
	}
	for k := range keys {
		// encoding/json matches names case-insensitively, upstreams do not:
		// {"MODEL": ...} would route on one model and send another.
		if knownFields[k] {
			continue
		}
		for f := range knownFields {
			if strings.EqualFold(k, f) {
				return nil, bad(k, "field %q must be written %q (field names are case-sensitive)", k, f)
			}
		}
	}
	if err := decodeErr; err != nil {
		return nil, decodeError("", err)
	}
	if err := d.validate(); err != nil {
		return nil, err
	}
	if d.prompt, d.lost, err = toPrompt(&d.wire, d.native); err != nil {
		return nil, err
	}
	return d, nil
}

// nativeOnly records a feature that only a native upstream can honour; the
// first one recorded is reported.
func (d *decoded) nativeOnly(param, name, why string) {
	if d.native == nil {
		d.native = append(d.native, exchange.Feature{Param: param, What: name, Why: why})
	}
}

// validate checks the top-level parameters and notes the stateful ones.
func (d *decoded) validate() error {
	w := &d.wire
	if strings.TrimSpace(w.Model) == "" {
		return bad("model", "model is required")
	}
	if w.PreviousResponseID != nil && *w.PreviousResponseID != "" {
		d.nativeOnly("previous_response_id", "previous_response_id (a stored conversation)", whyState)
	}
	if len(w.Conversation) > 0 && string(w.Conversation) != "null" {
		d.nativeOnly("conversation", "conversation (a stored conversation)", whyState)
	}
	if w.Background != nil && *w.Background {
		d.nativeOnly("background", "background (a stored response polled later)", whyState)
	}
	if len(w.Prompt) > 0 && string(w.Prompt) != "null" {
		d.nativeOnly("prompt", "prompt (a stored prompt template)", whyState)
	}
	if len(w.Input) == 0 || string(w.Input) == "null" {
		if d.native == nil {
			return bad("input", "input is required: a string or an array of input items")
		}
	}
	checks := []error{
		checkInt("max_output_tokens", w.MaxOutputTokens, 1, maxOutputTokens),
		checkInt("top_logprobs", w.TopLogprobs, 0, 20),
		checkFloat("temperature", w.Temperature, 0, 2),
		checkFloat("top_p", w.TopP, 0, 1),
	}
	for _, err := range checks {
		if err != nil {
			return err
		}
	}
	if w.TopLogprobs != nil && *w.TopLogprobs > 0 {
		d.nativeOnly("top_logprobs", "top_logprobs", whyNative)
	}
	if len(w.Metadata) > maxMetadataPairs {
		return bad("metadata", "metadata holds at most %d pairs, got %d", maxMetadataPairs, len(w.Metadata))
	}
	for k, v := range w.Metadata {
		if len(k) > maxMetadataKey || len(v) > maxMetadataValue {
			return bad("metadata", "metadata keys are at most %d characters and values at most %d", maxMetadataKey, maxMetadataValue)
		}
	}
	if r := w.Reasoning; r != nil && r.Effort != nil && !validEfforts[*r.Effort] {
		return bad("reasoning.effort", "reasoning.effort %q is not one of none, minimal, low, medium, high, xhigh", *r.Effort)
	}
	if t := w.Text; t != nil && t.Verbosity != nil {
		switch *t.Verbosity {
		case "low", "medium", "high":
		default:
			return bad("text.verbosity", "text.verbosity %q is not one of low, medium, high", *t.Verbosity)
		}
	}
	return nil
}

func checkInt(name string, v *int, lo, hi int) error {
	if v != nil && (*v < lo || *v > hi) {
		return bad(name, "%s must be between %d and %d, got %d", name, lo, hi, *v)
	}
	return nil
}

func checkFloat(name string, v *float64, lo, hi float64) error {
	if v != nil && (math.IsNaN(*v) || *v < lo || *v > hi) {
		return bad(name, "%s must be between %g and %g", name, lo, hi)
	}
	return nil
}

// decodeError turns a json decoding error into an invalid_request naming
// the field (under prefix, e.g. "input[3]").
func decodeError(prefix string, err error) error {
	var te *json.UnmarshalTypeError
	if errors.As(err, &te) {
		field := te.Field
		switch {
		case prefix != "" && field != "":
			field = prefix + "." + field
		case prefix != "":
			field = prefix
		case field == "":
			field = "body"
		}
		return bad(field, "field %s has the wrong type: got JSON %s, want %s", field, te.Value, jsonKind(te.Type))
	}
	var ge *gwerr.Error
	if errors.As(err, &ge) {
		return ge
	}
	return gwerr.New(gwerr.InvalidRequest, "request body could not be decoded: %s", gwerr.Redact(err.Error()))
}

func jsonKind(t reflect.Type) string {
	switch t.Kind() {
	case reflect.Int, reflect.Int64, reflect.Float64:
		return "a number"
	case reflect.String:
		return "a string"
	case reflect.Bool:
		return "a boolean"
	case reflect.Slice:
		if t.Elem().Kind() == reflect.Uint8 { // json.RawMessage
			return "a value of another type"
		}
		return "an array"
	case reflect.Pointer:
		return jsonKind(t.Elem())
	}
	return "an object"
}

// unmarshalAt decodes raw into v, naming param in a type error.
func unmarshalAt(param string, raw []byte, v any) error {
	if err := json.Unmarshal(raw, v); err != nil {
		return decodeError(param, err)
	}
	return nil
}

// unquoteAt decodes the JSON string raw as unmarshalAt does, without
// json.Unmarshal's second scan when it can (jsonb.Unquote; the body was
// validated already): message text is most of a request's bytes.
func unquoteAt(param string, raw []byte) (string, error) {
	if s, ok := jsonb.Unquote(raw); ok {
		return s, nil
	}
	var s string
	return s, unmarshalAt(param, raw, &s)
}

// kindOf returns the first byte of a JSON value: '"', '[', '{', 'n', ...
func kindOf(raw []byte) byte {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 {
		return 0
	}
	return raw[0]
}

func at(format string, args ...any) string { return fmt.Sprintf(format, args...) }
