// Package gemini is the adapter for Google's native Gemini API (provider
// kind "gemini"). It translates the request's canonical form
// (exchange.Prompt) into a generateContent request (see
// request.go for what is translated, rejected and ignored), sends it to
// {base_url}/models/{model}:generateContent, or
// :streamGenerateContent?alt=sse for a stream, with the key in the
// x-goog-api-key header, and translates the answer, streamed (stream.go)
// or whole (response.go), into canonical events (exchange.Event) that the
// client's ingress encodes. Errors are classified in errors.go.
package gemini

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/llmgw/llmgw/pkg/config"
	"github.com/llmgw/llmgw/pkg/gwerr"
	"github.com/llmgw/llmgw/pkg/provider"
)

// DefaultBaseURL is the Gemini API root used when base_url is empty.
const DefaultBaseURL = "https://generativelanguage.googleapis.com/v1beta"

// timeNow is the clock for the Start event's Created and Retry-After dates.
var timeNow = time.Now

// Adapter sends requests to one Gemini provider.
type Adapter struct {
	id   string
	base *url.URL
	send provider.Sender
}

var _ provider.Provider = (*Adapter)(nil)

// New returns the adapter for provider id. base_url is the API root with
// its version (default DefaultBaseURL); a query string is kept on every
// call. The key goes in x-goog-api-key unless auth_header says otherwise
// ("authorization" sends it as a Bearer token). client must have no total
// Timeout.
func New(id string, p *config.Provider, client *http.Client) (*Adapter, error) {
	base := p.BaseURL
	if base == "" {
		base = DefaultBaseURL
	}
	u, err := url.Parse(base)
	if err != nil {
		return nil, fmt.Errorf("provider %s: base_url: %w", id, err)
	}
	u.Path = strings.TrimSuffix(u.Path, "/")
	if client == nil {
		client = http.DefaultClient
	}
	return &Adapter{id: id, base: u, send: provider.Sender{Provider: id, Client: client, Headers: p.Headers,
		AuthHeader: provider.KeyHeader(p, defaultKeyHeader),
		StatusError: func(resp *http.Response, raw []byte, secret string) error {
			return statusError(id, resp, raw, secret)
		}}}, nil
}

// endpoint is the method URL for a model: models/{model}:generateContent,
// or :streamGenerateContent with alt=sse.
func (a *Adapter) endpoint(model string, stream bool) string {
	u := *a.base
	method := ":generateContent"
	if stream {
		method = ":streamGenerateContent"
		q := u.Query()
		q.Set("alt", "sse")
		u.RawQuery = q.Encode()
	}
	u.Path += "/models/" + strings.TrimPrefix(model, "models/") + method
	return u.String()
}

// Send implements provider.Provider. Requests Gemini cannot honour are
// rejected with invalid_request before any network call.
func (a *Adapter) Send(ctx context.Context, call *provider.Call) (provider.Stream, error) {
	tr := translator{call: call, target: a.id + "/" + call.Model(), model: call.Model()}
	greq, err := tr.translateRequest(call.Prompt(), call.OutputLimit())
	if err != nil {
		return nil, err
	}
	body, err := json.Marshal(greq)
	if err != nil {
		return nil, &gwerr.Error{Category: gwerr.InvalidRequest, Message: "request could not be translated for target " + tr.target, Provider: a.id, Cause: err}
	}
	stream := call.Req.Stream
	resp, err := a.send.Post(ctx, call, a.endpoint(call.Model(), stream), body, stream, nil)
	if err != nil {
		return nil, err
	}
	created := timeNow().Unix()
	signatures := greq.GenerationConfig != nil && greq.GenerationConfig.ThinkingConfig != nil && greq.GenerationConfig.ThinkingConfig.IncludeThoughts
	if stream && !strings.HasPrefix(resp.Header.Get("Content-Type"), "application/json") {
		s := newSSEStream(a.id, resp.Body, len(body), created, &call.Req.Trace)
		s.t.signatures = signatures
		return s, nil
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(resp.Body) // bounded by the client (provider.LimitTransport)
	if err != nil {
		return nil, provider.TransportError(ctx, a.id, err)
	}
	if stream {
		var b errorBody
		if json.Unmarshal(data, &b) == nil && (b.Error.Code != 0 || b.Error.Status != "") {
			return nil, classify(a.id, 0, b.Error, resp.Header, call.Key.Secret)
		}
		return nil, &gwerr.Error{Category: gwerr.Unavailable, Message: "provider answered a streaming request with JSON", Provider: a.id}
	}
	evs, u, err := translateResponse(a.id, data, len(body), created, signatures)
	if err != nil {
		return nil, err
	}
	return provider.Events(u, evs...), nil
}
