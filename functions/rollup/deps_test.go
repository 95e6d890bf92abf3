package main

import (
	"os/exec"
	"strings"
	"testing"
)

// The rollup reads and writes usage items: it must not link the failover
// engine, the HTTP front, any provider adapter or SDK, nor the gateway's
// telemetry exporter and its protobuf types (only the gateway command
// links those).
func TestRollupLinksNoProviderOrFailoverCode(t *testing.T) {
	if _, err := exec.LookPath("go"); err != nil {
		t.Skip("go tool not on PATH")
	}
	out, err := exec.Command("go", "list", "-deps", "github.com/llmgw/llmgw/functions/rollup").Output()
	if err != nil {
		t.Fatalf("go list -deps: %v", err)
	}
	for _, p := range strings.Fields(string(out)) {
		for _, banned := range []string{"/pkg/failover", "/pkg/server", "/pkg/provider", "/pkg/ingress",
			"bedrockruntime", "anthropic-sdk-go", "openai-go",
			"/pkg/telemetry", "/pkg/status", "go.opentelemetry.io/proto/otlp", "google.golang.org/protobuf"} {
			if strings.Contains(p, banned) {
				t.Errorf("the rollup links %s", p)
			}
		}
	}
}
