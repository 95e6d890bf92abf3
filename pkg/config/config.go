// Package config holds the gateway's configuration: providers, routes
// (logical models with ordered fallback chains) and the policies that govern
// retries, timeouts and circuit breakers. It is loaded from YAML or JSON,
// defaulted and validated in one step, so the rest of the gateway only ever
// sees a Config that makes sense.
package config

import (
	"bytes"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/llmgw/llmgw/pkg/gwerr"
)

// Config is the whole gateway configuration. Its YAML/JSON shape is the
// public contract documented in docs/configuration.md (every field; a
// test in scripts/docs holds the document to this type).
type Config struct {
	Server    Server               `json:"server,omitempty"`
	Defaults  Policy               `json:"defaults,omitempty"`
	Breaker   BreakerSettings      `json:"breaker,omitempty"`
	Providers map[string]*Provider `json:"providers"`
	Routes    map[string]*Route    `json:"routes"`

	Teams map[string]*Team `json:"teams,omitempty"`
	// IAMCallers map AWS IAM callers to teams (Function URL auth type
	// AWS_IAM).
	IAMCallers []IAMCaller      `json:"iam_callers,omitempty"`
	Prices     map[string]Price `json:"prices,omitempty"`
	Usage      UsageSettings    `json:"usage,omitempty"`

	// Cache tunes the response cache (off unless a route or team enables it).
	Cache CacheSettings `json:"cache,omitempty"`
	// Moderation holds the moderation policies routes and teams name.
	Moderation ModerationSettings `json:"moderation,omitempty"`
	// Telemetry exports OpenTelemetry traces and metrics (off by default).
	Telemetry TelemetrySettings `json:"telemetry,omitempty"`

	chains map[string][]Step // resolved at load, see Chain
	bases  map[string]string // "provider/model" -> a target's base_model option
}

// Server holds listener-level settings.
type Server struct {
	// MaxBodyBytes caps a request body (default 4 MiB); larger bodies get 413.
	MaxBodyBytes int64 `json:"max_body_bytes,omitempty"`
	// MaxUpstreamBodyBytes caps a whole (non-streaming) upstream response
	// body held in memory: an answer, an embeddings or count_tokens
	// response, a Bedrock InvokeModel body (default
	// DefaultMaxUpstreamBodyBytes, 32 MiB). A longer answer is a provider
	// error (unavailable, code upstream_body_too_large) and the next target
	// is tried. Error bodies are read up to 64 KiB; streams are bounded per
	// frame, not in total.
	MaxUpstreamBodyBytes int64 `json:"max_upstream_body_bytes,omitempty"`
	// RequestTimeout is the total deadline of one request (default 10m).
	RequestTimeout Duration `json:"request_timeout,omitempty"`
	// DeadlineMargin is how long before the request's deadline an in-flight
	// stream is ended with a timeout error event, so the client is always
	// told (default 2s). On Lambda the deadline is the invocation's.
	DeadlineMargin Duration `json:"deadline_margin,omitempty"`
	// ClientIdleTimeout is how long one write to a client may stay blocked
	// (the client reads nothing) before the client is dropped: its upstream
	// is cancelled and its usage recorded (default 30s).
	ClientIdleTimeout Duration `json:"client_idle_timeout,omitempty"`
	// CORS lets pages on the listed web origins call the gateway from a
	// browser (off by default).
	CORS CORS `json:"cors,omitempty"`
	// AnthropicBetas are the anthropic-beta values forwarded to upstreams;
	// a client's other values are dropped (default DefaultAnthropicBetas:
	// what Claude Code sends, no server-side tool betas). List "*" to
	// forward every value.
	AnthropicBetas []string `json:"anthropic_betas,omitempty"`
	// AllowUnpricedTools serves requests declaring a server-side tool
	// (web search, code execution, ...) that a target of the chain has no
	// prices.*.tool_calls entry for; its calls then cost 0. Default false:
	// such a request is refused (400), since a budget cannot bound a fee
	// it cannot price.
	AllowUnpricedTools bool `json:"allow_unpriced_tools,omitempty"`
}

// DefaultMaxUpstreamBodyBytes is server.max_upstream_body_bytes when the
// config names none.
const DefaultMaxUpstreamBodyBytes = 32 << 20

