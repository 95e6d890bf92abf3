package server_test

import (
	"fmt"
	"io"
	"math"
	"net/http"
	"strings"
	"testing"

	"github.com/llmgw/llmgw/pkg/server"
	"github.com/llmgw/llmgw/pkg/usage"
)

// Grounding with Google Search: a request declaring Gemini's google_search
// tool reaches Gemini as {"googleSearch": {}}; the answer's
// groundingMetadata is counted (one grounded prompt, its webSearchQueries
// as web searches) and charged from the price table (Gemini 2 models bill
// per grounded prompt, Gemini 3 per search query), streamed and not,
// whatever the client's API; unpriced, it is refused.

// groundedChunks is a Gemini answer grounded by two searches, as the API
// streams it: the grounding metadata comes with the last chunk.
var groundedChunks = []string{
	`{"candidates":[{"content":{"parts":[{"text":"Spain won"}],"role":"model"},"index":0}],"usageMetadata":{"promptTokenCount":100,"candidatesTokenCount":2,"totalTokenCount":102},"modelVersion":"gemini-2.5-flash","responseId":"resp_grounded_1"}`,
	`{"candidates":[{"content":{"parts":[{"text":" Euro 2024."}],"role":"model"},"finishReason":"STOP","index":0,` +
		`"groundingMetadata":{"webSearchQueries":["who won euro 2024","euro 2024 final result"],` +
		`"searchEntryPoint":{"renderedContent":"<div></div>"},` +
		`"groundingChunks":[{"web":{"uri":"https://vertexaisearch.cloud.google.com/grounding-api-redirect/1","title":"uefa.com"}}],` +
		`"groundingSupports":[{"segment":{"startIndex":0,"endIndex":19,"text":"Spain won Euro 2024."},"groundingChunkIndices":[0]}]}}],` +
		`"usageMetadata":{"promptTokenCount":100,"candidatesTokenCount":50,"totalTokenCount":150},"modelVersion":"gemini-2.5-flash","responseId":"resp_grounded_1"}`,
}

// geminiGrounded answers generateContent with the whole grounded answer
// and streamGenerateContent with its chunks.
func geminiGrounded(w http.ResponseWriter, r *http.Request, _ []byte, _ int) {
	if strings.Contains(r.URL.Path, ":streamGenerateContent") {
		w.Header().Set("Content-Type", "text/event-stream")
		for _, c := range groundedChunks {
			fmt.Fprintf(w, "data: %s\r\n\r\n", c)
			w.(http.Flusher).Flush()
		}
		return
	}
	w.Header().Set("Content-Type", "application/json")
	whole := strings.Replace(groundedChunks[1], `"parts":[{"text":" Euro 2024."}]`, `"parts":[{"text":"Spain won Euro 2024."}]`, 1)
	io.WriteString(w, whole)
}

func TestGoogleSearchGroundingIsCharged(t *testing.T) {
	t.Setenv("GEMINI_TEST_KEY", "gemini-test-secret-0001")
	up := newUpstream(t, geminiGrounded)
	cfg := fastPolicy + fmt.Sprintf(`
providers:
  gem: {kind: gemini, base_url: %q, keys: [{env: GEMINI_TEST_KEY}]}
prices:
  gem/gemini-2.5-flash: {input: 0.3, output: 2.5, tool_calls: {grounded_prompt: 0.035, web_search: 0.014}}
routes:
  m: {targets: [{provider: gem, model: gemini-2.5-flash}]}
`, up.URL)
	g := newGateway(t, cfg, func(o *server.Options) { o.Cost = usage.Cost })
	want := (100*0.3+50*2.5)/1e6 + 0.035 + 2*0.014
	n := 0
	for _, c := range []struct{ path, body string }{
		{"/v1/chat/completions", `{"model":"m","stream":%t,"tools":[{"type":"google_search"}],"messages":[{"role":"user","content":"who won euro 2024?"}]}`},
		{"/v1/messages", `{"model":"m","max_tokens":100,"stream":%t,"tools":[{"type":"google_search","name":"google_search"}],"messages":[{"role":"user","content":"who won euro 2024?"}]}`},
	} {
		for _, stream := range []bool{false, true} {
			resp := postTo(t, g.URL+c.path, fmt.Sprintf(c.body, stream), "anthropic-version", "2023-06-01")
			if out := readAll(t, resp.Body); resp.StatusCode != 200 || !strings.Contains(out, "Euro 2024.") {
				t.Fatalf("%s stream %t: %d %s", c.path, stream, resp.StatusCode, out)
			}
			if sent := string(up.body(n)); !strings.Contains(sent, `"googleSearch":{}`) {
				t.Errorf("%s stream %t: Gemini got %s, want the googleSearch tool", c.path, stream, sent)
			}
			n++
			r := g.waitRecs(t, n)[n-1]
			if r.ToolCalls.GroundedPrompts != 1 || r.ToolCalls.WebSearch != 2 {
				t.Errorf("%s stream %t: tool calls %+v, want 1 grounded prompt and 2 searches", c.path, stream, r.ToolCalls)
			}
			if math.Abs(r.CostUSD-want) > 1e-9 {
				t.Errorf("%s stream %t: cost %g, want %g (tokens, a grounded prompt and 2 queries)", c.path, stream, r.CostUSD, want)
			}
		}
	}
	// Unpriced grounding is refused before any call.
	g2 := newGateway(t, strings.Replace(cfg, ", tool_calls: {grounded_prompt: 0.035, web_search: 0.014}", "", 1))
	resp := g2.post(t, `{"model":"m","tools":[{"type":"google_search"}],"messages":[{"role":"user","content":"hi"}]}`)
	if out := readAll(t, resp.Body); resp.StatusCode != 400 || !strings.Contains(out, "unpriced_tool") || !strings.Contains(out, "grounded_prompt") {
		t.Errorf("unpriced grounding: %d %s", resp.StatusCode, out)
	}
	if got := up.hits.Load(); got != int32(n) {
		t.Errorf("%d upstream calls, want %d", got, n)
	}
}
