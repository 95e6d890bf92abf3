package bedrock

import (
	"context"
	"net/http"
	"strings"

	"github.com/llmgw/llmgw/pkg/config"
	"github.com/llmgw/llmgw/pkg/exchange"
	"github.com/llmgw/llmgw/pkg/modelid"
	"github.com/llmgw/llmgw/pkg/provider"
)

// Descriptor is provider kind "bedrock": Bedrock Runtime's Converse and
// ConverseStream (and InvokeModel for embeddings) in region, or at
// endpoint. Every target speaks the Converse API (Speaks: a Bedrock
// Runtime client's Converse body passes through, passthrough.go). A
// target whose model is Claude speaks the Messages API
// (TargetSpeaks: InvokeModel and InvokeModelWithResponseStream with the
// client's body, so no Messages feature keeps it out of a route); every
// other request is translated, embeddings too (Titan and Cohere models).
// A target whose model is OpenAI's (openai.*), or whose openai_endpoint
// option names one, speaks Chat Completions and Responses at Bedrock's
// OpenAI-compatible endpoint (openai.go), passed through as the openai
// kind passes them. It takes no keys:
// the AWS credential chain signs every request (or a Bedrock API key in
// AWS_BEARER_TOKEN_BEDROCK authenticates it). Its targets take options
// prompt_caching (on|off), openai_endpoint (runtime|mantle|off) and
// base_model, and a model id that is a
// cross-region inference profile or an ARN is priced as its base model.
var Descriptor = &provider.Descriptor{
	Config: config.Kind{
		Name:   "bedrock",
		Speaks: []string{string(exchange.Converse)},
		// serviceTier.type of Converse, the X-Amzn-Bedrock-Service-Tier
		// header of InvokeModel.
		ServiceTiers: []string{"priority", "default", "flex"},
		TargetOptions: map[string]func(string) string{
			"prompt_caching": func(v string) string {
				if v != "on" && v != "off" {
					return config.Show(v) + " is not on or off"
				}
				return ""
			},
			"openai_endpoint": checkEndpoint,
			"base_model": func(v string) string {
				if v == "" || strings.HasPrefix(v, "arn:") {
					return config.Show(v) + " must be a base model id (like anthropic.claude-sonnet-4-5-20250929-v1:0)"
				}
				return ""
			},
		},
		BaseModel: modelid.Base,
		TargetSpeaks: func(api, model string, opts map[string]string) bool {
			if api == string(exchange.Messages) {
				return speaksMessages(model, opts)
			}
			return speaksOpenAI(api, model, opts)
		},
	},
	TranslatesEmbeddings: true,
	New: func(ctx context.Context, id string, p *config.Provider, hc *http.Client) (provider.Provider, error) {
		return NewWithHTTP(ctx, id, p, nil, hc)
	},
}

func init() { config.RegisterKind(&Descriptor.Config) }
