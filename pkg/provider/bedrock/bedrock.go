// Package bedrock is the adapter for Amazon Bedrock's Converse API
// (provider kind "bedrock"), and for Claude's own Messages API on Bedrock
// (InvokeModel: a Messages client at a target whose model is Claude is
// served with its own body, see invoke.go), and for Bedrock's own Converse
// API (a Converse client's body passes through, see passthrough.go).
// Otherwise it translates the request's canonical Prompt
// (exchange.Request.Prompt) into a Converse request,
// calls Converse (non-streaming) or ConverseStream (streaming) through the
// AWS SDK, and translates the answer into canonical events (exchange.Event).
//
// Credentials come from the default AWS chain (environment, shared files,
// SSO, container and instance roles; the SDK also honours a Bedrock API key
// in AWS_BEARER_TOKEN_BEDROCK); the region is the provider's
// `region` (else AWS_REGION); the endpoint is the provider's `endpoint`,
// else AWS_ENDPOINT_URL_BEDROCK_RUNTIME, else the regional default. The
// target's model is a model id, an inference-profile id or an ARN.
//
// Semantics, request side (Prompt -> Converse; request.go, content.go):
//   - the system prompt and system messages -> system blocks, in order,
//     wherever they appear (text only); user and assistant turns -> user and
//     assistant messages, consecutive turns of one role merged (Converse
//     requires alternation); tool results are blocks of user turns.
//   - images: bytes (png, jpeg, gif, webp) -> image bytes; s3:// URLs -> S3
//     locations; http(s) URLs are refused (bedrock cannot fetch URLs).
//     Image detail has no equivalent and is ignored.
//   - documents: bytes of pdf, csv, doc, docx, xls, xlsx, html, txt or md
//     -> document blocks (the name from the title or file name, reduced
//     to the characters bedrock allows, else document-N; context;
//     citations enabled); documents by URL or of other types are refused.
//   - tools -> toolConfig.tools (toolSpec with the JSON schema; strict passes
//     through); tool choice auto/any/named -> (none)/any/tool.
//     Tool choice none: no tools are sent when the conversation has no
//     tool calls; refused when it has (bedrock then requires the tool
//     definitions and cannot forbid calls). Tool calls or results without
//     tools are refused for the same reason. Custom and built-in tools are
//     refused.
//   - tool use -> toolUse blocks; tool results -> toolResult blocks (status
//     error for a failure). Tool call ids bedrock cannot take (it wants
//     1-64 of [a-zA-Z0-9_-]) are replaced by a hash, the same in the call
//     and in its result.
//   - thinking, for Anthropic's models (base model anthropic.claude-...):
//     the reasoning mode (enabled with its budget, adaptive, disabled) and
//     top_k -> additionalModelRequestFields {"thinking", "top_k"}, as the
//     Messages API names them; an earlier turn's thinking ->
//     reasoningContent.reasoningText with its signature, redacted thinking
//     -> reasoningContent.redactedContent (its bytes), byte-exact. Other
//     models refuse a thinking configuration and top_k, and their history
//     goes without earlier thinking blocks.
//   - a message left with no content (e.g. "") is refused: bedrock does not
//     accept empty messages.
//   - the output limit (else the target's max_tokens), temperature, top_p,
//     stop -> inferenceConfig, unscaled.
//   - a json_schema output format -> outputConfig.textFormat (structured
//     output); json_object is refused (bedrock needs a schema). A reasoning
//     effort low/medium/high/xhigh -> outputConfig.effort.
//   - cache breakpoints (ttl "5m" or "1h") on a block, a system block or a
//     tool -> a cachePoint block right after it (bedrock caches the prefix
//     up to each cachePoint), for the models that support prompt caching
//     (the table in models.go, overridable per target); for any other model
//     they are dropped, never a 4xx. A breakpoint inside a tool result is
//     refused (bedrock takes one after the result).
//   - refused before any call (provider.Refuse: unsupported_feature, unless
//     the route's translate_without lets the feature drop), naming the
//     feature and the target: several choices, non-zero presence or
//     frequency penalties, seed, no-parallel tool calls with tools, and
//     the above. What a Prompt cannot hold (logprobs, audio, legacy
//     function calling, unknown fields, ...) the registry's guard refuses
//     (exchange.Request.Untranslated).
//   - ignored, because they do not change what the model generates: user,
//     metadata, message names, an earlier answer's citations (its text is
//     sent).
//
// Semantics, response side (Converse -> canonical events, which the
// client's ingress encodes; see translator and completion):
//   - streams: messageStart -> Start (bedrock's request id, the target's
//     model, the time of the call); text deltas -> Text; toolUse block
//     starts -> ToolCall with id and name, indexed 0, 1, ... by tool call
//     (not by bedrock's block index); toolUse input deltas -> ToolArgs at
//     that index; reasoning text -> Reasoning, its signature -> Signature,
//     redacted reasoning -> RedactedReasoning (base64); messageStop ->
//     Finish; metadata -> Usage (after Finish), then io.EOF.
//   - Converse: the same events for the whole output, in block order,
//     tool inputs re-encoded as JSON arguments; an empty success is
//     provider.EmptyResponse.
//   - finish reasons: end_turn, stop_sequence -> stop; max_tokens,
//     model_context_window_exceeded -> length; tool_use -> tool_calls;
//     guardrail_intervened, content_filtered -> content_filter;
//     malformed_model_output, malformed_tool_use -> a provider failure
//     (unavailable, or interrupted after the first token); unknown -> stop.
//     Finish.Stop keeps bedrock's own stopReason.
//   - usage: Input = inputTokens + cacheReadInputTokens +
//     cacheWriteInputTokens (bedrock's inputTokens excludes cached tokens;
//     the gateway counts every prompt token), CacheRead = cache reads,
//     CacheWrite = cache writes.
//
// An event whose JSON payload is not valid JSON is dropped before the
// SDK's reader sees it (which would end the stream) and counted on the
// request's trace (malformed.go).
//
// Errors are mapped as documented on callError (the call itself) and
// streamError (exceptions inside the event stream). A stream that ends
// without messageStop and metadata is interrupted, never a clean end.
package bedrock

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strings"
	"sync/atomic"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	awsmiddleware "github.com/aws/aws-sdk-go-v2/aws/middleware"
	awshttp "github.com/aws/aws-sdk-go-v2/aws/transport/http"
	awsconfig "github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/service/bedrockruntime"
	"github.com/aws/smithy-go/middleware"
	smithyhttp "github.com/aws/smithy-go/transport/http"
	"github.com/aws/smithy-go/transport/http/protocol/restjson1"

	"github.com/llmgw/llmgw/pkg/config"
	"github.com/llmgw/llmgw/pkg/exchange"
	"github.com/llmgw/llmgw/pkg/gwerr"
	"github.com/llmgw/llmgw/pkg/provider"
	"github.com/llmgw/llmgw/pkg/provider/openaicompat"
)