// DefaultAnthropicBetas is server.anthropic_betas when the config names
// none: the betas Claude Code and the Anthropic SDKs send for features the
// gateway meters (tokens only). Betas of server-side tools that bill their
// own fees (web search and fetch, code execution, files, MCP) are not in it.
var DefaultAnthropicBetas = []string{
	"claude-code-20250219", "interleaved-thinking-2025-05-14", "fine-grained-tool-streaming-2025-05-14",
	"context-management-2025-06-27", "context-1m-2025-08-07", "advanced-tool-use-2025-11-20", "effort-2025-11-24",
	"prompt-caching-2024-07-31", "token-counting-2024-11-01", "token-efficient-tools-2025-02-19",
	"output-128k-2025-02-19", "extended-cache-ttl-2025-04-11", "structured-outputs-2025-11-13",
	// Sent by Claude Code 2.1.332 (scripts/agents pins it).
	"mid-conversation-tool-changes-2026-07-01", "thinking-token-count-2026-05-13", "per-turn-control-2026-07-01",
	"tool-search-tool-2025-10-19",
}

// Provider is one upstream account: a kind of API, where it is and its keys.
type Provider struct {
	// Kind names the provider kind (openai, anthropic, bedrock, gemini,
	// fake: one per adapter, see RegisterKind).
	Kind string `json:"kind"`
	// BaseURL is the API root, e.g. https://api.openai.com/v1 (openai),
	// https://api.anthropic.com (anthropic) or
	// https://generativelanguage.googleapis.com/v1beta (gemini, the
	// default). A query string (Azure's api-version) is kept on every call.
	BaseURL string `json:"base_url,omitempty"`
	// Keys are references to secrets, tried in priority order. Keys are never
	// written inline: a reference whose variable is unset is skipped.
	Keys []KeyRef `json:"keys,omitempty"`
	// AuthHeader names the header that carries the key: "authorization"
	// (Bearer, the default for openai), "api-key" (Azure), "x-api-key"
	// (the default for anthropic) or "x-goog-api-key" (the default for
	// gemini).
	AuthHeader string `json:"auth_header,omitempty"`
	// Headers are extra, non-secret headers sent on every call.
	Headers map[string]string `json:"headers,omitempty"`
	// Region and Endpoint are for bedrock.
	Region   string `json:"region,omitempty"`
	Endpoint string `json:"endpoint,omitempty"`
	// ConnectTimeout bounds dialing and the TLS handshake (default 5s).
	ConnectTimeout Duration `json:"connect_timeout,omitempty"`
	// Disabled pulls the provider out of every chain without removing it.
	Disabled bool `json:"disabled,omitempty"`
	// Fake scripts a kind: fake provider.
	Fake *FakeScript `json:"fake,omitempty"`
	// Options holds kind-specific settings (e.g. anthropic_version).
	Options map[string]string `json:"options,omitempty"`
	// APIs lists the client APIs an openai-kind upstream speaks natively,
	// so requests on them pass through byte for byte: "chat" (the
	// default), "responses", "embeddings". A request on any other API is
	// translated to chat, except embeddings: a provider that does not list
	// "embeddings" refuses them (embeddings are opt-in, never translated
	// to chat).
	APIs []string `json:"apis,omitempty"`
}

// Speaks reports whether the provider speaks a client API natively, so a
// request on it passes through byte for byte: one of its apis, or, when
// it lists none, of the APIs its kind speaks (Kind.Speaks: chat for
// openai and fake, messages for anthropic).
func (p *Provider) Speaks(api string) bool {
	if len(p.APIs) == 0 {
		return slices.Contains(p.kind().Speaks, api)
	}
	return slices.Contains(p.APIs, api)
}

// KeyRef points at one secret. Exactly one of Env and SSM is set.
type KeyRef struct {
	Env string `json:"env,omitempty"` // an environment variable
	SSM string `json:"ssm,omitempty"` // an SSM SecureString parameter name
	// Priority orders keys: lower is tried first (default: list order).
	Priority int `json:"priority,omitempty"`
}

