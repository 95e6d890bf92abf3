package gemini

import (
	"context"
	"net/http"

	"github.com/llmgw/llmgw/pkg/config"
	"github.com/llmgw/llmgw/pkg/provider"
)

// Descriptor is provider kind "gemini": the native Gemini API at base_url
// (default DefaultBaseURL). It speaks none of the client APIs: every
// request is translated. The key goes in x-goog-api-key unless
// auth_header names another header.
var Descriptor = &provider.Descriptor{
	Config: config.Kind{
		Name:       "gemini",
		AuthHeader: defaultKeyHeader,
		Validate:   config.BaseURLOptional(DefaultBaseURL),
	},
	New: func(_ context.Context, id string, p *config.Provider, hc *http.Client) (provider.Provider, error) {
		return New(id, p, hc)
	},
}

func init() { config.RegisterKind(&Descriptor.Config) }

// defaultKeyHeader is the header the key goes in without auth_header.
const defaultKeyHeader = "x-goog-api-key"
