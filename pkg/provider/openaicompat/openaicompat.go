// Package openaicompat is the adapter for OpenAI-compatible upstreams
// (OpenAI, Groq, Together, Fireworks, vLLM, Azure OpenAI). It forwards the
// client's own bytes with only the model rewritten (and stream usage asked
// for), and relays the upstream's chunks untouched.
package openaicompat

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"

	"github.com/llmgw/llmgw/pkg/config"
	"github.com/llmgw/llmgw/pkg/exchange"
	"github.com/llmgw/llmgw/pkg/gwerr"
	"github.com/llmgw/llmgw/pkg/provider"
	"github.com/llmgw/llmgw/pkg/retryafter"
	"github.com/llmgw/llmgw/pkg/wire/chatwire"
)

// Adapter sends chat completions to one OpenAI-compatible provider.
type Adapter struct {
	id       string
	endpoint string // base URL + /chat/completions, query kept
	// responsesEndpoint is base URL + /responses (query kept); responses
	// is true when the provider speaks the Responses API natively
	// (apis: [responses]), so Responses clients pass through to it.
	responsesEndpoint string
	responses         bool
	// embeddingsEndpoint is base URL + /embeddings (query kept), for a
	// provider that speaks the embeddings API (apis: [embeddings]).
	embeddingsEndpoint string
	send               provider.Sender
	// maxTokensField names the field a capped request's output limit is sent
	// in: "max_tokens" (default: the widest support) or
	// "max_completion_tokens" (options.max_tokens_field; OpenAI's reasoning
	// models accept only the latter).
	maxTokensField string
}

var _ provider.Provider = (*Adapter)(nil)

// New returns the adapter for provider id. client carries the transport
// (connection pooling, connect timeout); it must not have a total Timeout,
// streams are bounded by the failover engine's phase timeouts instead.
func New(id string, p *config.Provider, client *http.Client) (*Adapter, error) {
	return NewAt(id, p, client, Upstream{BaseURL: p.BaseURL, Responses: p.Speaks(string(exchange.Responses))})
}

// Upstream is where an Adapter sends and how it authenticates, for an
// adapter of another kind that reaches an OpenAI-compatible API of its
// own (Bedrock's OpenAI-compatible endpoints, pkg/provider/bedrock): the
// same passthrough of Chat Completions and Responses, at another root,
// signed otherwise.
type Upstream struct {
	// BaseURL is the API root: /chat/completions, /responses and
	// /embeddings are under it; a query string is kept on every call.
	BaseURL string
	// Responses: the upstream speaks the Responses API natively, so
	// Responses clients pass through to it.
	Responses bool
	// Authorize, when set, authenticates each request
	// (provider.Sender.Authorize); nil: the provider key in its header.
	Authorize func(req *http.Request, body []byte) error
}

// NewAt returns the adapter for provider id at upstream u (New is NewAt
// at the provider's base_url). p gives the static headers, the key header
// and options.max_tokens_field.
func NewAt(id string, p *config.Provider, client *http.Client, u Upstream) (*Adapter, error) {
	base, err := url.Parse(u.BaseURL)
	if err != nil {
		return nil, fmt.Errorf("provider %s: base_url: %w", id, err)
	}
	root := strings.TrimSuffix(base.Path, "/")
	base.Path = root + "/chat/completions"
	endpoint := base.String()
	base.Path = root + "/embeddings"
	embeddings := base.String()
	base.Path = root + "/responses"
	a := &Adapter{id: id, endpoint: endpoint, responsesEndpoint: base.String(), responses: u.Responses,
		embeddingsEndpoint: embeddings, maxTokensField: p.Options["max_tokens_field"]}
	a.send = provider.Sender{Provider: id, Client: client, Headers: p.Headers, AuthHeader: provider.KeyHeader(p, defaultKeyHeader),
		StatusError: a.statusError, Authorize: u.Authorize}
	return a, nil
}