// FakeScript scripts a deterministic fake model for demos and tests.
type FakeScript struct {
	// Reply is the text streamed back, split into word chunks.
	Reply string `json:"reply,omitempty"`
	// ToolCall, when set, makes the model call this tool instead of replying.
	ToolCall *FakeToolCall `json:"tool_call,omitempty"`
	// FirstTokenDelay is waited before the first chunk; ChunkDelay between chunks.
	FirstTokenDelay Duration `json:"first_token_delay,omitempty"`
	ChunkDelay      Duration `json:"chunk_delay,omitempty"`
	// Fail is how the model fails: "" (it does not), "status" (HTTP Status
	// before the first token), "reset" (connection reset before the first
	// byte), "stall" (never answers), "after_chunks" (the stream is cut after
	// AfterChunks chunks), "empty" (a success with no content).
	Fail        string `json:"fail,omitempty"`
	Status      int    `json:"status,omitempty"`
	AfterChunks int    `json:"after_chunks,omitempty"`
}

// FakeToolCall is the tool call a fake model makes.
type FakeToolCall struct {
	Name      string `json:"name"`
	Arguments string `json:"arguments"`
}

// Route is a logical model that clients ask for by name.
type Route struct {
	// Targets is the ordered fallback chain: the first is the primary.
	Targets []Target `json:"targets"`
	// Policy overrides the config's defaults for this route.
	Policy
	// Pacing is the route's default pacing profile (instant, fast, steady
	// or slow; "" unpaced), for requests that select none.
	Pacing string `json:"pacing,omitempty"`
	// Cache opts the route in to (or out of) the response cache.
	Cache *RouteCache `json:"cache,omitempty"`
	// Moderation names the moderation policy every request of the route
	// is checked under (moderation.policies).
	Moderation string `json:"moderation,omitempty"`
	// BedrockModelIDs are the Bedrock model ids, inference-profile ids or
	// ARNs that name this route on the Bedrock Runtime API (POST
	// /model/{modelId}/converse, ...), so AWS SDK code and Claude Code in
	// Bedrock mode reach it with the ids they already send (e.g.
	// us.anthropic.claude-sonnet-4-5-20250929-v1:0). The route's own name
	// always works too. Each id is listed by one route only and is no
	// other route's name (validated at load).
	BedrockModelIDs []string `json:"bedrock_model_ids,omitempty"`
	// TraceContent exports the route's prompt and completion text on its
	// traces (the GenAI event gen_ai.client.inference.operation.details);
	// off by default: spans carry no content.
	TraceContent bool `json:"trace_content,omitempty"`
	// CacheLocality keeps one conversation on the target and key that last
	// served it while they are healthy, so the provider's prompt cache
	// keeps paying (docs/prompt-caching.md). Nil: off.
	CacheLocality *CacheLocality `json:"cache_locality,omitempty"`
}

// CacheLocality is a route's prompt-cache locality setting.
type CacheLocality struct {
	// TTL is how long a conversation stays with its target after the
	// request that last moved it there (default 1h, at most 24h).
	TTL Duration `json:"ttl,omitempty"`
}

// DefaultLocalityTTL is CacheLocality.TTL's default: Anthropic's longest
// cache lifetime.
const DefaultLocalityTTL = time.Hour

// TTLOrDefault is TTL, or DefaultLocalityTTL when unset.
func (l *CacheLocality) TTLOrDefault() time.Duration {
	if l == nil || l.TTL <= 0 {
		return DefaultLocalityTTL
	}
	return l.TTL.D()
}

// Target is one step of a chain: a provider and its model id, or a
// reference to another route whose chain is spliced in at this point.
type Target struct {
	Provider string `json:"provider,omitempty"`
	Model    string `json:"model,omitempty"`
	Route    string `json:"route,omitempty"`
	// Attempts overrides the route's attempts for this target.
	Attempts int `json:"attempts,omitempty"`
	// FirstTokenTimeout overrides the route's for this target.
	FirstTokenTimeout Duration `json:"first_token_timeout,omitempty"`
	// MaxTokens is sent when the client gives none and the provider requires
	// one (anthropic); default 4096.
	MaxTokens int `json:"max_tokens,omitempty"`
	// Breaker forces this target's breaker: "open" (skip it) or "closed"
	// (always try it), for incidents. Empty means automatic.
	Breaker string `json:"breaker,omitempty"`
	// Prefill declares that this target continues a final assistant
	// message instead of answering anew (assistant prefill: Anthropic and
	// Claude on Bedrock do): only such targets are asked to continue a cut
	// stream (routes with continuation on).
	Prefill bool `json:"prefill,omitempty"`
	// Variant adapts the prompt and parameters to this target's model,
	// applied only when this target serves.
	Variant *Variant `json:"variant,omitempty"`
	// Options holds kind-specific settings of this target. Bedrock:
	// prompt_caching ("on" or "off": overrides the adapter's table of
	// models that support cache points) and base_model (the model an
	// application inference profile or provisioned-model ARN runs, for
	// prices and that table).
	Options map[string]string `json:"options,omitempty"`
	// ServiceTier asks the provider for one of its service tiers, as its
	// API names it (Kind.ServiceTiers: OpenAI flex or priority, Anthropic
	// auto or standard_only, Bedrock priority, default or flex). Empty:
	// the request's own, else the provider's default. A target with a tier
	// is a target of its own (its id is "provider/model#tier"), so a route
	// may list the same model at two tiers and fall back between them.
	ServiceTier string `json:"service_tier,omitempty"`
}

