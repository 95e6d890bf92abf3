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