var timeNow = time.Now

// API is the part of the Bedrock runtime client the adapter uses. The SDK
// client satisfies it; tests may inject their own.
type API interface {
	Converse(ctx context.Context, params *bedrockruntime.ConverseInput, optFns ...func(*bedrockruntime.Options)) (*bedrockruntime.ConverseOutput, error)
	ConverseStream(ctx context.Context, params *bedrockruntime.ConverseStreamInput, optFns ...func(*bedrockruntime.Options)) (*bedrockruntime.ConverseStreamOutput, error)
}

var _ API = (*bedrockruntime.Client)(nil)

// Adapter sends requests to one Bedrock provider.
type Adapter struct {
	id  string
	api API
	// oai are the passthroughs to Bedrock's OpenAI-compatible endpoints,
	// by openai_endpoint value (openai.go); nil for an adapter built over
	// an API alone (NewWithAPI), whose targets then speak no OpenAI API.
	oai map[string]*openaicompat.Adapter
}

var (
	_ provider.Provider = (*Adapter)(nil)
)

// New builds the adapter for provider id: one SDK client, from the default
// AWS config (credential chain, AWS_ENDPOINT_URL_BEDROCK_RUNTIME,
// AWS_CA_BUNDLE) with the provider's region and endpoint. It makes no
// network call. The SDK's own retries are off: the failover engine decides
// retries.
//
// hc nil (the factory's choice) means the SDK's buildable HTTP client,
// tuned like the other providers' (pooled keep-alive connections, the
// provider's connect timeout, no total timeout: streams are bounded by the
// failover engine) and still honouring AWS_CA_BUNDLE, which the SDK can
// only add to its own client type. A non-nil hc replaces it (tests).
func New(ctx context.Context, id string, p *config.Provider, hc aws.HTTPClient) (*Adapter, error) {
	return NewWithHTTP(ctx, id, p, hc, nil)
}

