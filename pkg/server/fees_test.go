package server_test

import (
	"bytes"
	"fmt"
	"io"
	"math"
	"net/http"
	"strings"
	"testing"

	"github.com/llmgw/llmgw/pkg/server"
	"github.com/llmgw/llmgw/pkg/usage"
)

// Server-side tool fees: a request declaring a billed server tool is
// priced per call from the price table, counted from the usage the
// upstream reports, and refused when no price is configured.

const webSearchTool = `"tools":[{"type":"web_search_20250305","name":"web_search","max_uses":5}]`

// anthropicSearched answers as Anthropic does after three web searches.
func anthropicSearched(w http.ResponseWriter, _ *http.Request, body []byte, _ int) {
	if bytes.Contains(body, []byte(`"stream":true`)) {
		sseFrames(w, msgStart("msg_01WebSearch", 100, 0, 0)+msgTextBlock(0, "Found", " it")+
			"event: message_delta\ndata: {\"type\":\"message_delta\",\"delta\":{\"stop_reason\":\"end_turn\",\"stop_sequence\":null},\"usage\":{\"input_tokens\":100,\"cache_creation_input_tokens\":0,\"cache_read_input_tokens\":0,\"output_tokens\":50,\"server_tool_use\":{\"web_search_requests\":3}}}\n\n"+
			"event: message_stop\ndata: {\"type\":\"message_stop\"}\n\n")
		return
	}
	w.Header().Set("Content-Type", "application/json")
	io.WriteString(w, `{"id":"msg_01WebSearch","type":"message","role":"assistant","model":"claude-sonnet-4-5-20250929","content":[{"type":"text","text":"Found it"}],"stop_reason":"end_turn","stop_sequence":null,"usage":{"input_tokens":100,"cache_creation_input_tokens":0,"cache_read_input_tokens":0,"output_tokens":50,"server_tool_use":{"web_search_requests":3}}}`)
}

func TestMessagesServerToolFeesAreCharged(t *testing.T) {
	up := newUpstream(t, anthropicSearched)
	g := newGateway(t, msgRoute(t, "", "anthropic="+up.URL)+`
prices:
  p0/up-model-0: {input: 3, output: 15, tool_calls: {web_search: 0.01}}
`, func(o *server.Options) { o.Cost = usage.Cost })
	for i, stream := range []bool{false, true} {
		resp := g.postMessages(t, fmt.Sprintf(`{"model":"claude","max_tokens":100,"stream":%t,%s,"messages":[{"role":"user","content":"search"}]}`, stream, webSearchTool))
		if out := readAll(t, resp.Body); resp.StatusCode != 200 {
			t.Fatalf("stream %t: %d %s", stream, resp.StatusCode, out)
		}
		r := g.waitRecs(t, i+1)[i]
		if r.ToolCalls.WebSearch != 3 {
			t.Errorf("stream %t: record tool calls %+v, want 3 web searches", stream, r.ToolCalls)
		}
		want := (100*3+50*15)/1e6 + 3*0.01
		if math.Abs(r.CostUSD-want) > 1e-9 {
			t.Errorf("stream %t: cost %g, want %g (tokens plus 3 searches at 0.01)", stream, r.CostUSD, want)
		}
	}
}

func TestUnpricedServerToolIsRefused(t *testing.T) {
	up := newUpstream(t, anthropicSearched)
	base := msgRoute(t, "", "anthropic="+up.URL) + "\nprices:\n  p0/up-model-0: {input: 3, output: 15}\n"
	g := newGateway(t, base)
	body := `{"model":"claude","max_tokens":100,` + webSearchTool + `,"messages":[{"role":"user","content":"search"}]}`
	resp := g.postMessages(t, body)
	out := readAll(t, resp.Body)
	if resp.StatusCode != 400 || !strings.Contains(out, `"type":"error"`) || !strings.Contains(out, `"invalid_request_error"`) ||
		!strings.Contains(out, "web_search_20250305") || !strings.Contains(out, "tool_calls.web_search") {
		t.Errorf("unpriced web search: %d %s, want a Messages-shaped 400 naming the tool and the price", resp.StatusCode, out)
	}
	// A tool the provider does not bill per call passes.
	resp = g.postMessages(t, `{"model":"claude","max_tokens":100,"tools":[{"type":"bash_20250124","name":"bash"}],"messages":[{"role":"user","content":"hi"}]}`)
	if out := readAll(t, resp.Body); resp.StatusCode != 200 {
		t.Errorf("bash tool: %d %s", resp.StatusCode, out)
	}
	if n := up.hits.Load(); n != 1 {
		t.Errorf("%d upstream calls, want 1 (none for the refused request)", n)
	}
	// The opt-out serves it.
	g2 := newGateway(t, "server: {allow_unpriced_tools: true}\n"+base)
	resp = g2.postMessages(t, body)
	if out := readAll(t, resp.Body); resp.StatusCode != 200 {
		t.Errorf("allow_unpriced_tools: %d %s", resp.StatusCode, out)
	}
}

