// Package registry builds provider adapters from config: one factory per
// kind, in one table. Adding a kind is one line here and a package under
// pkg/provider; the failover code never changes. It is the provider
// registry: the one place that maps a configured kind to its adapter.
package registry

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"time"

	"github.com/llmgw/llmgw/pkg/config"
	"github.com/llmgw/llmgw/pkg/fakellm"
	"github.com/llmgw/llmgw/pkg/provider"
	"github.com/llmgw/llmgw/pkg/provider/anthropic"
	"github.com/llmgw/llmgw/pkg/provider/bedrock"
	"github.com/llmgw/llmgw/pkg/provider/gemini"
	"github.com/llmgw/llmgw/pkg/provider/openaicompat"
	"github.com/llmgw/llmgw/pkg/provider/rechunk"
)

// Factory builds the adapter for one configured provider.
type Factory func(ctx context.Context, id string, p *config.Provider) (provider.Provider, error)

// Factories maps each provider kind to its factory.
var Factories = map[string]Factory{
	"openai": func(_ context.Context, id string, p *config.Provider) (provider.Provider, error) {
		return openaicompat.New(id, p, HTTPClient(p))
	},
	"bedrock": func(ctx context.Context, id string, p *config.Provider) (provider.Provider, error) {
		return bedrock.New(ctx, id, p, nil)
	},
	"anthropic": func(_ context.Context, id string, p *config.Provider) (provider.Provider, error) {
		return anthropic.New(id, p, HTTPClient(p))
	},
	"gemini": func(_ context.Context, id string, p *config.Provider) (provider.Provider, error) {
		return gemini.New(id, p, HTTPClient(p))
	},
	"fake": func(_ context.Context, id string, p *config.Provider) (provider.Provider, error) {
		fp := *p
		fp.BaseURL = "http://fake.invalid/v1"
		return openaicompat.New(id, &fp, &http.Client{Transport: &fakellm.Transport{Script: p.Fake}})
	},
}

// Build returns an adapter for every provider in the config.
func Build(ctx context.Context, cfg *config.Config) (map[string]provider.Provider, error) {
	out := make(map[string]provider.Provider, len(cfg.Providers))
	for _, id := range cfg.ProviderIDs() {
		p := cfg.Providers[id]
		f, ok := Factories[p.Kind]
		if !ok {
			return nil, fmt.Errorf("provider %s: kind %q is not built into this gateway", id, p.Kind)
		}
		a, err := f(ctx, id, p)
		if err != nil {
			return nil, err
		}
		out[id] = nativeGuard{p: p, next: a}
	}
	return out, nil
}

// HTTPClient returns a client tuned for one upstream: pooled keep-alive
// connections, a connect timeout from config and no total timeout (streams
// are bounded by the failover engine's phase timeouts). Its HTTP/1.1
// connections hand over every byte of a chunked body as it arrives, even
// when the upstream stalls inside a chunk (pkg/provider/rechunk).
func HTTPClient(p *config.Provider) *http.Client {
	connect := p.ConnectTimeout.D()
	if connect == 0 {
		connect = 5 * time.Second
	}
	return &http.Client{Transport: rechunk.Wrap(&http.Transport{
		Proxy:                 http.ProxyFromEnvironment,
		DialContext:           (&net.Dialer{Timeout: connect, KeepAlive: 30 * time.Second}).DialContext,
		TLSHandshakeTimeout:   connect,
		ForceAttemptHTTP2:     true,
		MaxIdleConns:          1024,
		MaxIdleConnsPerHost:   256,
		IdleConnTimeout:       90 * time.Second,
		ExpectContinueTimeout: time.Second,
	})}
}