// NewWithHTTP is New with web, the HTTP client of the OpenAI-compatible
// endpoints (openai.go: the registry's client for the provider); nil
// means the SDK's transport, bounded and following no redirect.
func NewWithHTTP(ctx context.Context, id string, p *config.Provider, hc aws.HTTPClient, web *http.Client) (*Adapter, error) {
	if p.Endpoint != "" {
		u, err := url.Parse(p.Endpoint)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			return nil, fmt.Errorf("provider %s: endpoint %q is not an http(s) URL", id, p.Endpoint)
		}
	}
	opts := []func(*awsconfig.LoadOptions) error{awsconfig.WithHTTPClient(httpClient(p))}
	if p.Region != "" {
		opts = append(opts, awsconfig.WithRegion(p.Region))
	}
	cfg, err := awsconfig.LoadDefaultConfig(ctx, opts...)
	if err != nil {
		return nil, fmt.Errorf("provider %s: aws config: %w", id, err)
	}
	if cfg.Region == "" {
		return nil, fmt.Errorf("provider %s: region is required for kind bedrock (set region, or AWS_REGION)", id)
	}
	base := noRedirects(cfg.HTTPClient)
	if hc != nil {
		base = hc
	}
	client := bedrockruntime.NewFromConfig(cfg, func(o *bedrockruntime.Options) {
		if p.Endpoint != "" {
			o.BaseEndpoint = aws.String(p.Endpoint)
		}
		o.HTTPClient = plainBodies{HTTPClient: base, id: id, limit: provider.BodyLimit(ctx)}
		o.Retryer = aws.NopRetryer{}
	})
	if web == nil {
		web = webClient(id, base, provider.BodyLimit(ctx))
	}
	a := NewWithAPI(id, client)
	if a.oai, err = openaiUpstreams(id, p, client.Options(), web); err != nil {
		return nil, err
	}
	return a, nil
}

// plainBodies hides the WriteTo method of the SDK's request bodies.
//
// smithy-go wraps a request body in a reader whose WriteTo returns io.EOF
// once the SDK has closed it, and the SDK closes it as soon as the
// response headers arrive. net/http copies the body with io.Copy, which
// prefers WriteTo and, after the Content-Length bytes, makes one more copy
// to check for extra data. When a fast upstream answers before that last
// copy, it gets io.EOF as an error, counts the request write as failed and
// closes the connection, cutting the ConverseStream response that has just
// begun ("use of closed network connection"). With Read only, the last
// copy sees a plain end of input.
//
// It also bounds what the SDK reads into memory: a whole body (InvokeModel,
// Converse, an error) to limit (MaxErrBody for an error), an event stream
// per frame (provider.LimitFrames), before the SDK's decoder allocates it.
type plainBodies struct {
	aws.HTTPClient
	id    string
	limit int64
}

// readOnly exposes only Read and Close.
type readOnly struct{ io.ReadCloser }

// Do implements aws.HTTPClient.
func (c plainBodies) Do(r *http.Request) (*http.Response, error) {
	if r.Body != nil && r.Body != http.NoBody {
		if _, ok := r.Body.(io.WriterTo); ok {
			r.Body = readOnly{r.Body}
		}
	}
	resp, err := c.HTTPClient.Do(r)
	if err == nil && resp.Body != nil {
		switch {
		case resp.StatusCode < 200 || resp.StatusCode > 299:
			resp.Body = provider.LimitBody(c.id, resp.Body, provider.MaxErrBody)
		case strings.HasPrefix(resp.Header.Get("Content-Type"), "application/vnd.amazon.eventstream"):
			resp.Body = provider.LimitFrames(c.id, resp.Body, provider.MaxEventFrame)
		default:
			resp.Body = provider.LimitBody(c.id, resp.Body, c.limit)
		}
		filterBody(r, resp)
	}
	return resp, err
}

// httpClient is the SDK's buildable client with the gateway's transport
// settings (sent through noRedirects).
func httpClient(p *config.Provider) *awshttp.BuildableClient {
	connect := p.ConnectTimeout.D()
	if connect == 0 {
		connect = 5 * time.Second
	}
	return awshttp.NewBuildableClient().
		WithDialerOptions(func(d *net.Dialer) { d.Timeout, d.KeepAlive = connect, 30*time.Second }).
		WithTransportOptions(func(tr *http.Transport) {
			tr.TLSHandshakeTimeout = connect
			tr.MaxIdleConns, tr.MaxIdleConnsPerHost = 1024, 256
			tr.IdleConnTimeout = 90 * time.Second
		}).
		WithTimeout(0)
}

// noRedirects is the client the SDK sends with: the transport of the
// loaded config's client (its CA bundle applied) in a client that follows
// no redirect. The SDK's own client follows 307 and 308 with the signed
// body to whatever host they name.
func noRedirects(c aws.HTTPClient) aws.HTTPClient {
	if bc, ok := c.(*awshttp.BuildableClient); ok {
		return &http.Client{Transport: bc.GetTransport(), CheckRedirect: provider.NoRedirects}
	}
	return c
}

// NewWithAPI returns the adapter for provider id over api.
func NewWithAPI(id string, api API) *Adapter { return &Adapter{id: id, api: api} }

