package server_test

import (
	"math"
	"net/http"
	"strings"
	"testing"

	"github.com/llmgw/llmgw/pkg/server"
	"github.com/llmgw/llmgw/pkg/usage"
)

// TestDiscardedHeadAttemptIsCharged: an attempt that streamed content and
// then failed inside the head buffer is discarded (the client sees only
// the next target's answer), but its upstream billed those tokens: they
// are recorded on the attempt and charged at its target's price.
func TestDiscardedHeadAttemptIsCharged(t *testing.T) {
	primary := newUpstream(t, func(w http.ResponseWriter, _ *http.Request, _ []byte, _ int) {
		sseFrames(w, msgStart("msg_01Primary", 100, 0, 0)+msgTextBlock(0, "PRIMARY", " words")+
			"event: error\ndata: {\"type\":\"error\",\"error\":{\"type\":\"overloaded_error\",\"message\":\"Overloaded\"}}\n\n")
	})
	secondary := newUpstream(t, anthropicOK)
	g := newGateway(t, msgRoute(t, "    head_buffer: {tokens: 50}\n", "anthropic="+primary.URL, "anthropic="+secondary.URL)+`
prices:
  p0/up-model-0: {input: 3, output: 15}
  p1/up-model-1: {input: 1, output: 5}
`, func(o *server.Options) { o.Cost = usage.Cost })
	resp := g.postMessages(t, `{"model":"claude","max_tokens":100,"stream":true,"messages":[{"role":"user","content":"hi"}]}`)
	out := readAll(t, resp.Body)
	if resp.StatusCode != 200 || strings.Contains(out, "PRIMARY") || !strings.Contains(out, "Claude") {
		t.Fatalf("client saw %d: %s", resp.StatusCode, out)
	}
	r := g.waitRecs(t, 1)[0]
	if r.Target != "p1/up-model-1" || len(r.Attempts) != 2 || r.Attempts[0].Phase != "head" {
		t.Fatalf("record %+v", r)
	}
	a := r.Attempts[0]
	if a.InputTokens != 100 || a.OutputTokens < 1 {
		t.Errorf("discarded attempt tokens in %d out %d, want the 100 input tokens it reported and its output", a.InputTokens, a.OutputTokens)
	}
	if r.InputTokens != 145 || r.OutputTokens != 15 {
		t.Errorf("record tokens in %d out %d, want the serving target's own", r.InputTokens, r.OutputTokens)
	}
	served := (25*1 + 100*1 + 20*1 + 15*5) / 1e6
	discarded := float64(a.InputTokens*3+a.OutputTokens*15) / 1e6
	if math.Abs(r.CostUSD-(served+discarded)) > 1e-12 {
		t.Errorf("cost %g, want %g served + %g discarded", r.CostUSD, served, discarded)
	}
}
