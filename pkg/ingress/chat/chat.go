// Package chat is the OpenAI Chat Completions ingress (POST
// /v1/chat/completions): validation through chatwire.Parse, and an
// encoder that relays an OpenAI-compatible upstream's own chunks untouched
// (passthrough) or builds chat.completion.chunk frames and chat.completion
// bodies from the canonical events of any other upstream.
package chat

import (
	"net/http"

	"github.com/llmgw/llmgw/pkg/exchange"
	"github.com/llmgw/llmgw/pkg/gwerr"
	"github.com/llmgw/llmgw/pkg/ingress"
	"github.com/llmgw/llmgw/pkg/wire/chatwire"
)

// Ingress is the Chat Completions API.
type Ingress struct{}

var _ ingress.Ingress = Ingress{}

// API implements ingress.Ingress.
func (Ingress) API() exchange.API { return exchange.Chat }

// Decode implements ingress.Ingress.
func (Ingress) Decode(_ *http.Request, body []byte, req *exchange.Request) error {
	cr, err := chatwire.Parse(body, chatwire.Limits{})
	if err != nil {
		return gwerr.As(err)
	}
	prompt, lost, err := ToPrompt(cr, body)
	if err != nil {
		return err
	}
	req.Prompt, req.Body, req.Untranslated = prompt, body, lost
	req.Route, req.Stream, req.WantsUsage = cr.Model, cr.Stream, cr.WantsUsage()
	if cr.Metadata != nil {
		req.Tag = cr.Metadata["tag"]
	}
	return nil
}

// NewEncoder implements ingress.Ingress.
func (Ingress) NewEncoder(req *exchange.Request) ingress.Encoder {
	if req.Stream {
		return &streamEncoder{wantUsage: req.WantsUsage, model: req.Route}
	}
	return &bodyEncoder{}
}

// WriteError implements ingress.Ingress: the OpenAI error envelope.
func (Ingress) WriteError(w http.ResponseWriter, req *exchange.Request, e *gwerr.Error) int {
	return WriteError(w, e, req.ID, ingress.Status(e))
}

// WriteError writes e in the OpenAI error shape with the given status. The
// front uses it for errors outside any ingress (unknown paths, methods).
func WriteError(w http.ResponseWriter, e *gwerr.Error, rid string, status int) int {
	h := w.Header()
	h.Set("Content-Type", "application/json")
	ingress.SetErrorHeaders(h, e)
	w.WriteHeader(status)
	w.Write(chatwire.NewErrorEnvelope(e, rid, nil).Marshal())
	return status
}

// Usage maps the gateway's token counts to OpenAI's usage object:
// prompt_tokens counts every prompt token, cached or not; cached_tokens the
// cache reads and the gateway's cache_creation_tokens the cache writes.
func Usage(u exchange.TokenUsage) chatwire.Usage {
	ou := chatwire.Usage{PromptTokens: u.Input, CompletionTokens: u.Output, TotalTokens: u.Input + u.Output}
	if u.CacheRead > 0 || u.CacheWrite > 0 {
		ou.PromptTokensDetails = &chatwire.PromptTokensDetails{CachedTokens: u.CacheRead, CacheCreationTokens: u.CacheWrite}
	}
	return ou
}