// Send implements provider.Provider. An embeddings request goes to
// InvokeModel (embed.go); a Messages request at a target whose model is
// Claude to InvokeModel or InvokeModelWithResponseStream with the client's
// own body (invoke.go); a Converse request (the Bedrock Runtime ingress)
// with the client's own body (passthrough.go). Any other request is
// translated to Converse (and refused, if it asks for what bedrock cannot
// do) before any call.
func (a *Adapter) Send(ctx context.Context, call *provider.Call) (provider.Stream, error) {
	if call.Req.API == exchange.Embeddings {
		return a.sendEmbeddings(ctx, call)
	}
	if call.Req.API == exchange.Messages && speaksMessages(call.Model(), call.Step.Options) {
		return a.sendMessages(ctx, call)
	}
	if speaksOpenAI(string(call.Req.API), call.Model(), call.Step.Options) && a.oai != nil {
		return a.sendOpenAI(ctx, call)
	}
	if provider.Passthrough(call.Req, exchange.Converse) {
		return a.sendConverse(ctx, call) // the client's own Converse body (passthrough.go)
	}
	model := call.Model()
	tr := converter{call: call, target: a.id + "/" + model, claude: claude(model, call.Step.Options)}
	tr.cacheMessages, tr.cacheTools = caching(model, call.Step.Options)
	req, err := tr.translateRequest(call.Prompt(), model, call.MaxTokens())
	if err != nil {
		return nil, err
	}
	reqBytes := len(call.Req.Body)
	if call.Req.Stream {
		malformed := new(atomic.Int64)
		out, err := a.api.ConverseStream(withMalformedCounter(ctx, malformed), req.streamInput(), traceHeader(call.Req.TraceParent), ownStreamCodec)
		if err != nil {
			observeError(call, err)
			return nil, callError(ctx, a.id, err)
		}
		observe(call, out.ResultMetadata)
		es := out.GetStream()
		if es == nil || es.Reader == nil {
			return nil, &gwerr.Error{Category: gwerr.Unavailable, Message: "provider returned no event stream", Provider: a.id}
		}
		tr := newTranslator(responseID(out.ResultMetadata), model, timeNow().Unix())
		s := newStream(ctx, a.id, es, tr, reqBytes)
		s.malformed, s.trace = malformed, &call.Req.Trace
		return s, nil
	}
	out, err := a.api.Converse(ctx, req.converseInput(), traceHeader(call.Req.TraceParent))
	if err != nil {
		observeError(call, err)
		return nil, callError(ctx, a.id, err)
	}
	observe(call, out.ResultMetadata)
	evs, u, err := completion(a.id, responseID(out.ResultMetadata), model, timeNow().Unix(), out, reqBytes)
	if err != nil {
		return nil, err
	}
	return provider.Events(u, evs...), nil
}

// traceHeader forwards the request's trace context: a middleware that adds
// the traceparent header to the SDK's HTTP request (before it is signed).
// ownStreamCodec gives one streaming call (ConverseStream,
// InvokeModelWithResponseStream) a protocol of its own. The SDK's client
// holds one restJson1 protocol whose event-stream codec (decoder and
// payload buffer) every stream of the client shares (smithy-go v1.28.9,
// internal/eventstream.Codec): two streams read at once race on it and can
// swap each other's frames. A protocol per call keeps each stream's
// decoder to itself; it costs a small allocation per stream.
func ownStreamCodec(o *bedrockruntime.Options) { o.Protocol = restjson1.New(nil) }

func traceHeader(tp string) func(*bedrockruntime.Options) {
	return func(o *bedrockruntime.Options) {
		if tp != "" {
			o.APIOptions = append(o.APIOptions, smithyhttp.SetHeaderValue("traceparent", tp))
		}
	}
}

// responseID is bedrock's request id, or a random id (24 hex digits).
func responseID(md middleware.Metadata) string {
	if rid, ok := awsmiddleware.GetRequestIDMetadata(md); ok && rid != "" {
		return rid
	}
	var b [12]byte
	rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

// observe reports a success's HTTP status and headers to the call.
func observe(call *provider.Call, md middleware.Metadata) {
	if call.OnResponse == nil {
		return
	}
	if r, ok := awsmiddleware.GetRawResponse(md).(*smithyhttp.Response); ok && r != nil && r.Response != nil {
		call.OnResponse(r.StatusCode, r.Header)
	}
}

// observeError reports an error response's HTTP status and headers.
func observeError(call *provider.Call, err error) {
	if call.OnResponse == nil {
		return
	}
	if status, h := httpResponse(err); status != 0 {
		call.OnResponse(status, h)
	}
}
