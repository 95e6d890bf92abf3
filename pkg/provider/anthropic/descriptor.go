package anthropic

import (
	"context"
	"net/http"

	"github.com/llmgw/llmgw/pkg/config"
	"github.com/llmgw/llmgw/pkg/exchange"
	"github.com/llmgw/llmgw/pkg/provider"
)

// Descriptor is provider kind "anthropic": the Messages API at base_url.
// It speaks Messages (passed through, thinking and all, and counted by
// count_tokens); every other request is translated. The key goes in
// x-api-key unless auth_header names another header.
var Descriptor = &provider.Descriptor{
	Config: config.Kind{
		Name:       "anthropic",
		Speaks:     []string{string(exchange.Messages)},
		AuthHeader: defaultKeyHeader,
		Validate:   config.BaseURLRequired,
		// service_tier of the Messages API: auto lets a request use
		// Priority Tier capacity the organisation has committed.
		ServiceTiers: []string{"auto", "standard_only"},
	},
	New: func(_ context.Context, id string, p *config.Provider, hc *http.Client) (provider.Provider, error) {
		return New(id, p, hc)
	},
}

func init() { config.RegisterKind(&Descriptor.Config) }

// defaultKeyHeader is the header the key goes in without auth_header.
const defaultKeyHeader = "x-api-key"
