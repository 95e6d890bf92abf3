package main

import (
	"strings"
	"testing"

	"github.com/llmgw/llmgw/pkg/internal/testkit"
)

// The rollup reads and writes usage items: it must not link the failover
// engine, the HTTP front or any provider adapter or SDK.
func TestRollupLinksNoProviderOrFailoverCode(t *testing.T) {
	for _, p := range testkit.Deps(t, "github.com/llmgw/llmgw/functions/rollup") {
		for _, banned := range []string{"/pkg/failover", "/pkg/server", "/pkg/provider", "/pkg/ingress",
			"bedrockruntime", "anthropic-sdk-go", "openai-go"} {
			if strings.Contains(p, banned) {
				t.Errorf("the rollup links %s", p)
			}
		}
	}
}
