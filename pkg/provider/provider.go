// Package provider is the egress seam: the one small interface every
// upstream adapter implements, and the types that cross it. An adapter
// turns one attempt (a Call: the request, the target, a key) into a Stream
// of canonical events (exchange.Event); everything about retries,
// fallbacks, breakers and timeouts lives in the failover package and never
// needs to know which kind of provider it is talking to. The adapters are
// the sub-packages; pkg/provider/registry maps each configured kind to one.
package provider

import (
	"context"
	"errors"
	"net/http"
	"strings"

	"github.com/llmgw/llmgw/pkg/config"
	"github.com/llmgw/llmgw/pkg/exchange"
	"github.com/llmgw/llmgw/pkg/gwerr"
	"github.com/llmgw/llmgw/pkg/wire/chatwire"
	"github.com/llmgw/llmgw/pkg/wire/jsonb"
)

// Provider sends one attempt to one upstream.
//
// Send returns once the upstream has answered with a success status (and,
// for non-streaming calls, the whole body), or with an error. Errors are
// *gwerr.Error with a category; Send never retries. Cancelling ctx must
// abort the call promptly, including a Stream returned earlier.
type Provider interface {
	Send(ctx context.Context, call *Call) (Stream, error)
}

// Call is one attempt at one target: the request as it flows through the
// gateway, plus what belongs to this attempt only.
type Call struct {
	// Req is the request; adapters build from its canonical form
	// (Call.Prompt), or forward Req.Body when the upstream speaks Req.API.
	Req *exchange.Request
	// Step is the target: its model id, default max tokens, options.
	Step config.Step
	// Key is the credential to use; zero when the provider has none or
	// authenticates otherwise (bedrock uses the AWS credential chain).
	Key exchange.Key
	// OnResponse, when set, is called with the upstream status and headers
	// of every response (success or error), before Send returns. The key
	// ledger reads rate-limit headers from it.
	OnResponse func(status int, h http.Header)
}

// Model is the upstream model id of the target.
func (c *Call) Model() string { return c.Step.Model }

// MaxTokens is the output limit for providers that require one: the
// target's default, lowered to the request's admitted cap and the
// target's variant cap.
func (c *Call) MaxTokens() int { return c.Req.MaxTokens(c.Step) }

// OutputLimit is the output limit to send when the client gave none, for
// providers that need none: the admitted cap and the variant cap, the
// lower; 0 for none.
func (c *Call) OutputLimit() int { return c.Req.OutputLimit(c.Step) }

// Variant is the target's prompt variant in the chat wire form, nil if
// the target has none.
func (c *Call) Variant() *chatwire.Variant {
	v := c.Step.Variant
	if v == nil {
		return nil
	}
	return &chatwire.Variant{System: v.System, SystemPrefix: v.SystemPrefix, SystemSuffix: v.SystemSuffix,
		Temperature: v.Temperature, TopP: v.TopP, MaxTokensCap: v.MaxTokensCap}
}

// Stream yields the events of one upstream response.
//
// For a streaming call events arrive as the upstream sends them. For a
// non-streaming call they arrive all at once (a passthrough adapter yields
// one Raw event holding the whole body). Next returns io.EOF only after
// the upstream's terminal event (a finish reason and, for SSE, its end
// marker); a stream that ends any other way returns an *gwerr.Error
// (category interrupted, or the upstream's in-band error), never io.EOF.
type Stream interface {
	Next() (exchange.Event, error)
	// Usage returns the tokens counted so far (from the upstream's figures,
	// or estimated from the text seen when it gave none).
	Usage() exchange.TokenUsage
	// Close releases the connection. It is safe to call more than once.
	Close() error
}

// Passthrough reports whether an upstream speaking api receives the
// client's own bytes for req.
func Passthrough(req *exchange.Request, api exchange.API) bool { return req.API == api }

// SetTraceHeader forwards the request's trace context to an upstream: the
// traceparent header (the request's trace id, the gateway's span id).
func SetTraceHeader(h http.Header, req *exchange.Request) {
	if req.TraceParent != "" {
		h.Set("Traceparent", req.TraceParent)
	}
}

// SetKeyHeader puts a provider key in the header an adapter is configured
// for: "authorization" sends it as a Bearer token, any other name (x-api-key,
// api-key) carries the key as it is. No key, no header: never an empty
// "Bearer ".
func SetKeyHeader(h http.Header, header string, k exchange.Key) {
	if k.Secret == "" {
		return
	}
	if header == "authorization" {
		h.Set("Authorization", "Bearer "+k.Secret)
		return
	}
	h.Set(header, k.Secret)
}

