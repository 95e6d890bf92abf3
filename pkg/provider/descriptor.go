package provider

import (
	"context"
	"net/http"

	"github.com/llmgw/llmgw/pkg/config"
	"github.com/llmgw/llmgw/pkg/exchange"
)

// Descriptor is everything the gateway knows about one provider kind. The
// kind's adapter package owns it (its descriptor.go, whose init registers
// Config with config.RegisterKind) and pkg/provider/registry lists it, one
// line per kind; nothing outside the adapter switches on a kind name. The
// steps of adding a kind: docs/providers.md, "Adding a provider kind".
//
// What a kind honours follows from the APIs it speaks (Config.Speaks and
// Config.APIs, per provider; Config.TargetSpeaks, per target, by its
// model): a request holding a feature only its own API can carry
// (exchange.Request.Untranslated) is served only by a target speaking
// that API; every other request is translated from the canonical form.
type Descriptor struct {
	// Config is the kind as the config loader sees it: its name, the APIs
	// it speaks natively (and so passes through), the apis it may declare,
	// its auth (the default key header, or no keys at all), its
	// validation and defaults, its target options and its price rule
	// (config.Kind.BaseModel).
	Config config.Kind
	// TranslatesEmbeddings is true when the adapter serves embeddings
	// requests without speaking the embeddings API (Bedrock, for its
	// Titan and Cohere models). Otherwise only a provider that speaks the
	// embeddings API gets them.
	TranslatesEmbeddings bool
	// New builds the adapter for one configured provider. hc is the
	// registry's HTTP client for it (pooled connections, the provider's
	// connect timeout, no total timeout); an adapter that brings its own
	// transport (Bedrock's SDK, the fake) ignores it.
	New func(ctx context.Context, id string, p *config.Provider, hc *http.Client) (Provider, error)
}

// Serves reports whether a provider of this kind, configured as p, may be
// sent a request on api at all: embeddings only when it speaks the
// embeddings API or translates it; every other API always (translated when
// not spoken).
func (d *Descriptor) Serves(p *config.Provider, api exchange.API) bool {
	return api != exchange.Embeddings || d.TranslatesEmbeddings || p.Speaks(string(api))
}