// ID is the target's identity in breakers, logs, records and health
// reports: "provider/model", with "#tier" when it asks for a service tier.
func (t Target) ID() string { return TargetID(t.Provider, t.Model, t.ServiceTier) }

// TargetID is the id of the target of provider and model at service tier
// tier ("" for none): "provider/model" or "provider/model#tier".
func TargetID(provider, model, tier string) string {
	if tier == "" {
		return provider + "/" + model
	}
	return provider + "/" + model + "#" + tier
}

// SplitTargetID splits a target id (TargetID) into its provider, model and
// service tier.
func SplitTargetID(id string) (provider, model, tier string) {
	provider, model, _ = strings.Cut(id, "/")
	if i := strings.LastIndexByte(model, '#'); i >= 0 {
		model, tier = model[:i], model[i+1:]
	}
	return provider, model, tier
}

// Variant is a per-target prompt variant: a system prompt override, prefix
// or suffix, and parameter overrides, applied to the request only when
// that target serves it (on every client API; passthrough bodies are
// edited byte by byte). Its name is recorded on the usage record.
type Variant struct {
	// Name identifies the variant in usage records and logs. Required.
	Name string `json:"name"`
	// System replaces the system prompt: every system and developer
	// message gives way to one system message with this text.
	System string `json:"system,omitempty"`
	// SystemPrefix is put before the first system message's text, and
	// SystemSuffix after the last one's (as they are: include any
	// separator). Without a system message, they become one.
	SystemPrefix string `json:"system_prefix,omitempty"`
	SystemSuffix string `json:"system_suffix,omitempty"`
	// Temperature and TopP replace the client's values.
	Temperature *float64 `json:"temperature,omitempty"`
	TopP        *float64 `json:"top_p,omitempty"`
	// MaxTokensCap caps the output tokens: a larger client limit is
	// lowered to it, and a request without one gets it.
	MaxTokensCap int `json:"max_tokens_cap,omitempty"`
}

// Policy governs retries, fallbacks, timeouts and breakers. Zero fields take
// the config's defaults, which take the built-in defaults.
type Policy struct {
	// FirstTokenTimeout bounds the wait for the first content (default 10s).
	FirstTokenTimeout Duration `json:"first_token_timeout,omitempty"`
	// ResponseTimeout bounds a whole non-streaming response, which arrives
	// in one piece when generation ends (default 5m).
	ResponseTimeout Duration `json:"response_timeout,omitempty"`
	// IdleTimeout bounds the gap between two chunks of a stream (default 30s).
	IdleTimeout Duration `json:"idle_timeout,omitempty"`
	// Attempts is how many times one target is tried before moving on (default 2).
	Attempts int `json:"attempts,omitempty"`
	// MaxFallbacks caps how many targets after the primary are tried
	// (default: the whole chain).
	MaxFallbacks *int `json:"max_fallbacks,omitempty"`
	// FallbackOn lists the error categories that move on to the next target
	// (default: rate_limited, timeout, overloaded, unavailable).
	FallbackOn []gwerr.Category `json:"fallback_on,omitempty"`
	// RetrySameTargetOnTimeout retries a target that timed out before its
	// first byte or token (up to Attempts) instead of moving on to the next
	// target at once (default false: a silent provider must not double the
	// wait).
	RetrySameTargetOnTimeout bool `json:"retry_same_target_on_timeout,omitempty"`
	// TranslateWithout lists request features (by key: "thinking",
	// "thinking_blocks", "context_management", "tools.defer_loading", ...)
	// that a target which must translate the request may serve without:
	// they are dropped on translation, and the response says so in
	// x-gateway-dropped-features. By default nothing is dropped: such a
	// target is skipped, and only a target speaking the client's API serves.
	TranslateWithout []string `json:"translate_without,omitempty"`
	// RetryAfterCap: a Retry-After up to this is waited out before retrying
	// the same target; a longer one moves on at once (default 2s).
	RetryAfterCap Duration `json:"retry_after_cap,omitempty"`
	// BackoffBase and BackoffMax shape exponential backoff with full jitter
	// (defaults 100ms and 2s).
	BackoffBase Duration `json:"backoff_base,omitempty"`
	BackoffMax  Duration `json:"backoff_max,omitempty"`
	// RetryBudget caps retries of one provider as a share of its traffic
	// over a rolling minute (default 0.1) with a floor (default 5 per minute).
	RetryBudget      float64 `json:"retry_budget,omitempty"`
	MinRetriesPerMin int     `json:"min_retries_per_minute,omitempty"`
	// HeadBuffer (opt-in) holds the first tokens of a stream before
	// committing it, so that a failure inside the window fails over
	// invisibly (default none: commit at the first content).
	HeadBuffer *HeadBuffer `json:"head_buffer,omitempty"`
	// Continuation (opt-in) continues a stream that died after its first
	// token on the next target that declares prefill, spliced into the
	// same response (default false: the client gets the typed error).
	Continuation *bool `json:"continuation,omitempty"`
}