// KeyHeader returns the header a provider's key goes in: its auth_header
// (lower case), else def, its kind's default (config.Kind.AuthHeader).
func KeyHeader(p *config.Provider, def string) string {
	if p.AuthHeader != "" {
		return strings.ToLower(p.AuthHeader)
	}
	return def
}

// TokenCounter is implemented by adapters whose upstream counts a request's
// input tokens without generating (Anthropic's count_tokens). The front
// counts through the failover engine (failover.Router.Call): the route's
// targets in order, a target without one passed over; a route none of
// whose targets can count gets the gateway's estimate.
type TokenCounter interface {
	// CountTokens returns the upstream's count of call.Req's input tokens,
	// or ErrCannotCount when this request cannot be counted upstream.
	CountTokens(ctx context.Context, call *Call) (int, error)
}

// ErrCannotCount is returned by a TokenCounter for a request it cannot
// count (another API's request): the front falls back to its estimate.
var ErrCannotCount = errors.New("provider: this request cannot be counted upstream")

// Underlying returns the adapter behind wrappers (a wrapper has an Unwrap
// method returning what it wraps), for optional interfaces such as
// TokenCounter.
func Underlying(p Provider) Provider {
	for {
		u, ok := p.(interface{ Unwrap() Provider })
		if !ok {
			return p
		}
		p = u.Unwrap()
	}
}

// Prompt is the canonical request a translating adapter builds this
// attempt from: Req.Prompt with the target's prompt variant applied (a
// copy; Req.Prompt itself when the target has none).
func (c *Call) Prompt() *exchange.Prompt { return WithVariant(c.Req.Prompt, c.Step.Variant) }

// WithVariant returns p with the prompt variant v applied, as a copy (p is
// not modified); p itself when v is nil. System replaces the system prompt
// (the leading system blocks and every system message of the conversation
// give way to one text block); SystemPrefix goes before the first system
// block of the system prompt and SystemSuffix after its last (without one they
// become one; a system message inside the conversation keeps its text);
// Temperature and TopP replace the client's; MaxTokensCap
// lowers a larger client limit.
func WithVariant(p *exchange.Prompt, v *config.Variant) *exchange.Prompt {
	if p == nil || v == nil {
		return p
	}
	c := *p
	if v.System != "" || v.SystemPrefix != "" || v.SystemSuffix != "" {
		variantSystem(&c, v)
	}
	if v.Temperature != nil {
		t := *v.Temperature
		c.Sampling.Temperature = &t
	}
	if v.TopP != nil {
		t := *v.TopP
		c.Sampling.TopP = &t
	}
	if n := v.MaxTokensCap; n > 0 && c.Sampling.MaxTokens > n {
		c.Sampling.MaxTokens = n
	}
	return &c
}

// variantSystem applies a variant's system edits to c (a shallow copy
// whose slices it replaces, never writes through).
func variantSystem(c *exchange.Prompt, v *config.Variant) {
	text := func(s string) exchange.Block { return exchange.Block{Type: exchange.BlockText, Text: s} }
	if v.System != "" {
		c.System = []exchange.Block{text(v.System)}
		msgs := make([]exchange.Message, 0, len(c.Messages))
		for _, m := range c.Messages {
			if m.Role != exchange.RoleSystem {
				msgs = append(msgs, m)
			}
		}
		c.Messages = msgs
		return
	}
	if len(c.System) == 0 {
		c.System = []exchange.Block{text(v.SystemPrefix + v.SystemSuffix)}
		return
	}
	sys := make([]exchange.Block, 0, len(c.System)+2)
	if v.SystemPrefix != "" {
		sys = append(sys, text(v.SystemPrefix))
	}
	sys = append(sys, c.System...)
	if v.SystemSuffix != "" {
		sys = append(sys, text(v.SystemSuffix))
	}
	c.System = sys
}

// ServiceTierMember is body with its top-level "service_tier" set to the
// target's service tier (config.Target.ServiceTier) by a byte edit of that
// one member, or body itself when the target asks for none: how the
// OpenAI (Chat Completions, Responses) and Anthropic Messages APIs name
// the tier, passthrough and translated alike.
func (c *Call) ServiceTierMember(body []byte) ([]byte, error) {
	if c.Step.ServiceTier == "" {
		return body, nil
	}
	out, err := chatwire.SetMember(body, "service_tier", jsonb.AppendString(nil, c.Step.ServiceTier))
	if err != nil {
		return nil, &gwerr.Error{Category: gwerr.Internal, Message: "could not set the target's service tier", Cause: err}
	}
	return out, nil
}
