package registry

import (
	"context"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/llmgw/llmgw/pkg/config"
	"github.com/llmgw/llmgw/pkg/exchange"
	"github.com/llmgw/llmgw/pkg/gwerr"
	"github.com/llmgw/llmgw/pkg/provider"
)

type countingProvider struct{ calls atomic.Int32 }

func (c *countingProvider) Send(context.Context, *provider.Call) (provider.Stream, error) {
	c.calls.Add(1)
	return provider.Events(exchange.TokenUsage{}), nil
}

// A request holding a feature only its own API can carry is refused,
// before any call, by every provider that would have to translate it, and
// served by one that speaks the API.
func TestGuardRefusesUntranslatedFeaturesUnlessTheProviderSpeaksTheAPI(t *testing.T) {
	lost := []exchange.Feature{{Param: "thinking", What: "extended thinking"}}
	for _, tc := range []struct {
		kind  string
		api   exchange.API
		apis  []string
		serve bool
	}{
		{"anthropic", exchange.Messages, nil, true},
		{"openai", exchange.Messages, nil, false},
		{"bedrock", exchange.Messages, nil, false},
		{"openai", exchange.Responses, nil, false},
		{"openai", exchange.Responses, []string{"chat", "responses"}, true},
		{"anthropic", exchange.Responses, nil, false},
	} {
		next := &countingProvider{}
		g := guard(tc.kind, tc.apis, next)
		call := &provider.Call{Req: &exchange.Request{API: tc.api, Untranslated: lost}, Step: config.Step{ID: "p/m"}}
		_, err := g.Send(context.Background(), call)
		if tc.serve {
			if err != nil || next.calls.Load() != 1 {
				t.Errorf("%s %v %v: err %v, calls %d: a provider speaking the API must serve", tc.kind, tc.apis, tc.api, err, next.calls.Load())
			}
			continue
		}
		ge := gwerr.As(err)
		if ge.Code != provider.CodeUnsupportedFeature || ge.Param != "thinking" || !strings.Contains(ge.Message, "p/m") || next.calls.Load() != 0 {
			t.Errorf("%s %v %v: err %+v, calls %d: must be refused before any call", tc.kind, tc.apis, tc.api, ge, next.calls.Load())
		}
	}
	// Without such features every provider may translate.
	next := &countingProvider{}
	g := guard("openai", nil, next)
	if _, err := g.Send(context.Background(), &provider.Call{Req: &exchange.Request{API: exchange.Messages}}); err != nil || next.calls.Load() != 1 {
		t.Fatalf("err %v calls %d", err, next.calls.Load())
	}
}

// guard is the guard Build puts around an adapter of a built-in kind.
func guard(kind string, apis []string, next provider.Provider) nativeGuard {
	d, _ := Lookup(kind)
	return nativeGuard{p: &config.Provider{Kind: kind, APIs: apis}, d: d, next: next}
}

// An embeddings request reaches only a provider that speaks the embeddings
// API or whose kind translates it (bedrock); the others refuse it before
// any call.
func TestGuardSendsEmbeddingsOnlyWhereTheKindServesThem(t *testing.T) {
	for _, tc := range []struct {
		kind  string
		apis  []string
		serve bool
	}{
		{"openai", nil, false},
		{"openai", []string{"chat", "embeddings"}, true},
		{"fake", []string{"embeddings"}, true},
		{"anthropic", nil, false},
		{"gemini", nil, false},
		{"bedrock", nil, true},
	} {
		next := &countingProvider{}
		_, err := guard(tc.kind, tc.apis, next).Send(context.Background(), &provider.Call{Req: &exchange.Request{API: exchange.Embeddings}, Step: config.Step{ID: "p/m"}})
		if served := err == nil && next.calls.Load() == 1; served != tc.serve {
			t.Errorf("%s %v: served %v (err %v), want %v", tc.kind, tc.apis, served, err, tc.serve)
		}
		if !tc.serve && (gwerr.As(err).Code != provider.CodeUnsupportedFeature || next.calls.Load() != 0) {
			t.Errorf("%s %v: err %v calls %d: must be refused before any call", tc.kind, tc.apis, err, next.calls.Load())
		}
	}
}
