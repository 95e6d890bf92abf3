// Package anthropic is the adapter for Anthropic's native Messages API
// (provider kind "anthropic"). It translates the request's canonical
// Prompt (exchange.Request.Prompt) into a Messages request (see request.go
// for what is translated, refused and ignored), sends it to {base_url}/v1/messages and
// translates the response, streamed (see stream.go) or whole (see
// response.go), into canonical events (exchange.Event) that the client's
// ingress encodes. A client of the Messages API itself is served by
// passthrough instead (see passthrough.go), and its count_tokens requests
// are counted upstream (CountTokens).
package anthropic

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
	"github.com/llmgw/llmgw/pkg/exchange"
	"github.com/llmgw/llmgw/pkg/gwerr"
	"github.com/llmgw/llmgw/pkg/provider"
	"github.com/llmgw/llmgw/pkg/retryafter"
	"github.com/llmgw/llmgw/pkg/wire/messageswire"
)

// timeNow is the clock for the Start event's Created and Retry-After dates.
var timeNow = time.Now

// Adapter sends requests to one Anthropic provider.
type Adapter struct {
	id       string
	endpoint string // base URL + /v1/messages, query kept
	countURL string // base URL + /v1/messages/count_tokens, query kept
	version  string
	send     provider.Sender
}

var (
	_ provider.Provider = (*Adapter)(nil)
)

// New returns the adapter for provider id. The endpoint is base_url +
// "/v1/messages" (base_url like https://api.anthropic.com; a base_url that
// already ends in /v1 gets "/messages"). The key goes in x-api-key unless
// auth_header says otherwise ("authorization" sends it as a Bearer token);
// options.anthropic_version sets the anthropic-version header (default
// 2023-06-01). client must have no total Timeout.
func New(id string, p *config.Provider, client *http.Client) (*Adapter, error) {
	u, err := url.Parse(p.BaseURL)
	if err != nil {
		return nil, fmt.Errorf("provider %s: base_url: %w", id, err)
	}
	path := strings.TrimSuffix(u.Path, "/")
	if strings.HasSuffix(path, "/v1") {
		u.Path = path + "/messages"
	} else {
		u.Path = path + "/v1/messages"
	}
	cu := *u
	cu.Path += "/count_tokens"
	version := p.Options["anthropic_version"]
	if version == "" {
		version = messageswire.DefaultVersion
	}
	if client == nil {
		client = http.DefaultClient
	}
	a := &Adapter{id: id, endpoint: u.String(), countURL: cu.String(), version: version}
	a.send = provider.Sender{Provider: id, Client: client, Headers: p.Headers, AuthHeader: provider.KeyHeader(p, defaultKeyHeader), StatusError: a.statusError}
	return a, nil
}

// Send implements provider.Provider. Requests Anthropic cannot honour are
// rejected with invalid_request before any network call.
func (a *Adapter) Send(ctx context.Context, call *provider.Call) (provider.Stream, error) {
	if provider.Passthrough(call.Req, exchange.Messages) {
		return a.passthrough(ctx, call)
	}
	tr := translator{call: call, target: a.id + "/" + call.Model(), prov: a.id, noSampling: a.version >= samplingRemoved}
	areq, err := tr.translateRequest(call.Prompt(), call.Req.Stream, call.Model(), call.MaxTokens())
	if err != nil {
		return nil, err
	}
	body, err := json.Marshal(areq)
	if err != nil {
		return nil, &gwerr.Error{Category: gwerr.InvalidRequest, Message: "request could not be translated for target " + tr.target, Provider: a.id, Cause: err}
	}
	stream := call.Req.Stream
	resp, err := a.send.Post(ctx, call, a.endpoint, body, stream, func(h http.Header) { h.Set("Anthropic-Version", a.version) })
	if err != nil {
		return nil, err
	}
	created := timeNow().Unix()
	if stream && !strings.HasPrefix(resp.Header.Get("Content-Type"), "application/json") {
		s := newSSEStream(a.id, resp.Body, len(body), created)
		s.trace = &call.Req.Trace
		return s, nil
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(resp.Body) // bounded by the client (provider.LimitTransport)
	if err != nil {
		return nil, provider.TransportError(ctx, a.id, err)
	}
	if stream {
		var e messageswire.ErrorResponse
		if json.Unmarshal(data, &e) == nil && e.Type == messageswire.EventError {
			return nil, provider.InBandError(a.id, e.Error.Type)
		}
		return nil, &gwerr.Error{Category: gwerr.Unavailable, Message: "provider answered a streaming request with JSON", Provider: a.id}
	}
	evs, u, err := translateResponse(a.id, data, created)
	if err != nil {
		return nil, err
	}
	return provider.Events(u, evs...), nil
}

// statusError classifies an Anthropic error body ({"type":"error","error":
// {"type","message"}}; provider.Sender.StatusError): overloaded_error and
// 529 are overloaded, 429 rate_limited with Retry-After, 401/403 the
// gateway's credentials, 400 invalid_request with the redacted message as
// detail.
func (a *Adapter) statusError(resp *http.Response, raw []byte, secret string) error {
	var e messageswire.ErrorResponse
	_ = json.Unmarshal(raw, &e)
	return provider.StatusError(a.id, resp.StatusCode, e.Error.Type, gwerr.Redact(e.Error.Message, secret),
		retryafter.Parse(resp.Header, timeNow()))
}
