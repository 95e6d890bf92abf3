package config

import (
	"strings"
	"testing"
)

func TestBedrockModelIDs(t *testing.T) {
	const base = `
providers: {a: {kind: fake}}
routes:
  fast: {targets: [{provider: a, model: x}], bedrock_model_ids: ["us.anthropic.claude-haiku-4-5-20251001-v1:0", "arn:aws:bedrock:us-east-1:1:inference-profile/us.x"]}
  slow: {targets: [{provider: a, model: y}]}
`
	c, err := Parse([]byte(base))
	if err != nil {
		t.Fatal(err)
	}
	for id, want := range map[string]string{"fast": "fast", "slow": "slow", "us.anthropic.claude-haiku-4-5-20251001-v1:0": "fast",
		"arn:aws:bedrock:us-east-1:1:inference-profile/us.x": "fast", "nope": ""} {
		if got, ok := c.BedrockRoute(id); got != want || ok != (want != "") {
			t.Errorf("BedrockRoute(%q) = %q %v, want %q", id, got, ok, want)
		}
	}
	for _, c := range []struct{ ids, want string }{
		{`["slow"]`, "is the name of another route"},
		{`[""]`, "is not a Bedrock model id"},
		{`["a b"]`, "is not a Bedrock model id"},
		{`["m1", "m1"]`, "is listed by route"},
	} {
		cfg := base + "  other: {targets: [{provider: a, model: z}], bedrock_model_ids: " + c.ids + "}\n"
		_, err := Parse([]byte(cfg))
		if err == nil || !strings.Contains(err.Error(), c.want) || !strings.Contains(err.Error(), "bedrock_model_ids") {
			t.Errorf("ids %s: err %v, want %q", c.ids, err, c.want)
		}
	}
}
