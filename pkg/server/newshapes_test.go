package server_test

import (
	"fmt"
	"net/http"
	"strings"
	"testing"
)

// Newer Chat Completions shapes (issue 13, item 12): custom tools,
// tool_choice allowed_tools and fields the gateway does not know reach an
// OpenAI-compatible target byte for byte; translating targets, which
// cannot express them, are skipped with the named 400 (unsupported_feature)
// and never called.
const newShapes = `{"model":"m","messages":[{"role":"user","content":"grep the logs"}],` +
	`"tools":[{"type":"function","function":{"name":"read_file","parameters":{"type":"object"}}},` +
	`{"type":"custom","custom":{"name":"grep","description":"run grep","format":{"type":"grammar","grammar":{"syntax":"lark","definition":"start: /.+/"}}}}],` +
	`"tool_choice":{"type":"allowed_tools","allowed_tools":{"mode":"auto","tools":[{"type":"custom","custom":{"name":"grep"}}]}},` +
	`"verbosity":"low","prompt_cache_key":"k-1","safety_identifier":"u-9","future_field":{"x":[1,{"y":null}]}}`

func TestNewerChatShapesPassThroughToOpenAICompatibleTargets(t *testing.T) {
	up := newUpstream(t, okHandler)
	g := newGateway(t, oneRoute("", up.URL))
	for _, body := range []string{
		newShapes,
		strings.Replace(newShapes, `"tool_choice":{"type":"allowed_tools","allowed_tools":{"mode":"auto","tools":[{"type":"custom","custom":{"name":"grep"}}]}}`,
			`"tool_choice":{"type":"custom","custom":{"name":"grep"}}`, 1),
	} {
		resp := g.post(t, body)
		out := readAll(t, resp.Body)
		if resp.StatusCode != 200 {
			t.Fatalf("status %d: %s", resp.StatusCode, out)
		}
		want := strings.Replace(body, `"model":"m"`, `"model":"up-model-0"`, 1)
		if got := string(up.body(int(up.hits.Load()) - 1)); got != want {
			t.Errorf("upstream body changed beyond the model:\n got %s\nwant %s", got, want)
		}
	}
	// Still refused: what no target could take.
	for name, body := range map[string]string{
		"tool without type":           `{"model":"m","messages":[{"role":"user","content":"x"}],"tools":[{"function":{"name":"f"}}]}`,
		"function tool without name":  `{"model":"m","messages":[{"role":"user","content":"x"}],"tools":[{"type":"function","function":{}}]}`,
		"tool_choice without type":    `{"model":"m","messages":[{"role":"user","content":"x"}],"tool_choice":{"allowed_tools":{}}}`,
		"tool_choice of a wrong type": `{"model":"m","messages":[{"role":"user","content":"x"}],"tool_choice":7}`,
	} {
		resp := g.post(t, body)
		if out := readAll(t, resp.Body); resp.StatusCode != 400 {
			t.Errorf("%s: status %d %s", name, resp.StatusCode, out)
		}
	}
}

func TestTranslatingTargetsRefuseShapesTheyCannotExpress(t *testing.T) {
	t.Setenv("AWS_ACCESS_KEY_ID", "AKIDTEST")
	t.Setenv("AWS_SECRET_ACCESS_KEY", "secret")
	t.Setenv("AWS_REGION", "us-east-1")
	t.Setenv("ANTHROPIC_TEST_KEY", "sk-ant-test-key-0000000000")
	anth := newUpstream(t, func(w http.ResponseWriter, _ *http.Request, _ []byte, _ int) { anthropicToolCall(w) })
	bed := newUpstream(t, func(w http.ResponseWriter, _ *http.Request, _ []byte, _ int) { bedrockToolCall(w) })
	oai := newUpstream(t, okHandler)
	g := newGateway(t, fastPolicy+fmt.Sprintf(`
providers:
  anthropic: {kind: anthropic, base_url: %q, keys: [{env: ANTHROPIC_TEST_KEY}]}
  bedrock:   {kind: bedrock, region: us-east-1, endpoint: %q}
  openai:    {kind: openai, base_url: %q}
routes:
  chain:  {targets: [{provider: anthropic, model: claude-sonnet-4-5}, {provider: bedrock, model: claude-b}, {provider: openai, model: gpt-5}]}
  claude: {targets: [{provider: anthropic, model: claude-sonnet-4-5}, {provider: bedrock, model: claude-b}]}
`, anth.URL, bed.URL, oai.URL+"/v1"))
	resp := g.post(t, strings.Replace(newShapes, `"model":"m"`, `"model":"chain"`, 1))
	if out := readAll(t, resp.Body); resp.StatusCode != 200 || resp.Header.Get("x-gateway-provider") != "openai" {
		t.Fatalf("status %d provider %q: %s", resp.StatusCode, resp.Header.Get("x-gateway-provider"), out)
	}
	for _, body := range []string{
		newShapes, // allowed_tools (checked first), custom tool
		`{"model":"m","messages":[{"role":"user","content":"x"}],"tools":[{"type":"custom","custom":{"name":"grep"}}]}`,
		`{"model":"m","messages":[{"role":"user","content":"x"},{"role":"assistant","content":null,"tool_calls":[{"id":"c1","type":"custom","custom":{"name":"grep","input":"x"}}]},{"role":"tool","tool_call_id":"c1","content":"ok"},{"role":"user","content":"y"}],"tools":[{"type":"function","function":{"name":"f"}}]}`,
	} {
		resp := g.post(t, strings.Replace(body, `"model":"m"`, `"model":"claude"`, 1))
		out := readAll(t, resp.Body)
		if resp.StatusCode != 400 || !strings.Contains(out, `"code":"unsupported_feature"`) || !strings.Contains(out, "not supported by") {
			t.Errorf("status %d: %s", resp.StatusCode, out)
		}
	}
	if anth.hits.Load() != 0 || bed.hits.Load() != 0 {
		t.Errorf("translating targets called %d and %d times: they must refuse before any call", anth.hits.Load(), bed.hits.Load())
	}
}
