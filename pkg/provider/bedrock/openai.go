package bedrock

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strings"

	"github.com/aws/aws-sdk-go-v2/aws"
	v4 "github.com/aws/aws-sdk-go-v2/aws/signer/v4"
	"github.com/aws/aws-sdk-go-v2/service/bedrockruntime"
	"github.com/aws/smithy-go/auth/bearer"

	"github.com/llmgw/llmgw/pkg/config"
	"github.com/llmgw/llmgw/pkg/exchange"
	"github.com/llmgw/llmgw/pkg/provider"
	"github.com/llmgw/llmgw/pkg/provider/openaicompat"
)

// OpenAI's own APIs on Bedrock (docs/bedrock-openai.md). Bedrock serves
// OpenAI's models (openai.gpt-oss-120b-1:0, openai.gpt-oss-20b-1:0, ...)
// through OpenAI-compatible endpoints that take the Chat Completions and
// Responses bodies as OpenAI defines them and answer with OpenAI's JSON
// and server-sent events:
//
//	runtime  https://bedrock-runtime.{region}.amazonaws.com/openai/v1   SigV4 service "bedrock"
//	mantle   https://bedrock-mantle.{region}.api.aws/v1                  SigV4 service "bedrock-mantle"
//
// A target whose openai_endpoint is runtime or mantle (the default for a
// base model openai.*: runtime) speaks Chat Completions natively, and the
// Responses API too except where Bedrock does not offer it (gpt-oss on
// runtime: Responses for the gpt-oss models is mantle-only). Those
// requests go through the openai kind's own passthrough
// (openaicompat.NewAt): the client's body byte for byte but the model
// (and the usage, cap and variant edits that adapter makes), the SSE
// relayed as it comes, usage read from the stream. Only the
// authentication differs: a Bedrock API key (AWS_BEARER_TOKEN_BEDROCK,
// which the SDK resolves) as a Bearer token, else a SigV4 signature from
// the AWS credential chain (the function's role), for the endpoint's
// signing service and the provider's region.

// The openai_endpoint values.
const (
	endpointRuntime = "runtime"
	endpointMantle  = "mantle"
	endpointOff     = "off"
)

// openaiFamily is the base-model prefix of OpenAI's models on Bedrock.
const openaiFamily = "openai."

// openaiEndpoint is the OpenAI-compatible endpoint a target is served at
// (endpointRuntime, endpointMantle), or "" when it speaks no OpenAI API:
// its openai_endpoint option, else runtime for OpenAI's models.
func openaiEndpoint(model string, opts map[string]string) string {
	switch v := opts["openai_endpoint"]; v {
	case endpointRuntime, endpointMantle:
		return v
	case endpointOff:
		return ""
	}
	if strings.HasPrefix(baseModel(model, opts), openaiFamily) {
		return endpointRuntime
	}
	return ""
}

// speaksOpenAI reports whether a target speaks api (chat, responses)
// natively at its OpenAI-compatible endpoint.
func speaksOpenAI(api, model string, opts map[string]string) bool {
	ep := openaiEndpoint(model, opts)
	switch exchange.API(api) {
	case exchange.Chat:
		return ep != ""
	case exchange.Responses:
		return ep == endpointMantle || ep == endpointRuntime && !strings.HasPrefix(baseModel(model, opts), openaiFamily+"gpt-oss")
	}
	return false
}

// checkEndpoint checks an openai_endpoint option value.
func checkEndpoint(v string) string {
	switch v {
	case endpointRuntime, endpointMantle, endpointOff:
		return ""
	}
	return config.Show(v) + " is not runtime, mantle or off"
}

// openaiUpstreams builds the OpenAI passthrough adapters of provider id,
// one per endpoint, over web and authenticated as the SDK client o would
// authenticate (its bearer token when it prefers one, else SigV4 with its
// credentials).
func openaiUpstreams(id string, p *config.Provider, o bedrockruntime.Options, web *http.Client) (map[string]*openaicompat.Adapter, error) {
	runtimeRoot := "https://bedrock-runtime." + o.Region + ".amazonaws.com"
	if o.BaseEndpoint != nil && *o.BaseEndpoint != "" {
		runtimeRoot = *o.BaseEndpoint // the provider's endpoint, or AWS_ENDPOINT_URL_BEDROCK_RUNTIME
	}
	mantleRoot := "https://bedrock-mantle." + o.Region + ".api.aws"
	if p.Endpoint != "" {
		mantleRoot = p.Endpoint
	}
	roots := map[string]struct{ url, service string }{
		endpointRuntime: {strings.TrimSuffix(runtimeRoot, "/") + "/openai/v1", "bedrock"},
		endpointMantle:  {strings.TrimSuffix(mantleRoot, "/") + "/v1", "bedrock-mantle"},
	}
	out := make(map[string]*openaicompat.Adapter, len(roots))
	for ep, r := range roots {
		auth := &awsAuth{service: r.service, region: o.Region, creds: o.Credentials, signer: v4.NewSigner()}
		if len(o.AuthSchemePreference) > 0 && o.AuthSchemePreference[0] == "httpBearerAuth" {
			auth.bearer = o.BearerAuthTokenProvider
		}
		a, err := openaicompat.NewAt(id, p, web, openaicompat.Upstream{BaseURL: r.url, Responses: true, Authorize: auth.authorize})
		if err != nil {
			return nil, err
		}
		out[ep] = a
	}
	return out, nil
}