// BreakerSettings tunes the circuit breakers, one per target.
type BreakerSettings struct {
	Window              Duration `json:"window,omitempty"`               // rolling window for the error rate (default 60s)
	MinRequests         int      `json:"min_requests,omitempty"`         // volume before the rate counts (default 10)
	FailureRate         float64  `json:"failure_rate,omitempty"`         // trip at or above this rate (default 0.5)
	ConsecutiveFailures int      `json:"consecutive_failures,omitempty"` // trip after this many in a row (default 5)
	Cooldown            Duration `json:"cooldown,omitempty"`             // first open period (default 30s)
	MaxCooldown         Duration `json:"max_cooldown,omitempty"`         // cap for doubling cooldowns (default 5m)
	HalfOpenProbes      int      `json:"half_open_probes,omitempty"`     // probes admitted while half-open (default 1)
	// Latency makes the breaker latency-aware: a target whose time to
	// first token is too often too slow is skipped too. Off when nil.
	Latency *LatencySettings `json:"latency,omitempty"`
}

// LatencySettings make a breaker skip a slow but healthy target: when, over
// the rolling window and across instances, the Percentile of time to first
// token exceeds Threshold (with at least MinRequests samples), the target
// is opened for Cooldown and then probed like any open breaker (a probe
// slower than Threshold reopens it).
type LatencySettings struct {
	// Percentile of time to first token that is compared (default 0.95).
	Percentile float64 `json:"percentile,omitempty"`
	// Threshold is the longest acceptable percentile (required).
	Threshold Duration `json:"threshold"`
	// MinRequests is the volume before the percentile counts (default 20).
	MinRequests int `json:"min_requests,omitempty"`
	// Window is the rolling window of samples (default 60s).
	Window Duration `json:"window,omitempty"`
	// Cooldown is how long a slow target is skipped before a probe
	// (default 30s).
	Cooldown Duration `json:"cooldown,omitempty"`
}

// Duration is a time.Duration written as a Go duration string ("10s").
type Duration time.Duration

// D returns the duration as a time.Duration.
func (d Duration) D() time.Duration { return time.Duration(d) }

// UnmarshalJSON accepts "1.5s", "250ms", "2m".
func (d *Duration) UnmarshalJSON(b []byte) error {
	var s string
	if err := json.Unmarshal(b, &s); err != nil {
		return fmt.Errorf("duration %s must be a string like \"10s\"", bytes.TrimSpace(b))
	}
	v, err := time.ParseDuration(s)
	if err != nil {
		return fmt.Errorf("bad duration %q: %v", s, err)
	}
	if v < 0 {
		return fmt.Errorf("duration %q must not be negative", s)
	}
	*d = Duration(v)
	return nil
}

// MarshalJSON writes the duration as a string.
func (d Duration) MarshalJSON() ([]byte, error) { return json.Marshal(time.Duration(d).String()) }
