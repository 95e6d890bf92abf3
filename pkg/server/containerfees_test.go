package server_test

import (
	"bytes"
	"fmt"
	"io"
	"math"
	"net/http"
	"strings"
	"testing"

	"github.com/llmgw/llmgw/pkg/config"
	"github.com/llmgw/llmgw/pkg/server"
	"github.com/llmgw/llmgw/pkg/usage"
)

// Code execution: Anthropic bills the container an answer ran in by time
// (at least 5 minutes, $0.05 per hour, past a free allowance), not per
// call, and reports no duration: the answer names its container
// (message.container, a message_delta's delta.container) and holds the
// code-execution blocks. Each answer that ran in a container is charged
// max(5 minutes, the request's duration) at prices.*.tool_hours.code_execution,
// streamed and not, and for an attempt discarded inside the head buffer.
// (Only the Messages passthrough reaches Anthropic with a code-execution
// tool: the translating paths refuse server tools and Claude on Bedrock
// steps aside for them; the translator's own count is tested in
// pkg/provider/anthropic, TestTranslatedAnswerCountsItsContainer.)

const codeExecTool = `"tools":[{"type":"code_execution_20250825","name":"code_execution"}]`

// codeExecFrames is an Anthropic stream that ran bash in a container: a
// server_tool_use of bash_code_execution, its result, the text, and the
// container named in message_delta.
const codeExecFrames = "event: message_start\ndata: {\"type\":\"message_start\",\"message\":{\"id\":\"msg_01CodeExec\",\"type\":\"message\",\"role\":\"assistant\",\"model\":\"claude-sonnet-4-5-20250929\",\"content\":[],\"stop_reason\":null,\"stop_sequence\":null,\"container\":null,\"usage\":{\"input_tokens\":100,\"cache_creation_input_tokens\":0,\"cache_read_input_tokens\":0,\"output_tokens\":1}}}\n\n" +
	"event: content_block_start\ndata: {\"type\":\"content_block_start\",\"index\":0,\"content_block\":{\"type\":\"server_tool_use\",\"id\":\"srvtoolu_01B3C4D5\",\"name\":\"bash_code_execution\",\"input\":{}}}\n\n" +
	"event: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"index\":0,\"delta\":{\"type\":\"input_json_delta\",\"partial_json\":\"{\\\"command\\\": \\\"python3 -c 'print(6*7)'\\\"}\"}}\n\n" +
	"event: content_block_stop\ndata: {\"type\":\"content_block_stop\",\"index\":0}\n\n" +
	"event: content_block_start\ndata: {\"type\":\"content_block_start\",\"index\":1,\"content_block\":{\"type\":\"bash_code_execution_tool_result\",\"tool_use_id\":\"srvtoolu_01B3C4D5\",\"content\":{\"type\":\"bash_code_execution_result\",\"stdout\":\"42\\n\",\"stderr\":\"\",\"return_code\":0,\"content\":[]}}}\n\n" +
	"event: content_block_stop\ndata: {\"type\":\"content_block_stop\",\"index\":1}\n\n" +
	"event: content_block_start\ndata: {\"type\":\"content_block_start\",\"index\":2,\"content_block\":{\"type\":\"text\",\"text\":\"\"}}\n\n" +
	"event: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"index\":2,\"delta\":{\"type\":\"text_delta\",\"text\":\"It is 42.\"}}\n\n" +
	"event: content_block_stop\ndata: {\"type\":\"content_block_stop\",\"index\":2}\n\n" +
	"event: message_delta\ndata: {\"type\":\"message_delta\",\"delta\":{\"stop_reason\":\"end_turn\",\"stop_sequence\":null,\"container\":{\"id\":\"container_011CPR5CNjB747bTd36fQLFk\",\"expires_at\":\"2026-12-02T04:13:31.749448Z\"}},\"usage\":{\"input_tokens\":100,\"cache_creation_input_tokens\":0,\"cache_read_input_tokens\":0,\"output_tokens\":50,\"server_tool_use\":{\"web_search_requests\":0}}}\n\n" +
	"event: message_stop\ndata: {\"type\":\"message_stop\"}\n\n"

// codeExecBody is the same answer whole.
const codeExecBody = `{"id":"msg_01CodeExec","type":"message","role":"assistant","model":"claude-sonnet-4-5-20250929",` +
	`"container":{"id":"container_011CPR5CNjB747bTd36fQLFk","expires_at":"2026-12-02T04:13:31.749448Z"},"content":[` +
	`{"type":"server_tool_use","id":"srvtoolu_01B3C4D5","name":"bash_code_execution","input":{"command":"python3 -c 'print(6*7)'"}},` +
	`{"type":"bash_code_execution_tool_result","tool_use_id":"srvtoolu_01B3C4D5","content":{"type":"bash_code_execution_result","stdout":"42\n","stderr":"","return_code":0,"content":[]}},` +
	`{"type":"text","text":"It is 42."}],"stop_reason":"end_turn","stop_sequence":null,` +
	`"usage":{"input_tokens":100,"cache_creation_input_tokens":0,"cache_read_input_tokens":0,"output_tokens":50,"server_tool_use":{"web_search_requests":0}}}`