// awsAuth authenticates a request to an OpenAI-compatible endpoint: a
// Bedrock API key as a Bearer token when bearer is set, else a SigV4
// signature of the request (its headers and body) for service in region.
type awsAuth struct {
	service, region string
	creds           aws.CredentialsProvider
	bearer          bearer.TokenProvider
	signer          *v4.Signer
}

// errNoCredentials is the failure of a target with no AWS credentials.
var errNoCredentials = errors.New("no AWS credentials (set AWS_BEARER_TOKEN_BEDROCK, or give the gateway a role)")

// authorize implements provider.Sender.Authorize.
func (a *awsAuth) authorize(req *http.Request, body []byte) error {
	ctx := req.Context()
	if a.bearer != nil {
		tok, err := a.bearer.RetrieveBearerToken(ctx)
		if err != nil {
			return fmt.Errorf("bedrock api key: %w", err)
		}
		if tok.Value == "" {
			return errNoCredentials
		}
		req.Header.Set("Authorization", "Bearer "+tok.Value)
		return nil
	}
	if a.creds == nil {
		return errNoCredentials
	}
	c, err := a.creds.Retrieve(ctx)
	if err != nil {
		return fmt.Errorf("aws credentials: %w", err)
	}
	if c.AccessKeyID == "" || c.SecretAccessKey == "" {
		return errNoCredentials
	}
	sum := sha256.Sum256(body)
	hash := hex.EncodeToString(sum[:])
	req.Header.Set("X-Amz-Content-Sha256", hash)
	return a.signer.SignHTTP(ctx, c, req, hash, a.service, a.region, timeNow().UTC())
}

// sendOpenAI serves a Chat Completions or Responses request at a target
// that speaks it (speaksOpenAI) through the OpenAI passthrough of its
// endpoint.
func (a *Adapter) sendOpenAI(ctx context.Context, call *provider.Call) (provider.Stream, error) {
	up := a.oai[openaiEndpoint(call.Model(), call.Step.Options)]
	if up == nil {
		return nil, provider.Unsupported(call.Step.ID, "", "the "+string(call.Req.API)+" API")
	}
	return up.Send(ctx, call)
}

// ResponsesResource calls the Responses API state Bedrock keeps (a stored
// response, its input items, cancel, compact) for a target that speaks
// the Responses API (openaicompat.Adapter.ResponsesResource); any other
// target refuses without a network call.
func (a *Adapter) ResponsesResource(ctx context.Context, call *provider.Call, method, path string, query url.Values, body []byte) ([]byte, error) {
	up := a.oai[openaiEndpoint(call.Model(), call.Step.Options)]
	if up == nil || !speaksOpenAI(string(exchange.Responses), call.Model(), call.Step.Options) {
		return nil, provider.Unsupported(call.Step.ID, "", "the Responses API's stored responses")
	}
	return up.ResponsesResource(ctx, call, method, path, query, body)
}

// doTransport sends through an aws.HTTPClient as a RoundTripper (a test's
// client that is not an *http.Client).
type doTransport struct{ aws.HTTPClient }

// RoundTrip implements http.RoundTripper.
func (d doTransport) RoundTrip(r *http.Request) (*http.Response, error) { return d.Do(r) }

// webClient is the HTTP client of the OpenAI paths when the registry
// gives none: the SDK's transport (its CA bundle, its connection settings)
// with the body limit, following no redirect.
func webClient(id string, base aws.HTTPClient, limit int64) *http.Client {
	var rt http.RoundTripper = doTransport{base}
	if c, ok := base.(*http.Client); ok {
		rt = c.Transport
		if rt == nil {
			rt = http.DefaultTransport
		}
	}
	return &http.Client{Transport: provider.LimitTransport(id, rt, limit), CheckRedirect: provider.NoRedirects}
}
