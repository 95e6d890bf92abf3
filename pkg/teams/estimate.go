package teams

import (
	"strings"

	"github.com/tidwall/gjson"

	"github.com/llmgw/llmgw/pkg/config"
	"github.com/llmgw/llmgw/pkg/exchange"
	"github.com/llmgw/llmgw/pkg/usage"
)

// Estimator constants (see EstimateInputTokens).
const (
	// MessageOverheadTokens is added per message for its role and framing.
	MessageOverheadTokens = 4
	// ReplyPrimingTokens is added once per request for the reply's start.
	ReplyPrimingTokens = 3
	// NonTextPartTokens is counted for each image or binary document.
	NonTextPartTokens = 768
	// DefaultToolUses is the number of calls reserved for each declared
	// server-side tool that bills per call (web search, ...) when the
	// client sent no max_uses for it.
	DefaultToolUses = 10
)

// Estimate is what admission reserves for one request.
type Estimate struct {
	// InputTokens is EstimateInputTokens of the request.
	InputTokens int64
	// RequestedOutput is the client's output limit (Prompt.Sampling.MaxTokens:
	// the larger of max_completion_tokens and max_tokens; 0: it set none).
	RequestedOutput int64
	// OutputTokens is the output reserved: RequestedOutput, or when the
	// client set none the team's max_output_tokens ceiling, else the largest
	// max_tokens of the chain's targets (default 4096); times n.
	OutputTokens int64
	// CostUSD is InputTokens at the input price plus OutputTokens at the
	// output price plus ToolUses at the per-call (and per-hour, for the
	// request's whole deadline) prices of the most expensive target of
	// the chain.
	CostUSD float64
	// ToolUses bounds the calls of each declared server-side tool that
	// bills per call: its max_uses, else DefaultToolUses.
	ToolUses exchange.ToolCalls
}

// EstimateInputTokens estimates a request's prompt tokens before any call:
// exchange.EstimateTokens (one token per 4 bytes of UTF-8, rounded up) over
// the text the model reads, wherever it is in the prompt
// (exchange.Prompt.WalkText: the system prompt, every turn's text,
// thinking and refusals, tool uses' names and arguments, tool results,
// text documents, and the tools' names, descriptions and schemas), plus
// the messages' names, tool results' call ids and redacted thinking's
// data, plus MessageOverheadTokens per message (the system
// prompt counting as one), ReplyPrimingTokens once, and NonTextPartTokens
// per image or binary document. It is a reservation, not a bill:
// settlement replaces it with the provider's count.
func EstimateInputTokens(p *exchange.Prompt) int64 {
	if p == nil {
		return 0
	}
	chars, fixed := 0, int64(ReplyPrimingTokens)
	if len(p.System) > 0 {
		fixed += MessageOverheadTokens
	}
	for i := range p.Messages {
		fixed += MessageOverheadTokens
		chars += len(p.Messages[i].Name)
	}
	p.WalkText(func(s string) { chars += len(s) })
	p.Walk(func(b *exchange.Block) {
		switch {
		case b.Type == exchange.BlockImage,
			b.Type == exchange.BlockDocument && !strings.HasPrefix(b.MediaType, "text/"):
			fixed += NonTextPartTokens
		case b.Type == exchange.BlockRedactedThinking:
			chars += len(b.Data)
		case b.Type == exchange.BlockToolResult:
			chars += len(b.ToolID)
		}
	})
	return int64(exchange.EstimateTokens(chars)) + fixed
}

// EstimateEmbedTokens estimates an embeddings request's input tokens:
// exchange.EstimateTokens over every input text, or the token ids' count
// when the client sent token arrays.
func EstimateEmbedTokens(er *exchange.EmbedRequest) int64 {
	if er == nil {
		return 0
	}
	var n int64
	for _, t := range er.Tokens {
		n += int64(len(t))
	}
	for _, s := range er.Inputs {
		n += int64(exchange.EstimateTokens(len(s)))
	}
	return n
}

// estimate computes the reservation of a request; ceiling is the tightest
// max_output_tokens of its scopes (0: none). An embeddings request
// reserves its input only: it generates no output tokens.
func estimate(cfg *config.Config, a *exchange.Request, ceiling int64) Estimate {
	if a.Embed != nil {
		e := Estimate{InputTokens: EstimateEmbedTokens(a.Embed)}
		for _, s := range a.Steps {
			if p, ok := cfg.PriceFor(s.Provider, s.Model); ok {
				e.CostUSD = max(e.CostUSD, usage.EstimateCost(p, e.InputTokens, 0))
			}
		}
		return e
	}
	e := Estimate{InputTokens: EstimateInputTokens(a.Prompt)}
	if a.Prompt != nil {
		e.RequestedOutput = int64(a.Prompt.Sampling.MaxTokens)
	}
	e.OutputTokens = e.RequestedOutput
	if e.OutputTokens <= 0 {
		e.OutputTokens = ceiling
		if e.OutputTokens == 0 {
			for _, s := range a.Steps {
				e.OutputTokens = max(e.OutputTokens, int64(s.MaxTokens))
			}
			if e.OutputTokens <= 0 {
				e.OutputTokens = 4096
			}
		}
	}
	if a.Prompt != nil && a.Prompt.Output.Choices > 1 {
		e.OutputTokens *= int64(a.Prompt.Output.Choices)
	}
	e.ToolUses = toolUses(a.Prompt)
	for _, s := range a.Steps {
		if p, ok := cfg.PriceFor(s.Provider, s.Model); ok {
			// At the target's tier (a tier's price carries no tool fees).
			e.CostUSD = max(e.CostUSD, usage.EstimateCost(p.AtTier(s.ServiceTier), e.InputTokens, e.OutputTokens)+usage.ToolFees(p, e.ToolUses, cfg.Server.RequestTimeout.D()))
		}
	}
	return e
}

// toolUses bounds the calls of p's declared per-call-billed tools: each
// tool's max_uses (Anthropic's field), else DefaultToolUses; a code
// execution tool adds one container (charged for the request's whole
// deadline at most, usage.ToolFees), Google Search grounding one grounded
// prompt and its search queries (as web searches).
func toolUses(p *exchange.Prompt) exchange.ToolCalls {
	var c exchange.ToolCalls
	if p == nil {
		return c
	}
	for i := range p.Tools {
		t := &p.Tools[i]
		if t.Kind != exchange.ToolBuiltin {
			continue
		}
		k := exchange.FeeKind(t.Type)
		if k == "" {
			continue
		}
		n := DefaultToolUses
		if m := gjson.GetBytes(t.Raw, "max_uses"); m.Type == gjson.Number && m.Int() > 0 {
			n = int(min(m.Int(), 1000))
		}
		switch k {
		case config.FeeCodeExecution:
			c = c.Add(exchange.ToolCalls{CodeExecution: n, Containers: 1})
		case config.FeeGroundedPrompt:
			c = c.Add(exchange.ToolCalls{GroundedPrompts: 1, WebSearch: n})
		default:
			c = c.Add(exchange.ToolCallsOf(k, n))
		}
	}
	return c
}
