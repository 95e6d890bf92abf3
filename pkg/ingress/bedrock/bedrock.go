// Package bedrock is the Amazon Bedrock Runtime ingress: AWS SDK code
// (boto3, aws-sdk-go-v2, the AWS SDK for JavaScript) and Claude Code in
// Bedrock mode call the gateway as they call Bedrock, at
//
//	POST /model/{modelId}/converse                     Converse
//	POST /model/{modelId}/converse-stream              ConverseStream
//	POST /model/{modelId}/invoke                       InvokeModel (Anthropic body)
//	POST /model/{modelId}/invoke-with-response-stream  InvokeModelWithResponseStream
//	POST /model/{modelId}/count-tokens                 CountTokens
//	GET  /inference-profiles                           ListInferenceProfiles (profiles.go)
//
// where modelId (percent-encoded by the SDKs, plain from Claude Code) is
// a route's name or one of the Bedrock ids the route lists
// (bedrock_model_ids). The operations run the same pipeline as every
// ingress (failover, breakers, budgets, moderation, cache, pacing, one
// usage record).
//
// Converse and ConverseStream are API exchange.Converse: the body is
// decoded into the canonical Prompt (prompt.go), which budgets,
// moderation and the cache read; a Bedrock target (which speaks the
// Converse API) gets the client's body byte for byte and its answer -
// the Converse body, or each event-stream frame - is relayed untouched
// (Raw events, read back by DecodeRaw for the cache and pacing); every
// other target translates the Prompt, and the answer is built from
// canonical events (converse.go): a Converse body, or ConverseStream's
// event-stream frames. InvokeModel
// bodies are the model family's own: a Claude body (anthropic_version,
// anthropic_beta) is the Messages request it stands for
// (messageswire.FromBedrockInvoke), so the request is API
// exchange.Messages, an Anthropic target gets it byte for byte (and a
// Bedrock target speaking Messages too), and the answer is the Anthropic
// body, or each Anthropic stream event as one `chunk` (invoke.go).
//
// Errors are Bedrock's (errors.go): {"message"} with x-amzn-ErrorType
// naming the exception the SDKs map, before the first byte; an exception
// frame after it, never a clean end. The caller's team key arrives as a
// Bedrock API key (Authorization: Bearer); a SigV4 signature is refused
// with an AccessDeniedException saying so (front.go).
package bedrock

import (
	"net/http"

	"github.com/llmgw/llmgw/pkg/config"
	"github.com/llmgw/llmgw/pkg/exchange"
	"github.com/llmgw/llmgw/pkg/gwerr"
	"github.com/llmgw/llmgw/pkg/ingress"
	"github.com/llmgw/llmgw/pkg/ingress/messages"
	"github.com/llmgw/llmgw/pkg/wire/bedrockwire"
	"github.com/llmgw/llmgw/pkg/wire/messageswire"
)

// Ingress is one Bedrock Runtime operation.
type Ingress struct {
	Op bedrockwire.Operation
}

var (
	_ ingress.Ingress       = Ingress{}
	_ ingress.Counter       = Ingress{}
	_ ingress.HeaderChecker = Ingress{}
	_ ingress.RouteNamer    = Ingress{}
)

// Match returns the ingress of a Bedrock Runtime path: the operation's
// (in), or for count-tokens its Counter (counter); both nil for any
// other path.
func Match(path string) (in, counter ingress.Ingress) {
	_, op, ok := bedrockwire.ParsePath(path)
	switch {
	case !ok:
		return nil, nil
	case op == bedrockwire.CountTokens:
		return nil, Ingress{Op: op}
	}
	return Ingress{Op: op}, nil
}

// invoke reports whether the operation takes a model family's own body.
func (i Ingress) invoke() bool {
	return i.Op == bedrockwire.InvokeModel || i.Op == bedrockwire.InvokeModelWithResponseStream
}

// API implements ingress.Ingress: Messages for InvokeModel's Claude
// bodies, Converse for the rest.
func (i Ingress) API() exchange.API {
	if i.invoke() {
		return exchange.Messages
	}
	return exchange.Converse
}

// RouteName implements ingress.RouteNamer: a modelId names the route of
// that name, else the route listing it in bedrock_model_ids.
func (Ingress) RouteName(cfg *config.Config, name string) string {
	if r, ok := cfg.BedrockRoute(name); ok {
		return r
	}
	return name
}

// modelID is the model id of the request's path.
func modelID(r *http.Request) string {
	id, _, _ := bedrockwire.ParsePath(r.URL.Path)
	return id
}

// Decode implements ingress.Ingress.
func (i Ingress) Decode(r *http.Request, body []byte, req *exchange.Request) error {
	if err := refuseHeaders(r); err != nil {
		return err
	}
	id := modelID(r)
	if i.invoke() {
		return decodeInvoke(r, body, req, id, i.Op == bedrockwire.InvokeModelWithResponseStream, false)
	}
	prompt, lost, err := decodeConverse(body, bedrockwire.ConverseMembers)
	if err != nil {
		return err
	}
	req.Prompt, req.Body, req.Untranslated = prompt, body, lost
	req.Route, req.Stream, req.WantsUsage = id, i.Op == bedrockwire.ConverseStream, true
	return nil
}

// decodeInvoke reads a Claude InvokeModel body as the Messages request it
// stands for (count: a count_tokens request).
func decodeInvoke(r *http.Request, body []byte, req *exchange.Request, id string, stream, count bool) error {
	mb, betas, err := messageswire.FromBedrockInvoke(body, id, stream)
	if err != nil {
		return gwerr.New(gwerr.InvalidRequest, "%s", err.Error()).WithParam("body")
	}
	mr := new(http.Request)
	*mr = *r
	mr.Header = http.Header{}
	for _, b := range betas {
		mr.Header.Add("anthropic-beta", b)
	}
	if count {
		return messages.Ingress{}.DecodeCount(mr, mb, req)
	}
	return messages.Ingress{}.Decode(mr, mb, req)
}

// refuseHeaders refuses what the gateway cannot honour from InvokeModel's
// headers: a guardrail named in X-Amzn-Bedrock-GuardrailIdentifier.
func refuseHeaders(r *http.Request) error {
	if r.Header.Get("X-Amzn-Bedrock-GuardrailIdentifier") != "" {
		return gwerr.New(gwerr.InvalidRequest, "guardrails named on the request (X-Amzn-Bedrock-GuardrailIdentifier) are not supported by this gateway").
			WithParam("X-Amzn-Bedrock-GuardrailIdentifier").WithCode("unsupported_feature")
	}
	return nil
}

// NewEncoder implements ingress.Ingress.
func (i Ingress) NewEncoder(req *exchange.Request) ingress.Encoder {
	if i.invoke() {
		inner := messages.Ingress{}.NewEncoder(req)
		if !req.Stream {
			return inner // the Anthropic body, as InvokeModel answers it
		}
		return &chunkEncoder{inner: inner, start: req.Start}
	}
	return newConverseEncoder(req)
}
