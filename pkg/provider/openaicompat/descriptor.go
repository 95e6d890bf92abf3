package openaicompat

import (
	"context"
	"net/http"

	"github.com/llmgw/llmgw/pkg/config"
	"github.com/llmgw/llmgw/pkg/exchange"
	"github.com/llmgw/llmgw/pkg/provider"
)

// Descriptor is provider kind "openai": an OpenAI-compatible upstream at
// base_url. It speaks Chat Completions (passed through) unless apis lists
// what it speaks (chat, responses, embeddings); every other request is
// translated to chat. The key is a Bearer token unless auth_header names
// another header. It can serve a moderation policy's endpoint.
var Descriptor = &provider.Descriptor{
	Config: config.Kind{
		Name:       "openai",
		Speaks:     []string{string(exchange.Chat)},
		APIs:       []string{string(exchange.Chat), string(exchange.Responses), string(exchange.Embeddings)},
		AuthHeader: defaultKeyHeader,
		Moderates:  true,
		// service_tier of Chat Completions and Responses.
		ServiceTiers: []string{"auto", "default", "flex", "priority"},
		Validate:     config.BaseURLRequired,
	},
	New: func(_ context.Context, id string, p *config.Provider, hc *http.Client) (provider.Provider, error) {
		return New(id, p, hc)
	},
}

func init() { config.RegisterKind(&Descriptor.Config) }

// defaultKeyHeader is the header the key goes in without auth_header: a
// Bearer token.
const defaultKeyHeader = "authorization"