// Send implements provider.Provider. A Chat Completions request passes
// through byte for byte (only the model, stream usage, the output cap and
// the target's prompt variant are rewritten), and so does a Responses API
// request to a provider that speaks it (see responses.go); a request that
// arrived on another API is built from its canonical Prompt (with the
// target's prompt variant, see request.go), and the answer translated back
// into events.
func (a *Adapter) Send(ctx context.Context, call *provider.Call) (provider.Stream, error) {
	rq := call.Req
	if a.responses && rq.API == exchange.Responses {
		return a.sendResponses(ctx, call)
	}
	if rq.API == exchange.Embeddings {
		return a.sendEmbeddings(ctx, call)
	}
	stream := rq.Stream
	pass := provider.Passthrough(rq, exchange.Chat)
	src := rq.Body
	var variant *chatwire.Variant
	if pass {
		variant = call.Variant() // byte-level edits of the client's body
	} else {
		c, err := a.chatBody(call)
		if err != nil {
			return nil, err
		}
		if src, err = json.Marshal(c); err != nil {
			return nil, &gwerr.Error{Category: gwerr.Internal, Message: "could not encode the upstream request", Provider: a.id, Cause: err}
		}
	}
	body, err := chatwire.Rewrite(make([]byte, 0, len(src)+96), src,
		chatwire.RewriteOptions{Model: call.Model(), IncludeUsage: stream, MaxTokens: call.OutputLimit(), MaxTokensField: a.maxTokensField,
			Variant: variant})
	if err == nil {
		body, err = call.ServiceTierMember(body)
	}
	if err != nil {
		return nil, err
	}
	resp, err := a.send.Post(ctx, call, a.endpoint, body, stream, nil)
	if err != nil {
		return nil, err
	}
	ct := resp.Header.Get("Content-Type")
	if stream && !strings.HasPrefix(ct, "application/json") {
		return newSSEStream(a.id, resp.Body, len(body), !pass, &rq.Trace), nil
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(resp.Body) // bounded by the client (provider.LimitTransport)
	if err != nil {
		return nil, provider.TransportError(ctx, a.id, err)
	}
	ci := chatwire.InspectResponse(data)
	switch {
	case ci.Error:
		return nil, provider.InBandError(a.id, ci.ErrorType)
	case stream:
		return nil, &gwerr.Error{Category: gwerr.Unavailable, Message: "provider answered a streaming request with JSON", Provider: a.id}
	case !json.Valid(data):
		return nil, &gwerr.Error{Category: gwerr.Unavailable, Message: "provider returned malformed JSON", Provider: a.id}
	case !ci.Content && ci.Usage.CompletionTokens == 0 && ci.FinishReason != "length" && ci.FinishReason != "content_filter":
		return nil, provider.EmptyResponse(a.id)
	}
	u := usageOf(ci)
	if !ci.HasUsage {
		u = exchange.TokenUsage{Input: exchange.EstimateTokens(len(body)), Output: exchange.EstimateTokens(ci.Chars), Estimated: true}
	}
	if !pass {
		return provider.Events(u, responseEvents(data, u)...), nil
	}
	flags := exchange.HasContent | exchange.Whole
	if ci.Finish {
		flags |= exchange.HasFinish
	}
	return provider.Events(u, exchange.Event{Kind: exchange.Raw, Raw: data, RawAPI: exchange.Chat, Flags: flags, Finish: ci.FinishReason}), nil
}

// usageOf maps OpenAI usage to the gateway's.
func usageOf(ci chatwire.ChunkInfo) exchange.TokenUsage {
	ou := ci.Usage
	u := exchange.TokenUsage{Input: ou.PromptTokens, Output: ou.CompletionTokens, Tier: ci.ServiceTier}
	if ou.PromptTokensDetails != nil {
		u.CacheRead = ou.PromptTokensDetails.CachedTokens
		u.CacheWrite = ou.PromptTokensDetails.CacheCreationTokens
	}
	return u
}

// statusError classifies an upstream error (provider.Sender.StatusError):
// OpenAI's error object ({"error":{"message","type","code"}}), else the
// AWS shape Bedrock's OpenAI-compatible endpoints may answer with (a
// top-level message, the error type in x-amzn-ErrorType, e.g.
// ThrottlingException). The body's message is redacted before it may
// reach a client.
func (a *Adapter) statusError(resp *http.Response, raw []byte, secret string) error {
	var env struct {
		Error struct {
			Message string `json:"message"`
			Type    string `json:"type"`
			Code    any    `json:"code"`
		} `json:"error"`
		Message string `json:"message"`
	}
	_ = json.Unmarshal(raw, &env)
	errType, msg := env.Error.Type, env.Error.Message
	if c, ok := env.Error.Code.(string); ok {
		errType += " " + c // the code is often the more specific word (content_policy_violation)
	}
	if strings.TrimSpace(errType) == "" {
		errType, _, _ = strings.Cut(resp.Header.Get("X-Amzn-Errortype"), ":")
	}
	if msg == "" {
		msg = env.Message
	}
	return provider.StatusError(a.id, resp.StatusCode, errType, gwerr.Redact(msg, secret),
		retryafter.Parse(resp.Header, timeNow()))
}
