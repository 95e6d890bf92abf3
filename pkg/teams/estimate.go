package teams

import (
	"github.com/llmgw/llmgw/pkg/config"
	"github.com/llmgw/llmgw/pkg/exchange"
	"github.com/llmgw/llmgw/pkg/usage"
	"github.com/llmgw/llmgw/pkg/wire/chatwire"
)

// Estimator constants (see EstimateInputTokens).
const (
	// MessageOverheadTokens is added per message for its role and framing.
	MessageOverheadTokens = 4
	// ReplyPrimingTokens is added once per request for the reply's start.
	ReplyPrimingTokens = 3
	// NonTextPartTokens is counted for each image, audio or file part.
	NonTextPartTokens = 768
)

// Estimate is what admission reserves for one request.
type Estimate struct {
	// InputTokens is EstimateInputTokens of the request.
	InputTokens int64
	// RequestedOutput is the client's max_completion_tokens, else max_tokens
	// (0: it set neither).
	RequestedOutput int64
	// OutputTokens is the output reserved: RequestedOutput, or when the
	// client set none the team's max_output_tokens ceiling, else the largest
	// max_tokens of the chain's targets (default 4096); times n.
	OutputTokens int64
	// CostUSD is InputTokens at the input price plus OutputTokens at the
	// output price of the most expensive target of the chain.
	CostUSD float64
}

// EstimateInputTokens estimates a request's prompt tokens before any call:
// exchange.EstimateTokens (one token per 4 bytes of UTF-8, rounded up) over
// the text the model reads - every message's text content, name,
// tool_call_id, tool call names and arguments, and the tools' names,
// descriptions and parameter schemas - plus MessageOverheadTokens per
// message, ReplyPrimingTokens once, and NonTextPartTokens per image, audio
// or file part. It is a reservation, not a bill: settlement replaces it
// with the provider's count.
func EstimateInputTokens(req *chatwire.ChatRequest) int64 {
	if req == nil {
		return 0
	}
	chars, fixed := 0, int64(ReplyPrimingTokens)
	for _, m := range req.Messages {
		fixed += MessageOverheadTokens
		chars += len(m.Name) + len(m.ToolCallID)
		if m.Refusal != nil {
			chars += len(*m.Refusal)
		}
		if m.Content.IsParts {
			for _, p := range m.Content.Parts {
				switch p.Type {
				case "text":
					chars += len(p.Text)
				case "refusal":
					chars += len(p.Refusal)
				default:
					fixed += NonTextPartTokens
				}
			}
		} else {
			chars += len(m.Content.Text)
		}
		for _, tc := range m.ToolCalls {
			chars += len(tc.Function.Name) + len(tc.Function.Arguments)
		}
	}
	for _, t := range req.Tools {
		chars += len(t.Function.Name) + len(t.Function.Description) + len(t.Function.Parameters)
	}
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
	e := Estimate{InputTokens: EstimateInputTokens(a.Chat)}
	if a.Chat != nil {
		switch {
		case a.Chat.MaxCompletionTokens != nil:
			e.RequestedOutput = int64(*a.Chat.MaxCompletionTokens)
		case a.Chat.MaxTokens != nil:
			e.RequestedOutput = int64(*a.Chat.MaxTokens)
		}
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
	if a.Chat != nil && a.Chat.N != nil && *a.Chat.N > 1 {
		e.OutputTokens *= int64(*a.Chat.N)
	}
	for _, s := range a.Steps {
		if p, ok := cfg.PriceFor(s.Provider, s.Model); ok {
			e.CostUSD = max(e.CostUSD, usage.EstimateCost(p, e.InputTokens, e.OutputTokens))
		}
	}
	return e
}
