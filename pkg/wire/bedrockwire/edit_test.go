package bedrockwire

import (
	"testing"

	"github.com/llmgw/llmgw/pkg/wire/chatwire"
)

// EditConverse edits only what the variant and the output limit name,
// every other byte kept; nothing to apply returns the body itself.
func TestEditConverse(t *testing.T) {
	temp, topP := 0.2, 0.9
	body := `{"messages":[{"role":"user","content":[{"text":"hi"}]}], "performanceConfig": {"latency":"optimized"}}`
	for _, tc := range []struct {
		name, body string
		v          *chatwire.Variant
		limit      int
		tier       string
		want       string
	}{
		{"nothing", body, nil, 0, "", body},
		{"limit added", body, nil, 100, "", `{"messages":[{"role":"user","content":[{"text":"hi"}]}], "performanceConfig": {"latency":"optimized"},"inferenceConfig":{"maxTokens":100}}`},
		{"limit lowers", `{"inferenceConfig": {"maxTokens": 500, "topP":0.5}}`, nil, 100, "", `{"inferenceConfig": {"maxTokens": 100, "topP":0.5}}`},
		{"limit above the client's", `{"inferenceConfig":{"maxTokens":50}}`, nil, 100, "", `{"inferenceConfig":{"maxTokens":50}}`},
		{"limit into an inferenceConfig without maxTokens", `{"inferenceConfig":{"topP":0.5}}`, nil, 100, "", `{"inferenceConfig":{"topP":0.5,"maxTokens":100}}`},
		{"variant", `{"system":[{"text":"Be brief."}],"inferenceConfig":{"temperature":1}}`,
			&chatwire.Variant{SystemPrefix: "P", SystemSuffix: "S", Temperature: &temp, TopP: &topP, MaxTokensCap: 64}, 0, "",
			`{"system":[{"text":"P"},{"text":"Be brief."},{"text":"S"}],"inferenceConfig":{"temperature":0.2,"topP":0.9,"maxTokens":64}}`},
		{"system replaced", `{"system":[{"text":"Be brief."}]}`, &chatwire.Variant{System: "New."}, 0, "", `{"system":[{"text":"New."}]}`},
		{"system added", `{"messages":[]}`, &chatwire.Variant{System: "New."}, 0, "", `{"messages":[],"system":[{"text":"New."}]}`},
		{"tier added", `{"messages":[]}`, nil, 0, "priority", `{"messages":[],"serviceTier":{"type":"priority"}}`},
		{"tier replaces the client's", `{"serviceTier": {"type":"flex"}, "messages":[]}`, nil, 0, "priority", `{"serviceTier": {"type":"priority"}, "messages":[]}`},
		{"no tier keeps the client's", `{"serviceTier":{"type":"flex"}}`, nil, 100, "", `{"serviceTier":{"type":"flex"},"inferenceConfig":{"maxTokens":100}}`},
	} {
		got, err := EditConverse([]byte(tc.body), tc.v, tc.limit, tc.tier)
		if err != nil || string(got) != tc.want {
			t.Errorf("%s: %s (%v)\nwant %s", tc.name, got, err, tc.want)
		}
	}
}
