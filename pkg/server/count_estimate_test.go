package server_test

import (
	"net/http"
	"strings"
	"testing"

	"github.com/tidwall/gjson"
)

// TestCountTokensEstimateReadsTheWholePrompt: the gateway's estimate
// (a route without an upstream counter) reads the whole canonical prompt:
// a large tool definition and an earlier assistant turn count, not only
// the user's text.
func TestCountTokensEstimateReadsTheWholePrompt(t *testing.T) {
	oai := newUpstream(t, okHandler)
	g := newGateway(t, msgRoute(t, "", "openai="+oai.URL))
	count := func(body string) int64 {
		t.Helper()
		req, _ := http.NewRequest(http.MethodPost, g.URL+"/v1/messages/count_tokens", strings.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("anthropic-version", "2023-06-01")
		req.Header.Set("x-api-key", "sk-ant-client")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		b := readAll(t, resp.Body)
		if resp.StatusCode != 200 || resp.Header.Get("x-gateway-estimate") != "true" {
			t.Fatalf("count: %d %s", resp.StatusCode, b)
		}
		return gjson.Get(b, "input_tokens").Int()
	}
	phrase := strings.Repeat("a", 4000) // 1000 tokens
	base := count(`{"model":"claude","messages":[{"role":"user","content":"hi"}]}`)
	tool := count(`{"model":"claude","tools":[{"name":"look","description":"` + phrase + `","input_schema":{"type":"object"}}],"messages":[{"role":"user","content":"hi"}]}`)
	turn := count(`{"model":"claude","messages":[{"role":"user","content":"hi"},{"role":"assistant","content":"` + phrase + `"},{"role":"user","content":"go on"}]}`)
	if tool-base < 1000 {
		t.Errorf("a 4000-byte tool description added %d tokens to the estimate (%d -> %d)", tool-base, base, tool)
	}
	if turn-base < 1000 {
		t.Errorf("a 4000-byte assistant turn added %d tokens to the estimate (%d -> %d)", turn-base, base, turn)
	}
	if oai.hits.Load() != 0 {
		t.Error("the estimate called the upstream")
	}
}
