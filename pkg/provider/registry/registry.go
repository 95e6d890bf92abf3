// Package registry builds provider adapters from config. Every provider
// kind is one descriptor (provider.Descriptor), owned by its adapter
// package, and one line in Kinds below: adding a kind is a package under
// pkg/provider (its adapter, its descriptor, and an init that registers the
// descriptor's Config with config.RegisterKind, so that package's own tests
// can load configs naming the kind) and that line; the config loader, the
// failover code and the server never change. The steps, in full:
// docs/providers.md, "Adding a provider kind". It is the one place that
// maps a configured kind to its adapter.
package registry

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"sync"
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

// Kinds are the provider kinds built into the gateway, one descriptor a
// line, in the order the config loader names them.
var Kinds = []*provider.Descriptor{
	openaicompat.Descriptor,
	anthropic.Descriptor,
	bedrock.Descriptor,
	gemini.Descriptor,
	fakellm.Descriptor,
}

// Factory builds the adapter for one configured provider.
type Factory func(ctx context.Context, id string, p *config.Provider) (provider.Provider, error)

// Factories maps each registered kind to its factory (the descriptor's
// New with the registry's HTTP client). A test may replace one.
var Factories = map[string]Factory{}

// descriptors maps each registered kind to its descriptor.
var descriptors struct {
	sync.RWMutex
	m map[string]*provider.Descriptor
}

func init() {
	for _, d := range Kinds {
		Register(d)
	}
}

// Register adds a provider kind: the config loader accepts it
// (config.RegisterKind) and Build builds its adapters. Kinds calls it for
// every built-in kind; a test registers a kind of its own. It panics when
// another descriptor has the kind's name.
func Register(d *provider.Descriptor) {
	config.RegisterKind(&d.Config)
	descriptors.Lock()
	defer descriptors.Unlock()
	if descriptors.m == nil {
		descriptors.m = map[string]*provider.Descriptor{}
	}
	name := d.Config.Name
	if o := descriptors.m[name]; o != nil && o != d {
		panic("registry: provider kind " + name + " is registered twice")
	}
	descriptors.m[name] = d
	Factories[name] = func(ctx context.Context, id string, p *config.Provider) (provider.Provider, error) {
		hc := HTTPClient(p)
		hc.Transport = provider.LimitTransport(id, hc.Transport, provider.BodyLimit(ctx))
		return d.New(ctx, id, p, hc)
	}
}

// Lookup returns the descriptor of a registered kind.
func Lookup(kind string) (*provider.Descriptor, bool) {
	descriptors.RLock()
	defer descriptors.RUnlock()
	d, ok := descriptors.m[kind]
	return d, ok
}

// Build returns an adapter for every provider in the config. Each holds
// whole upstream bodies to server.max_upstream_body_bytes: the HTTP kinds
// through their client (provider.LimitTransport), Bedrock through its
// SDK client (provider.BodyLimit).
func Build(ctx context.Context, cfg *config.Config) (map[string]provider.Provider, error) {
	ctx = provider.WithBodyLimit(ctx, cfg.Server.MaxUpstreamBodyBytes)
	out := make(map[string]provider.Provider, len(cfg.Providers))
	for _, id := range cfg.ProviderIDs() {
		p := cfg.Providers[id]
		d, ok := Lookup(p.Kind)
		f := Factories[p.Kind]
		if !ok || f == nil {
			return nil, fmt.Errorf("provider %s: kind %q is not built into this gateway", id, p.Kind)
		}
		a, err := f(ctx, id, p)
		if err != nil {
			return nil, err
		}
		out[id] = nativeGuard{p: p, d: d, next: a}
	}
	return out, nil
}

// HTTPClient returns a client tuned for one upstream: pooled keep-alive
// connections, a connect timeout from config and no total timeout (streams
// are bounded by the failover engine's phase timeouts). Its HTTP/1.1
// connections hand over every byte of a chunked body as it arrives, even
// when the upstream stalls inside a chunk (pkg/provider/rechunk). It
// follows no redirect (provider.NoRedirects).
func HTTPClient(p *config.Provider) *http.Client {
	connect := p.ConnectTimeout.D()
	if connect == 0 {
		connect = 5 * time.Second
	}
	return &http.Client{CheckRedirect: provider.NoRedirects, Transport: rechunk.Wrap(&http.Transport{
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
