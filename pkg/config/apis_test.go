package config

import (
	"strings"
	"testing"
)

func TestProviderAPIs(t *testing.T) {
	c, err := Parse([]byte(`
providers:
  both: {kind: openai, base_url: "https://api.openai.com/v1", apis: [chat, responses]}
  chat: {kind: openai, base_url: "https://api.groq.com/openai/v1"}
routes:
  m: {targets: [{provider: both, model: gpt-5}, {provider: chat, model: llama}]}
`))
	if err != nil {
		t.Fatal(err)
	}
	both, chat := c.Providers["both"], c.Providers["chat"]
	if !both.Speaks("responses") || !both.Speaks("chat") || both.Speaks("embeddings") {
		t.Errorf("apis [chat, responses]: speaks responses %v chat %v embeddings %v", both.Speaks("responses"), both.Speaks("chat"), both.Speaks("embeddings"))
	}
	if !chat.Speaks("chat") || chat.Speaks("responses") {
		t.Error("an openai provider without apis speaks chat only")
	}
	for name, tc := range map[string]struct{ provider, want string }{
		"unknown api":     {`{kind: openai, base_url: "https://x/v1", apis: [chat, completions]}`, `providers.p.apis[1]: unknown API "completions"`},
		"listed twice":    {`{kind: openai, base_url: "https://x/v1", apis: [responses, responses]}`, `providers.p.apis[1]: "responses" is listed twice`},
		"translated kind": {`{kind: anthropic, base_url: "https://api.anthropic.com", apis: [responses]}`, `providers.p.apis: only kinds fake and openai`},
	} {
		_, err := Parse([]byte("providers:\n  p: " + tc.provider + "\nroutes:\n  m: {targets: [{provider: p, model: x}]}\n"))
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: err = %v, want %q", name, err, tc.want)
		}
	}
}
