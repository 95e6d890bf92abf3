// Package embeddings is the OpenAI embeddings ingress (POST /v1/embeddings
// and /embeddings). Decode validates the body and fills the canonical
// exchange.EmbedRequest; the response is never streamed.
//
// Every target answers with one Raw event (RawAPI Embeddings, Flags Whole)
// holding a whole OpenAI embeddings body: an upstream that speaks the
// embeddings API sends its own bytes, untouched; a translating adapter
// (Bedrock's Titan and Cohere models) builds the list with
// embedwire.EmbeddingsBody. The encoder writes that body at End.
package embeddings

import (
	"bytes"
	"encoding/json"
	"net/http"

	"github.com/llmgw/llmgw/pkg/exchange"
	"github.com/llmgw/llmgw/pkg/gwerr"
	"github.com/llmgw/llmgw/pkg/ingress"
	"github.com/llmgw/llmgw/pkg/ingress/chat"
	"github.com/llmgw/llmgw/pkg/wire/chatwire"
)

// Ingress is the embeddings API.
type Ingress struct{}

var _ ingress.Ingress = Ingress{}

// API implements ingress.Ingress.
func (Ingress) API() exchange.API { return exchange.Embeddings }

// MaxInputs caps the inputs of one request (OpenAI's own limit).
const MaxInputs = 2048

type wireRequest struct {
	Model          *string         `json:"model"`
	Input          json.RawMessage `json:"input"`
	Dimensions     *int            `json:"dimensions"`
	EncodingFormat *string         `json:"encoding_format"`
	User           *string         `json:"user"`
	Stream         json.RawMessage `json:"stream"`
}

func invalid(param, format string, args ...any) error {
	return gwerr.New(gwerr.InvalidRequest, format, args...).WithParam(param)
}

// Decode implements ingress.Ingress: model is required; input is a
// non-empty string, array of strings, array of token ids or array of
// token-id arrays (at most MaxInputs, none empty); encoding_format is
// float or base64; dimensions is positive; stream may not be true.
func (Ingress) Decode(_ *http.Request, body []byte, req *exchange.Request) error {
	if _, err := chatwire.CheckObject(body, 0); err != nil {
		return err
	}
	var w wireRequest
	if err := json.Unmarshal(body, &w); err != nil {
		return gwerr.New(gwerr.InvalidRequest, "request body is not a valid JSON object: %v", err)
	}
	if w.Model == nil || *w.Model == "" {
		return invalid("model", "model is required")
	}
	er := &exchange.EmbedRequest{EncodingFormat: "float"}
	if len(w.Stream) > 0 && !bytes.Equal(w.Stream, []byte("false")) && !bytes.Equal(w.Stream, []byte("null")) {
		return invalid("stream", "the embeddings API does not stream")
	}
	if f := w.EncodingFormat; f != nil {
		if *f != "float" && *f != "base64" {
			return invalid("encoding_format", "encoding_format must be \"float\" or \"base64\", not %q", *f)
		}
		er.EncodingFormat = *f
	}
	if w.Dimensions != nil {
		if *w.Dimensions <= 0 {
			return invalid("dimensions", "dimensions must be a positive integer")
		}
		er.Dimensions = *w.Dimensions
	}
	if w.User != nil {
		er.User = *w.User
	}
	if err := decodeInput(w.Input, er); err != nil {
		return err
	}
	req.Embed, req.Body, req.Route = er, body, *w.Model
	return nil
}

// decodeInput reads input in any of its four forms.
func decodeInput(raw json.RawMessage, er *exchange.EmbedRequest) error {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || bytes.Equal(raw, []byte("null")) {
		return invalid("input", "input is required")
	}
	const shapes = "input must be a string, an array of strings, an array of token ids or an array of token-id arrays"
	var s string
	if json.Unmarshal(raw, &s) == nil {
		if s == "" {
			return invalid("input", "input must not be empty")
		}
		er.Inputs = []string{s}
		return nil
	}
	var strs []string
	var toks []int
	var arrs [][]int
	switch {
	case json.Unmarshal(raw, &strs) == nil:
		for i, s := range strs {
			if s == "" {
				return invalid("input", "input[%d] must not be empty", i)
			}
		}
		er.Inputs = strs
	case json.Unmarshal(raw, &toks) == nil:
		er.Tokens = [][]int{toks}
	case json.Unmarshal(raw, &arrs) == nil:
		for i, a := range arrs {
			if len(a) == 0 {
				return invalid("input", "input[%d] must not be empty", i)
			}
		}
		er.Tokens = arrs
	default:
		return invalid("input", shapes)
	}
	switch n := er.Count(); {
	case n == 0 || er.Tokens != nil && len(er.Tokens[0]) == 0:
		return invalid("input", "input must not be empty")
	case n > MaxInputs:
		return invalid("input", "input has %d items; at most %d are allowed", n, MaxInputs)
	}
	return nil
}

// NewEncoder implements ingress.Ingress.
func (Ingress) NewEncoder(*exchange.Request) ingress.Encoder { return &encoder{} }

// WriteError implements ingress.Ingress: the OpenAI error envelope.
func (Ingress) WriteError(w http.ResponseWriter, req *exchange.Request, e *gwerr.Error) int {
	return chat.WriteError(w, e, req.ID, ingress.Status(e))
}

// encoder keeps the whole body of the one Raw event and writes it at End.
type encoder struct{ body []byte }

func (e *encoder) ContentType() string { return "application/json" }

func (e *encoder) Event(dst []byte, ev *exchange.Event) []byte {
	if ev.Kind == exchange.Raw && ev.Flags&exchange.Whole != 0 {
		e.body = append(e.body[:0], ev.Raw...)
	}
	return dst
}

func (e *encoder) End(dst []byte, _ exchange.TokenUsage) []byte { return append(dst, e.body...) }

// Fail is never called: the response is not streamed.
func (e *encoder) Fail(dst []byte, _ *gwerr.Error, _ string, _ exchange.TokenUsage) []byte {
	return dst
}
