package gwstack

import (
	"fmt"
	"os"
	"strings"
	"testing"

	yaml "go.yaml.in/yaml/v2"
)

func readSeed(t *testing.T) []byte {
	t.Helper()
	b, err := os.ReadFile("../seed-config.yaml")
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func TestSeedConfigRendersForStage(t *testing.T) {
	text := RenderSeedConfig(readSeed(t), "prod")
	if strings.Contains(text, "STAGE") {
		t.Errorf("STAGE token left in rendered config:\n%s", text)
	}
	if strings.HasPrefix(text, "#") {
		t.Errorf("leading comment block not stripped:\n%s", text)
	}
	var cfg struct {
		Providers map[string]struct {
			Kind    string              `yaml:"kind"`
			BaseURL string              `yaml:"base_url"`
			Region  string              `yaml:"region"`
			Keys    []map[string]string `yaml:"keys"`
		} `yaml:"providers"`
		Routes map[string]struct {
			Targets []struct {
				Provider string `yaml:"provider"`
				Model    string `yaml:"model"`
			} `yaml:"targets"`
		} `yaml:"routes"`
		Teams map[string]interface{} `yaml:"teams"`
	}
	if err := yaml.UnmarshalStrict([]byte(text), &cfg); err != nil {
		t.Fatalf("seed config does not match the config shape: %v", err)
	}
	if got := cfg.Providers["openai"].Keys[0]["ssm"]; got != "/llmgw/prod/keys/openai/1" {
		t.Errorf("openai key path = %q", got)
	}
	if got := cfg.Providers["anthropic"].Keys[0]["ssm"]; got != "/llmgw/prod/keys/anthropic/1" {
		t.Errorf("anthropic key path = %q", got)
	}
	for name, r := range cfg.Routes {
		if len(r.Targets) == 0 {
			t.Errorf("route %s has no targets", name)
		}
		for _, tg := range r.Targets {
			if _, ok := cfg.Providers[tg.Provider]; !ok {
				t.Errorf("route %s targets unknown provider %q", name, tg.Provider)
			}
		}
	}
	if len(cfg.Routes["claude-sonnet"].Targets) != 3 {
		t.Errorf("claude-sonnet should have 3 targets (anthropic, bedrock, openai)")
	}
	if cfg.Teams == nil {
		t.Errorf("teams should be an empty mapping")
	}
	regions, err := BedrockRegions(text)
	if err != nil || len(regions) != 1 || regions[0] != "us-east-1" {
		t.Errorf("BedrockRegions = %v, %v", regions, err)
	}
}

func TestSplitConfigSmallIsOneParameter(t *testing.T) {
	text := RenderSeedConfig(readSeed(t), "dev")
	chunks, err := SplitConfig(text, MaxParameterBytes)
	if err != nil {
		t.Fatal(err)
	}
	if len(chunks) != 1 || chunks[0].Name != "00-base" || chunks[0].Value != text {
		t.Fatalf("got %d chunks, first %q", len(chunks), chunks[0].Name)
	}
}

// bigConfig builds a config whose routes section alone is far above 4 KB.
func bigConfig(routes int) string {
	var b strings.Builder
	b.WriteString("providers:\n  openai:\n    kind: openai\n    base_url: https://api.openai.com/v1\n")
	b.WriteString("routes:\n")
	for i := 0; i < routes; i++ {
		fmt.Fprintf(&b, "  route-%03d:\n    # a comment that belongs to route %d\n    targets:\n", i, i)
		fmt.Fprintf(&b, "      - {provider: openai, model: gpt-4.1-mini-%03d}\n      - provider: openai\n        model: gpt-4.1-%03d\n", i, i)
	}
	b.WriteString("teams:\n  search:\n    budget_usd: 100\n    notes: |\n      multi-line\n      block: scalar\n")
	return b.String()
}

func TestSplitConfigLargeMergesBack(t *testing.T) {
	text := bigConfig(200)
	if len(text) < 3*MaxParameterBytes {
		t.Fatalf("test config too small: %d bytes", len(text))
	}
	chunks, err := SplitConfig(text, MaxParameterBytes)
	if err != nil {
		t.Fatal(err)
	}
	if len(chunks) < 4 {
		t.Fatalf("expected several chunks, got %d", len(chunks))
	}
	for i, c := range chunks {
		if len(c.Value) > MaxParameterBytes {
			t.Errorf("chunk %s is %d bytes", c.Name, len(c.Value))
		}
		want := "00-base"
		if i > 0 {
			want = fmt.Sprintf("00-base-%02d", i)
		}
		if c.Name != want {
			t.Errorf("chunk %d named %q, want %q", i, c.Name, want)
		}
		if i > 0 && c.Name <= chunks[i-1].Name {
			t.Errorf("chunk names not in sorted order: %s after %s", c.Name, chunks[i-1].Name)
		}
	}
	// SplitConfig verifies the merge itself; check the pieces repeat the
	// section header rather than producing invalid YAML.
	if !strings.HasPrefix(chunks[1].Value, "routes:\n") {
		t.Errorf("second chunk should continue the routes section, got %q", chunks[1].Value[:40])
	}
}

func TestSplitConfigErrors(t *testing.T) {
	if _, err := SplitConfig("routes: [unclosed\n", MaxParameterBytes); err == nil {
		t.Error("invalid YAML accepted")
	}
	huge := "routes:\n  one:\n    note: " + strings.Repeat("x", 5000) + "\n"
	if _, err := SplitConfig(huge, MaxParameterBytes); err == nil || !strings.Contains(err.Error(), "routes.one") {
		t.Errorf("oversized single entry: err = %v", err)
	}
	flow := "routes: {" + strings.Repeat("a: 1, ", 1) + "b: " + strings.Repeat("y", 5000) + "}\n"
	if _, err := SplitConfig(flow, MaxParameterBytes); err == nil {
		t.Error("oversized flow mapping accepted")
	}
}

func TestMergeRegions(t *testing.T) {
	got := mergeRegions("eu-west-1", []string{"us-east-1", "eu-west-1"}, []string{" us-west-2 ", ""})
	want := []string{"eu-west-1", "us-east-1", "us-west-2"}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("mergeRegions = %v, want %v", got, want)
	}
}
