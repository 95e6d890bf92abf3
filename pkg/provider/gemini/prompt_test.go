package gemini

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/llmgw/llmgw/pkg/config"
	"github.com/llmgw/llmgw/pkg/exchange"
	"github.com/llmgw/llmgw/pkg/gwerr"
	"github.com/llmgw/llmgw/pkg/provider"
)

// promptCall is an attempt for a request of another API (a Messages
// client) given by its canonical Prompt.
func promptCall(p *exchange.Prompt) *provider.Call {
	rq := &exchange.Request{API: exchange.Messages, Prompt: p}
	return &provider.Call{Req: rq, Step: config.Step{ID: "g/gemini-test", Provider: "g", Model: "gemini-test"}, Key: exchange.Key{Secret: testKey}}
}

// promptWire sends p to a fake answering answer and returns the wire body
// and the events.
func promptWire(t *testing.T, p *exchange.Prompt, answer string) (string, []exchange.Event) {
	t.Helper()
	f := newFakeAPI(t, serveJSON(200, answer))
	s, err := newTestAdapter(t, f).Send(context.Background(), promptCall(p))
	if err != nil {
		t.Fatalf("Send: %v", err)
	}
	evs, _ := collect(t, s)
	return string(f.requests()[0].body), evs
}

func user(blocks ...exchange.Block) exchange.Message {
	return exchange.Message{Role: exchange.RoleUser, Content: blocks}
}

func txt(s string) exchange.Block { return exchange.Block{Type: exchange.BlockText, Text: s} }

// TestThoughtSignatureRoundTrip: a thoughtSignature Gemini sent reaches a
// client that asked for thinking as a Signature event (marked as
// Gemini's), and sent back on the thinking block it goes, byte-exact, on
// the part that followed it: the function call, not the placeholder.
// Another provider's signed thinking is dropped.
func TestThoughtSignatureRoundTrip(t *testing.T) {
	const sig = "CiQBcsjafQ+/=="
	answer := `{"candidates":[{"content":{"role":"model","parts":[{"text":"Let me look.","thought":true},
		{"functionCall":{"name":"get_weather","args":{"city":"Paris"}},"thoughtSignature":"` + sig + `"}]},"finishReason":"STOP","index":0}],
		"usageMetadata":{"promptTokenCount":3,"candidatesTokenCount":1,"totalTokenCount":4},"responseId":"r1"}`
	p := &exchange.Prompt{Messages: []exchange.Message{user(txt("Weather?"))}, Output: exchange.Output{Reasoning: exchange.ReasoningConfig{Mode: "enabled", BudgetTokens: 2048}}}
	body, evs := promptWire(t, p, answer)
	if !strings.Contains(body, `"thinkingConfig":{"includeThoughts":true,"thinkingBudget":2048}`) {
		t.Errorf("thinking budget not sent: %s", body)
	}
	var got string
	for _, ev := range evs {
		if ev.Kind == exchange.Signature {
			got = ev.Text
		}
	}
	if got != SignaturePrefix+sig {
		t.Fatalf("signature event %q, want %q", got, SignaturePrefix+sig)
	}
	// The client sends the turn back.
	p.Messages = append(p.Messages,
		exchange.Message{Role: exchange.RoleAssistant, Content: []exchange.Block{
			{Type: exchange.BlockThinking, Text: "Let me look.", Signature: got},
			{Type: exchange.BlockToolUse, ToolID: "c1", ToolName: "get_weather", Input: json.RawMessage(`{"city":"Paris"}`)}}},
		user(exchange.Block{Type: exchange.BlockToolResult, ToolID: "c1", Content: []exchange.Block{txt("18C")}}),
		exchange.Message{Role: exchange.RoleAssistant, Content: []exchange.Block{
			{Type: exchange.BlockThinking, Text: "Anthropic's", Signature: "EqQBCkYIBxgC"},
			{Type: exchange.BlockRedactedThinking, Data: []byte("opaque")},
			{Type: exchange.BlockToolUse, ToolID: "c2", ToolName: "get_weather", Input: json.RawMessage(`{"city":"Oslo"}`)}}},
		user(exchange.Block{Type: exchange.BlockToolResult, ToolID: "c2", IsError: true, Content: []exchange.Block{txt("no such city")}}))
	body, _ = promptWire(t, p, okResponse)
	want := `{"contents":[{"role":"user","parts":[{"text":"Weather?"}]},` +
		`{"role":"model","parts":[{"text":"Let me look.","thought":true},{"functionCall":{"name":"get_weather","args":{"city":"Paris"}},"thoughtSignature":"` + sig + `"}]},` +
		`{"role":"user","parts":[{"functionResponse":{"name":"get_weather","response":{"result":"18C"}}}]},` +
		`{"role":"model","parts":[{"functionCall":{"name":"get_weather","args":{"city":"Oslo"}},"thoughtSignature":"skip_thought_signature_validator"}]},` +
		`{"role":"user","parts":[{"functionResponse":{"name":"get_weather","response":{"error":"no such city"}}}]}],` +
		`"generationConfig":{"thinkingConfig":{"includeThoughts":true,"thinkingBudget":2048}}}`
	if !jsonEqual(t, []byte(body), []byte(want)) {
		t.Errorf("wire body\n got %s\nwant %s", body, want)
	}
}

