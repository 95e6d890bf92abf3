package config

import (
	"fmt"
	"slices"
)

// ProviderAPIs are the client APIs an upstream may declare it speaks
// natively (Provider.APIs).
var ProviderAPIs = []string{"chat", "responses", "embeddings"}

// validateAPIs checks a provider's apis: known API names, each once, and
// only on the kinds that can pass a client's bytes through (openai and
// fake; the others translate every request).
func (p *Provider) validateAPIs(at string) error {
	if len(p.APIs) == 0 {
		return nil
	}
	if p.Kind != "openai" && p.Kind != "fake" {
		return fmt.Errorf("config: %s.apis: only kinds openai and fake declare the APIs they speak; kind %s translates every request", at, p.Kind)
	}
	for i, api := range p.APIs {
		if !slices.Contains(ProviderAPIs, api) {
			return fmt.Errorf("config: %s.apis[%d]: unknown API %q (want chat, responses or embeddings)", at, i, api)
		}
		if slices.Contains(p.APIs[:i], api) {
			return fmt.Errorf("config: %s.apis[%d]: %q is listed twice", at, i, api)
		}
	}
	return nil
}
