// Package exchange holds the request-scoped model that every layer of the
// gateway speaks: the canonical [Request] an ingress decodes and every
// egress (provider adapter) serves, the [Event]s of a response, the
// [Attempt] trace the failover engine writes, and the usage [Record] written
// once per request. The HTTP front, the failover engine, the limiter and the
// usage recorder all import it; it imports none of them.
package exchange

import (
	"context"
	"net/http"
	"slices"
	"strings"
	"time"

	"github.com/llmgw/llmgw/pkg/config"
)

// API names a client-facing wire API (an ingress) or the API an upstream
// speaks. When the two are the same the gateway passes bytes through.
type API string

// The APIs the gateway knows.
const (
	// Chat is the OpenAI Chat Completions API (POST /v1/chat/completions).
	Chat API = "chat"
	// Messages is the Anthropic Messages API (POST /v1/messages).
	Messages API = "messages"
	// Responses is the OpenAI Responses API (POST /v1/responses).
	Responses API = "responses"
	// Embeddings is the OpenAI embeddings API (POST /v1/embeddings).
	Embeddings API = "embeddings"
	// Converse is Amazon Bedrock's Converse API (POST
	// /model/{modelId}/converse and converse-stream). Bedrock's
	// InvokeModel with a Claude body is the Messages API.
	Converse API = "converse"
	// Prefill is the API of a continuation request (the failover engine's,
	// never a client's): no upstream speaks it, so every adapter builds the
	// request from its canonical form (Prompt, which ends with the assistant
	// text to continue) and answers in canonical events.
	Prefill API = "prefill"
)

// Request is one client request, from the moment an ingress decoded it to
// its usage record. One value flows through every layer: the ingress fills
// the client's part, the limiter sets OutputCap, the failover engine
// appends to Trace, and the record is built from it at the end.
type Request struct {
	// ID is the gateway's request id (x-request-id).
	ID string
	// TraceID is the request's W3C trace id (pkg/traceid): the client's
	// traceparent or X-Amzn-Trace-Id, the Lambda invocation's X-Ray trace,
	// or a generated one. It is on every log line, record and error body.
	TraceID string
	// TraceParent is the traceparent header every adapter sends upstream:
	// TraceID with the gateway's own span id.
	TraceParent string
	// API is the client API the request arrived on.
	API API
	// Start is when the request arrived.
	Start time.Time
	// Caller is the authenticated identity (never nil once the front has
	// authenticated; an anonymous caller has an empty Team).
	Caller *Caller
	// Tag is the feature tag (x-gateway-tag or metadata.tag), "" if none.
	Tag string

	// Route is the logical model the client asked for; Steps and Policy
	// are its resolved fallback chain.
	Route  string
	Steps  []config.Step
	Policy config.Policy

	// Stream is true when the client asked for a streamed response.
	Stream bool
	// WantsUsage is true when the client wants usage reported in its
	// stream (OpenAI's stream_options.include_usage; always true on APIs
	// that always report usage).
	WantsUsage bool
	// Prompt is a generation request in canonical form (see Prompt): what
	// every ingress decodes into and every translating adapter reads. The
	// client's bytes stay in Body for same-API passthrough.
	Prompt *Prompt
	// Embed is an embeddings request in canonical form (API Embeddings;
	// Prompt is then nil).
	Embed *EmbedRequest
	// Body is the request body exactly as the client sent it. An upstream
	// that speaks API receives it with only the model (and the output cap)
	// rewritten.
	Body []byte
	// Header holds the client headers an upstream of the same API must
	// receive unchanged (anthropic-version, anthropic-beta); nil if none.
	Header http.Header
	// Untranslated lists what the client asked for that only an upstream
	// speaking API natively can honour: what the canonical form (Prompt)
	// cannot carry (Anthropic's context_management, a Responses built-in
	// tool, stored conversation state). An upstream that speaks API gets it
	// in Body; every other target refuses the attempt before any network
	// call (the provider registry's guard), so the failover engine tries the
	// next target and nothing the client asked for is silently lost.
	Untranslated []Feature

	// OutputCap, when > 0, is the output the request was admitted for
	// while the client gave no max tokens: every adapter sends it as the
	// output limit, so spend cannot outrun the reservation. The limiter
	// sets it.
	OutputCap int

	// Trace is what the failover engine did: every attempt and skip, and
	// which target served.
	Trace Trace
}

// MaxTokens is the output limit an attempt at step must send to a provider
// that requires one: the step's default, lowered to OutputLimit.
func (r *Request) MaxTokens(step config.Step) int {
	if c := r.OutputLimit(step); c > 0 && (step.MaxTokens == 0 || c < step.MaxTokens) {
		return c
	}
	return step.MaxTokens
}

// OutputLimit is the output limit an attempt at step must send when the
// client gave none, 0 for none: the admitted cap (OutputCap), lowered to
// the step's variant cap.
func (r *Request) OutputLimit(step config.Step) int {
	c := r.OutputCap
	if v := step.Variant; v != nil && v.MaxTokensCap > 0 && (c == 0 || v.MaxTokensCap < c) {
		c = v.MaxTokensCap
	}
	return c
}

// Feature is one part of a client request, named by its parameter path
// (Param, e.g. "thinking" or "tools[2]") and described for humans (What,
// e.g. "extended thinking"), with an optional explanation appended to the
// refusal (Why). Key is its stable name, the one a route's
// translate_without lists ("thinking", "context_management",
// "tools.defer_loading"; an unknown field's path without indices).
type Feature struct {
	Param, What, Why, Key string
}

// FeatureKey is the stable name of a request field path: the path without
// its list indices ("tools[2].defer_loading" -> "tools.defer_loading").
func FeatureKey(param string) string {
	var b strings.Builder
	for i := 0; i < len(param); i++ {
		if param[i] == '[' {
			for i < len(param) && param[i] != ']' {
				i++
			}
			continue
		}
		b.WriteByte(param[i])
	}
	return b.String()
}

// RefusedFeatures returns the features of Untranslated that a target which
// must translate cannot serve: all of them, less those whose Key the route
// lets it drop (allowed, the route's translate_without).
func (r *Request) RefusedFeatures(allowed []string) []Feature {
	var out []Feature
	for _, f := range r.Untranslated {
		k := f.Key
		if k == "" {
			k = FeatureKey(f.Param)
		}
		if !slices.Contains(allowed, k) {
			out = append(out, f)
		}
	}
	return out
}

// Caller is the authenticated identity behind a request.
type Caller struct {
	// Team is the team id, recorded on every usage record.
	Team string
	// KeyID names the team key that was used (its config id, never the key).
	KeyID string
	// Admin callers may read every team's usage.
	Admin bool
	// Routes limits the routes the caller may use; empty means all.
	Routes []string
}

// MayUse reports whether the caller may call a route.
func (c *Caller) MayUse(route string) bool {
	return c == nil || len(c.Routes) == 0 || slices.Contains(c.Routes, route)
}

type callerKey struct{}

// WithCaller returns a context carrying the authenticated caller, for
// handlers behind the gateway's authentication (GET /v1/usage).
func WithCaller(ctx context.Context, c *Caller) context.Context {
	return context.WithValue(ctx, callerKey{}, c)
}

// CallerFrom returns the authenticated caller of a request's context (nil
// outside an authenticated request).
func CallerFrom(ctx context.Context) *Caller {
	c, _ := ctx.Value(callerKey{}).(*Caller)
	return c
}
