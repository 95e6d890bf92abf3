package openaicompat

import (
	"context"
	"encoding/json"
	"io"

	"github.com/tidwall/gjson"

	"github.com/llmgw/llmgw/pkg/exchange"
	"github.com/llmgw/llmgw/pkg/gwerr"
	"github.com/llmgw/llmgw/pkg/provider"
	"github.com/llmgw/llmgw/pkg/wire/chatwire"
)

// Embeddings passthrough, for a provider configured with
// apis: [..., embeddings] (an openai-kind provider without apis speaks
// chat only; the provider registry refuses an embeddings request to it
// before any call): the client's body goes to {base_url}/embeddings with
// only the model rewritten, and the upstream's body comes back untouched
// as one Raw event (RawAPI Embeddings, Flags Whole). Usage is the body's
// usage.prompt_tokens, else the gateway's estimate of the request; output
// is always 0.

// sendEmbeddings makes one embeddings passthrough attempt.
func (a *Adapter) sendEmbeddings(ctx context.Context, call *provider.Call) (provider.Stream, error) {
	rq := call.Req
	body, err := chatwire.Rewrite(make([]byte, 0, len(rq.Body)+32), rq.Body, chatwire.RewriteOptions{Model: call.Model()})
	if err != nil {
		return nil, err
	}
	resp, err := a.send.Post(ctx, call, a.embeddingsEndpoint, body, false, nil)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(resp.Body) // bounded by the client (provider.LimitTransport)
	if err != nil {
		return nil, provider.TransportError(ctx, a.id, err)
	}
	if !json.Valid(data) {
		return nil, &gwerr.Error{Category: gwerr.Unavailable, Message: "provider returned malformed JSON", Provider: a.id}
	}
	if e := gjson.GetBytes(data, "error"); e.Exists() && e.Type != gjson.Null {
		return nil, provider.InBandError(a.id, e.Get("type").String()+" "+e.Get("code").String())
	}
	if n := gjson.GetBytes(data, "data.#"); n.Int() == 0 {
		return nil, provider.EmptyResponse(a.id)
	}
	u := exchange.TokenUsage{Input: int(gjson.GetBytes(data, "usage.prompt_tokens").Int())}
	if !gjson.GetBytes(data, "usage.prompt_tokens").Exists() {
		u = exchange.TokenUsage{Input: exchange.EstimateTokens(len(body)), Estimated: true}
	}
	return provider.Events(u, exchange.Event{Kind: exchange.Raw, Raw: data, RawAPI: exchange.Embeddings,
		Flags: exchange.HasContent | exchange.HasFinish | exchange.Whole}), nil
}
