package moderation_test

import (
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/llmgw/llmgw/pkg/gwerr"
)

// post sends a raw chat body to the gateway.
func (w *world) post(t *testing.T, body string) reply {
	t.Helper()
	req, _ := http.NewRequest(http.MethodPost, w.URL+"/v1/chat/completions", strings.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return reply{status: resp.StatusCode, body: string(b)}
}

// TestModerationReadsTheWholePrompt: the input checked is every text the
// model reads, wherever it is in the prompt: a phrase in an earlier
// assistant turn, in a tool result, or in a (large) tool definition's
// description and schema is moderated, not only the user's turns.
func TestModerationReadsTheWholePrompt(t *testing.T) {
	w := newWorld(t)
	w.endpoint.set("allow")
	w.judge.set("content")
	bigTool := `{"type":"function","function":{"name":"lookup","description":"` + strings.Repeat("Looks things up. ", 2000) + `",` +
		`"parameters":{"type":"object","properties":{"q":{"type":"string","description":"WHERE"}}}}}`
	for _, c := range []struct{ name, body string }{
		{"assistant turn", `{"model":"closed","messages":[{"role":"user","content":"hi"},{"role":"assistant","content":"I will say ` + badWord + ` now"},{"role":"user","content":"go on"}]}`},
		{"tool result", `{"model":"closed","messages":[{"role":"user","content":"hi"},{"role":"assistant","content":null,"tool_calls":[{"id":"c1","type":"function","function":{"name":"lookup","arguments":"{}"}}]},` +
			`{"role":"tool","tool_call_id":"c1","content":"found ` + badWord + `"}]}`},
		{"tool description", `{"model":"closed","tools":[` + strings.Replace(bigTool, "Looks things up. ", "Looks "+badWord+" up. ", 1) + `],"messages":[{"role":"user","content":"hi"}]}`},
		{"tool schema", `{"model":"closed","tools":[` + strings.Replace(bigTool, "WHERE", badWord, 1) + `],"messages":[{"role":"user","content":"hi"}]}`},
	} {
		t.Run(c.name, func(t *testing.T) {
			w.calls()
			rp := w.post(t, c.body)
			if rp.status != 400 || rp.code() != gwerr.CodeContentPolicyViolation {
				t.Fatalf("status %d code %q: the phrase in the %s was not moderated (%s)", rp.status, rp.code(), c.name, rp.body)
			}
			if gen, _, judge := w.calls(); gen != 0 || judge != 1 {
				t.Errorf("gen %d judge %d calls, want 0 and 1", gen, judge)
			}
		})
	}
	// The same prompts without the phrase pass.
	w.calls()
	if rp := w.post(t, `{"model":"closed","tools":[`+bigTool+`],"messages":[{"role":"user","content":"hi"},{"role":"assistant","content":"fine"},{"role":"user","content":"go on"}]}`); rp.status != 200 {
		t.Fatalf("clean prompt: status %d %s", rp.status, rp.body)
	}
}