// anthropicCodeExec answers as Anthropic does after running code.
func anthropicCodeExec(w http.ResponseWriter, _ *http.Request, body []byte, _ int) {
	if bytes.Contains(body, []byte(`"stream":true`)) {
		sseFrames(w, codeExecFrames)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	io.WriteString(w, codeExecBody)
}

// containerFee is one container at the 5-minute minimum at $0.05/hour.
const containerFee = 0.05 * 5 / 60

func wantContainerCharge(t *testing.T, what string, got float64, tokens float64) {
	t.Helper()
	if want := tokens + containerFee; math.Abs(got-want) > 1e-9 {
		t.Errorf("%s: cost %g, want %g (tokens %g plus one container for 5 minutes at $0.05/h)", what, got, want, tokens)
	}
}

func TestCodeExecutionContainerTimeIsCharged(t *testing.T) {
	up := newUpstream(t, anthropicCodeExec)
	g := newGateway(t, msgRoute(t, "", "anthropic="+up.URL)+`
prices:
  p0/up-model-0: {input: 3, output: 15, tool_hours: {code_execution: 0.05}}
`, func(o *server.Options) { o.Cost = usage.Cost })
	tokens := (100*3 + 50*15) / 1e6
	n := 0
	for _, stream := range []bool{false, true} {
		resp := g.postMessages(t, fmt.Sprintf(`{"model":"claude","max_tokens":100,"stream":%t,%s,"messages":[{"role":"user","content":"6*7?"}]}`, stream, codeExecTool))
		if out := readAll(t, resp.Body); resp.StatusCode != 200 || !strings.Contains(out, "container_011CPR5CNjB747bTd36fQLFk") {
			t.Fatalf("messages stream %t: %d %s", stream, resp.StatusCode, out)
		}
		n++
		r := g.waitRecs(t, n)[n-1]
		if r.ToolCalls.Containers != 1 {
			t.Errorf("messages stream %t: tool calls %+v, want one container", stream, r.ToolCalls)
		}
		wantContainerCharge(t, fmt.Sprintf("messages stream %t", stream), r.CostUSD, tokens)
	}
	// An answer that ran no code is charged no container.
	plain := newUpstream(t, anthropicSearched)
	g2 := newGateway(t, msgRoute(t, "", "anthropic="+plain.URL)+`
prices:
  p0/up-model-0: {input: 3, output: 15, tool_hours: {code_execution: 0.05}}
`, func(o *server.Options) { o.Cost = usage.Cost })
	resp := g2.postMessages(t, `{"model":"claude","max_tokens":100,`+codeExecTool+`,"messages":[{"role":"user","content":"hi"}]}`)
	if out := readAll(t, resp.Body); resp.StatusCode != 200 {
		t.Fatalf("plain: %d %s", resp.StatusCode, out)
	}
	if r := g2.waitRecs(t, 1)[0]; r.ToolCalls.Containers != 0 || math.Abs(r.CostUSD-tokens) > 1e-9 {
		t.Errorf("an answer without a container: tool calls %+v cost %g, want no container and %g", r.ToolCalls, r.CostUSD, tokens)
	}
}

// A code-execution answer discarded inside the head buffer (it failed
// before the client saw any of it) still ran a container: it is
// recorded on the attempt and charged at its target's price.
func TestDiscardedAttemptContainerIsCharged(t *testing.T) {
	primary := newUpstream(t, func(w http.ResponseWriter, _ *http.Request, _ []byte, _ int) {
		head, _, _ := strings.Cut(codeExecFrames, "event: content_block_start\ndata: {\"type\":\"content_block_start\",\"index\":2")
		sseFrames(w, head+"event: error\ndata: {\"type\":\"error\",\"error\":{\"type\":\"overloaded_error\",\"message\":\"Overloaded\"}}\n\n")
	})
	secondary := newUpstream(t, anthropicOK)
	g := newGateway(t, msgRoute(t, "    head_buffer: {tokens: 500}\n", "anthropic="+primary.URL, "anthropic="+secondary.URL)+`
prices:
  p0/up-model-0: {input: 3, output: 15, tool_hours: {code_execution: 0.05}}
  p1/up-model-1: {input: 1, output: 5, tool_hours: {code_execution: 0.05}}
`, func(o *server.Options) { o.Cost = usage.Cost })
	resp := g.postMessages(t, `{"model":"claude","max_tokens":100,"stream":true,`+codeExecTool+`,"messages":[{"role":"user","content":"6*7?"}]}`)
	if out := readAll(t, resp.Body); resp.StatusCode != 200 || strings.Contains(out, "srvtoolu_01B3C4D5") {
		t.Fatalf("client saw %d: %s", resp.StatusCode, out)
	}
	r := g.waitRecs(t, 1)[0]
	if r.Target != "p1/up-model-1" || len(r.Attempts) != 2 || r.Attempts[0].ToolCalls.Containers != 1 || r.ToolCalls.Containers != 0 {
		t.Fatalf("record target %s attempts %+v tool calls %+v: want the discarded attempt's container on it", r.Target, r.Attempts, r.ToolCalls)
	}
	a := r.Attempts[0]
	served := (25*1 + 100*1 + 20*1 + 15*5) / 1e6
	discarded := float64(a.InputTokens*3+a.OutputTokens*15)/1e6 + 0.05*max(config.MinContainerTime.Hours(), a.LatencyM/3.6e6)
	if math.Abs(r.CostUSD-(served+discarded)) > 1e-9 {
		t.Errorf("cost %g, want %g served + %g discarded (its tokens and its container)", r.CostUSD, served, discarded)
	}
}