// TestNoSignatureEventsUnlessThinkingWasAsked: a client that asked for no
// thinking has no block to keep a signature in, and gets none.
func TestNoSignatureEventsUnlessThinkingWasAsked(t *testing.T) {
	answer := `{"candidates":[{"content":{"role":"model","parts":[{"text":"42","thoughtSignature":"c2ln"}]},"finishReason":"STOP","index":0}],"responseId":"r1"}`
	_, evs := promptWire(t, &exchange.Prompt{Messages: []exchange.Message{user(txt("?"))}}, answer)
	for _, ev := range evs {
		if ev.Kind == exchange.Signature {
			t.Fatalf("signature event %q", ev.Text)
		}
	}
}

// TestPromptMediaAndReasoning: images and documents travel as bytes
// (inlineData, base64 here only), a text document too; adaptive thinking
// is the dynamic budget; top_k is sent.
func TestPromptMediaAndReasoning(t *testing.T) {
	k := 20
	p := &exchange.Prompt{System: []exchange.Block{txt("Be brief.")}, Messages: []exchange.Message{user(txt("Read these."),
		exchange.Block{Type: exchange.BlockImage, MediaType: "image/png", Data: []byte{0x89, 'P', 'N', 'G'}},
		exchange.Block{Type: exchange.BlockDocument, MediaType: "text/plain", Data: []byte("plain notes"), FileName: "n.txt"},
		exchange.Block{Type: exchange.BlockDocument, MediaType: "application/pdf", Data: []byte("%PDF-1.7")})},
		Sampling: exchange.Sampling{TopK: &k}, Output: exchange.Output{Reasoning: exchange.ReasoningConfig{Mode: "adaptive"}}}
	body, _ := promptWire(t, p, okResponse)
	want := `{"systemInstruction":{"parts":[{"text":"Be brief."}]},"contents":[{"role":"user","parts":[{"text":"Read these."},` +
		`{"inlineData":{"mimeType":"image/png","data":"iVBORw=="}},{"inlineData":{"mimeType":"text/plain","data":"cGxhaW4gbm90ZXM="}},` +
		`{"inlineData":{"mimeType":"application/pdf","data":"JVBERi0xLjc="}}]}],` +
		`"generationConfig":{"topK":20,"thinkingConfig":{"includeThoughts":true,"thinkingBudget":-1}}}`
	if !jsonEqual(t, []byte(body), []byte(want)) {
		t.Errorf("wire body\n got %s\nwant %s", body, want)
	}
}

// TestPromptRefusals: what Gemini cannot carry is refused before any call,
// unless the route's translate_without lets it go without.
func TestPromptRefusals(t *testing.T) {
	hi := []exchange.Message{user(txt("Hi"))}
	for _, c := range []struct {
		name, key, param string
		p                *exchange.Prompt
	}{
		{"builtin tool", "server_tools", "tools[0]", &exchange.Prompt{Messages: hi, Tools: []exchange.Tool{{Kind: exchange.ToolBuiltin, Type: "web_search_20250305", Raw: json.RawMessage(`{}`)}}}},
		{"custom tool", "custom_tools", "tools[0]", &exchange.Prompt{Messages: hi, Tools: []exchange.Tool{{Kind: exchange.ToolCustom, Name: "apply_patch", Raw: json.RawMessage(`{}`)}}}},
		{"citations", "citations", "messages[0].content[1].citations", &exchange.Prompt{Messages: []exchange.Message{user(txt("Hi"),
			exchange.Block{Type: exchange.BlockDocument, MediaType: "application/pdf", Data: []byte("%PDF"), AskCitations: true})}}},
		{"no parallel calls", "parallel_tool_calls", "parallel_tool_calls", &exchange.Prompt{Messages: hi, ToolChoice: exchange.ToolChoice{NoParallel: true},
			Tools: []exchange.Tool{{Kind: exchange.ToolFunction, Name: "f"}}}},
	} {
		t.Run(c.name, func(t *testing.T) {
			f := newFakeAPI(t, serveJSON(200, okResponse))
			a := newTestAdapter(t, f)
			_, err := a.Send(context.Background(), promptCall(c.p))
			var ge *gwerr.Error
			if !errors.As(err, &ge) || ge.Code != provider.CodeUnsupportedFeature || ge.Param != c.param || len(f.requests()) != 0 {
				t.Fatalf("err = %v (param %q), want unsupported_feature on %q before any call", err, ge.Param, c.param)
			}
			call := promptCall(c.p)
			call.Req.Policy.TranslateWithout = []string{c.key}
			if _, err := a.Send(context.Background(), call); err != nil {
				t.Fatalf("with translate_without [%s]: %v", c.key, err)
			}
		})
	}
}