// searchedFrames is a Responses stream after two web searches: their
// web_search_call items are in response.completed's output.
var searchedFrames = []string{
	`{"type":"response.created","sequence_number":0,"response":{"id":"resp_ws1","object":"response","created_at":1741290958,"status":"in_progress","model":"gpt-5-2025-08-07","output":[]}}`,
	`{"type":"response.output_item.done","sequence_number":1,"output_index":0,"item":{"id":"ws_1","type":"web_search_call","status":"completed","action":{"type":"search","query":"weather"}}}`,
	`{"type":"response.output_item.done","sequence_number":2,"output_index":1,"item":{"id":"ws_2","type":"web_search_call","status":"completed","action":{"type":"search","query":"forecast"}}}`,
	`{"type":"response.output_text.delta","sequence_number":3,"item_id":"msg_ws1","output_index":2,"content_index":0,"delta":"Sunny","logprobs":[]}`,
	`{"type":"response.completed","sequence_number":4,"response":{"id":"resp_ws1","object":"response","created_at":1741290958,"status":"completed","model":"gpt-5-2025-08-07","output":[` +
		`{"id":"ws_1","type":"web_search_call","status":"completed","action":{"type":"search","query":"weather"}},{"id":"ws_2","type":"web_search_call","status":"completed","action":{"type":"search","query":"forecast"}},` +
		`{"id":"msg_ws1","type":"message","status":"completed","content":[{"type":"output_text","annotations":[],"logprobs":[],"text":"Sunny"}],"role":"assistant"}],` +
		`"usage":{"input_tokens":1000,"input_tokens_details":{"cached_tokens":0},"output_tokens":100,"output_tokens_details":{"reasoning_tokens":0},"total_tokens":1100}}}`,
}

func TestResponsesBuiltinToolFeesAreCharged(t *testing.T) {
	up := newUpstream(t, nativeHandler(searchedFrames))
	g := newGateway(t, fastPolicy+fmt.Sprintf(`
providers:
  oa: {kind: openai, base_url: %q, apis: [chat, responses]}
prices:
  oa/gpt-5: {input: 1.25, output: 10, tool_calls: {web_search: 0.025}}
routes:
  m: {targets: [{provider: oa, model: gpt-5}]}
`, up.URL+"/v1"), func(o *server.Options) { o.Cost = usage.Cost })
	resp := postTo(t, g.URL+"/v1/responses", `{"model":"m","stream":true,"input":"weather?","tools":[{"type":"web_search"}]}`, "Accept", "text/event-stream")
	if out := readAll(t, resp.Body); resp.StatusCode != 200 || out != nativeSSE(searchedFrames) {
		t.Fatalf("%d %s", resp.StatusCode, out)
	}
	r := g.waitRecs(t, 1)[0]
	want := (1000*1.25+100*10)/1e6 + 2*0.025
	if r.ToolCalls.WebSearch != 2 || math.Abs(r.CostUSD-want) > 1e-9 {
		t.Errorf("record tool calls %+v cost %g, want 2 web searches and %g", r.ToolCalls, r.CostUSD, want)
	}
	// No price for file_search: refused in the Responses error shape.
	resp = postTo(t, g.URL+"/v1/responses", `{"model":"m","input":"hi","tools":[{"type":"file_search","vector_store_ids":["vs_1"]}]}`)
	out := readAll(t, resp.Body)
	if resp.StatusCode != 400 || !strings.Contains(out, `"code":"unpriced_tool"`) || !strings.Contains(out, `"param":"tools"`) {
		t.Errorf("unpriced file_search: %d %s", resp.StatusCode, out)
	}
	if n := up.hits.Load(); n != 1 {
		t.Errorf("%d upstream calls, want 1", n)
	}
}
