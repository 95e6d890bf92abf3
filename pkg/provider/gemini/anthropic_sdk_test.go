package gemini_test

// The official Anthropic Go SDK through the gateway's Messages ingress to
// a Gemini target: the adapter's canonical events reach a Messages client
// as Anthropic's own events.

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"

	anthropic "github.com/anthropics/anthropic-sdk-go/v2"
	aoption "github.com/anthropics/anthropic-sdk-go/v2/option"
)

func (g *gateway) anthropicSDK() anthropic.Client {
	return anthropic.NewClient(aoption.WithBaseURL(g.URL+"/"), aoption.WithAPIKey("sk-ant-client"), aoption.WithMaxRetries(0))
}

// accumulate reads a Messages stream into a Message.
func accumulate(t *testing.T, s interface {
	Next() bool
	Current() anthropic.MessageStreamEventUnion
	Err() error
}) anthropic.Message {
	t.Helper()
	var m anthropic.Message
	for s.Next() {
		if err := m.Accumulate(s.Current()); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.Err(); err != nil {
		t.Fatalf("stream: %v", err)
	}
	return m
}

// TestAnthropicSDKToolRoundTripOverGemini: streamed parallel function
// calls become tool_use blocks; the client's tool_result blocks reach
// Gemini as functionResponse parts named after the calls.
func TestAnthropicSDKToolRoundTripOverGemini(t *testing.T) {
	var up *upstream
	up = newUpstream(t, func(w http.ResponseWriter, r *http.Request) {
		if up.hits.Load() == 1 {
			sse(fixture(t, "tool_calls.sse"))(w, r)
			return
		}
		sse(fixture(t, "text.sse"))(w, r)
	})
	g := newGateway(t, up.URL)
	client := g.anthropicSDK()
	tools := []anthropic.ToolUnionParam{{OfTool: &anthropic.ToolParam{Name: "get_weather",
		InputSchema: anthropic.ToolInputSchemaParam{Properties: map[string]any{"location": map[string]any{"type": "string"}, "unit": map[string]any{"type": "string"}}, Required: []string{"location"}}}}}
	msgs := []anthropic.MessageParam{anthropic.NewUserMessage(anthropic.NewTextBlock("Weather in Paris and Oslo?"))}
	params := anthropic.MessageNewParams{Model: "m", MaxTokens: 512, Messages: msgs, Tools: tools,
		System: []anthropic.TextBlockParam{{Text: "Be brief."}}}
	first := accumulate(t, client.Messages.NewStreaming(context.Background(), params))
	if first.StopReason != "tool_use" || len(first.Content) != 3 || first.Content[0].Text != "Checking both cities." ||
		first.Content[1].Name != "get_weather" || string(first.Content[1].Input) != `{"location":"Paris"}` ||
		string(first.Content[2].Input) != `{"location":"Oslo","unit":"celsius"}` || first.Content[1].ID == first.Content[2].ID {
		t.Fatalf("first turn = %s", first.RawJSON())
	}
	if first.Usage.InputTokens != 64 || first.Usage.OutputTokens != 30 {
		t.Errorf("usage = %+v", first.Usage)
	}
	params.Messages = append(msgs, first.ToParam(), anthropic.NewUserMessage(
		anthropic.NewToolResultBlock(first.Content[1].ID, "18C", false), anthropic.NewToolResultBlock(first.Content[2].ID, "4C", false)))
	reply := accumulate(t, client.Messages.NewStreaming(context.Background(), params))
	if reply.Content[0].Text != "Hello, \"world\"\n\tcafé 😀!" || reply.StopReason != "end_turn" {
		t.Errorf("second turn = %s", reply.RawJSON())
	}
	if reply.Usage.CacheReadInputTokens != 1800 || reply.Usage.InputTokens+reply.Usage.CacheReadInputTokens != 2012 {
		t.Errorf("cached usage = %+v", reply.Usage)
	}
	var sent struct {
		SystemInstruction json.RawMessage `json:"systemInstruction"`
		Contents          []struct {
			Role  string            `json:"role"`
			Parts []json.RawMessage `json:"parts"`
		} `json:"contents"`
	}
	if err := json.Unmarshal(up.body(1), &sent); err != nil || len(sent.Contents) != 3 {
		t.Fatalf("second request: %s", up.body(1))
	}
	if string(sent.SystemInstruction) != `{"parts":[{"text":"Be brief."}]}` || sent.Contents[1].Role != "model" || len(sent.Contents[1].Parts) != 3 {
		t.Errorf("second request: %s", up.body(1))
	}
	if u := sent.Contents[2]; u.Role != "user" || len(u.Parts) != 2 ||
		string(u.Parts[0]) != `{"functionResponse":{"name":"get_weather","response":{"result":"18C"}}}` {
		t.Errorf("tool results sent as %s", up.body(1))
	}
}

// TestAnthropicSDKNonStreamingOverGemini: a whole generateContent answer
// is one Anthropic Message.
func TestAnthropicSDKNonStreamingOverGemini(t *testing.T) {
	up := newUpstream(t, jsonReply(200, `{"candidates":[{"content":{"parts":[{"text":"Bonjour"}],"role":"model"},"finishReason":"MAX_TOKENS","index":0}],
		"usageMetadata":{"promptTokenCount":7,"candidatesTokenCount":2,"totalTokenCount":9},"modelVersion":"gemini-2.5-flash","responseId":"ns1"}`))
	g := newGateway(t, up.URL)
	client := g.anthropicSDK()
	msg, err := client.Messages.New(context.Background(), anthropic.MessageNewParams{Model: "m", MaxTokens: 2,
		Messages: []anthropic.MessageParam{anthropic.NewUserMessage(anthropic.NewTextBlock("hi"))}})
	if err != nil {
		t.Fatal(err)
	}
	if msg.Content[0].Text != "Bonjour" || msg.StopReason != "max_tokens" || msg.Usage.InputTokens != 7 || msg.Usage.OutputTokens != 2 {
		t.Errorf("message = %s", msg.RawJSON())
	}
	if b := string(up.body(0)); !strings.Contains(b, `"maxOutputTokens":2`) {
		t.Errorf("upstream body = %s", b)
	}
}

// postMessages sends a raw Messages request to the gateway.
func (g *gateway) postMessages(t *testing.T, body string) (*http.Response, string) {
	t.Helper()
	req, _ := http.NewRequest(http.MethodPost, g.URL+"/v1/messages", strings.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("anthropic-version", "2023-06-01")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var b strings.Builder
	_, _ = io.Copy(&b, resp.Body)
	return resp, b.String()
}

// TestAnthropicSDKFeaturesCarriedOverGemini: what the Messages ingress's
// Prompt carries reaches Gemini (the thinking budget, top_k, a failed tool
// result as an error response); what it cannot hold (a server tool) is
// refused naming the feature and the target, with no upstream call.
func TestAnthropicSDKFeaturesCarriedOverGemini(t *testing.T) {
	const user = `"messages":[{"role":"user","content":"x"}]`
	for name, c := range map[string]struct{ body, want string }{
		"thinking": {`{"model":"m","max_tokens":9,"stream":true,"thinking":{"type":"enabled","budget_tokens":2048},` + user + `}`, `"thinkingConfig":{"includeThoughts":true,"thinkingBudget":2048}`},
		"top_k":    {`{"model":"m","max_tokens":9,"stream":true,"top_k":40,` + user + `}`, `"topK":40`},
		"is_error": {`{"model":"m","max_tokens":9,"stream":true,"tools":[{"name":"b","input_schema":{"type":"object"}}],"messages":[{"role":"user","content":"x"},{"role":"assistant","content":[{"type":"tool_use","id":"a","name":"b","input":{}}]},{"role":"user","content":[{"type":"tool_result","tool_use_id":"a","content":"boom","is_error":true}]}]}`, `"response":{"error":"boom"}`},
	} {
		t.Run(name, func(t *testing.T) {
			up := newUpstream(t, sse(fixture(t, "text.sse")))
			g := newGateway(t, up.URL)
			resp, body := g.postMessages(t, c.body)
			if resp.StatusCode != 200 || up.hits.Load() != 1 || !strings.Contains(string(up.body(0)), c.want) {
				t.Errorf("%d %s; upstream got %s", resp.StatusCode, body, up.body(0))
			}
		})
	}
	t.Run("server_tool", func(t *testing.T) {
		up := newUpstream(t, sse(fixture(t, "text.sse")))
		g := newGateway(t, up.URL)
		resp, body := g.postMessages(t, `{"model":"m","max_tokens":9,"tools":[{"type":"web_search_20250305","name":"web_search"}],`+user+`}`)
		if resp.StatusCode != 400 || !strings.Contains(body, `"type":"invalid_request_error"`) || !strings.Contains(body, "unsupported_feature") ||
			!strings.Contains(body, "g0/gemini-test-0") || up.hits.Load() != 0 {
			t.Errorf("%d %s, %d upstream calls", resp.StatusCode, body, up.hits.Load())
		}
	})
}

// TestAnthropicSDKMidStreamCutOverGemini: a Gemini stream cut before its
// finishReason reaches the Anthropic SDK as an error, never a clean end.
func TestAnthropicSDKMidStreamCutOverGemini(t *testing.T) {
	up := newUpstream(t, sse(fixture(t, "cut.sse")))
	g := newGateway(t, up.URL)
	client := g.anthropicSDK()
	s := client.Messages.NewStreaming(context.Background(), anthropic.MessageNewParams{Model: "m", MaxTokens: 64,
		Messages: []anthropic.MessageParam{anthropic.NewUserMessage(anthropic.NewTextBlock("a story"))}})
	var m anthropic.Message
	for s.Next() {
		_ = m.Accumulate(s.Current())
	}
	if err := s.Err(); err == nil || !strings.Contains(err.Error(), "interrupted") {
		t.Fatalf("err = %v (message %s), want the interrupted error event", err, m.RawJSON())
	}
	if len(m.Content) != 1 || m.Content[0].Text != "Once upon a time" || m.StopReason != "" {
		t.Errorf("before the cut: %s", m.RawJSON())
	}
}

// TestAnthropicSDKDocumentOverGemini: a base64 PDF document block reaches
// Gemini as inline data; stop_sequences as stopSequences.
func TestAnthropicSDKDocumentOverGemini(t *testing.T) {
	up := newUpstream(t, sse(fixture(t, "text.sse")))
	g := newGateway(t, up.URL)
	resp, body := g.postMessages(t, `{"model":"m","max_tokens":64,"stream":true,"stop_sequences":["END"],"messages":[{"role":"user","content":[`+
		`{"type":"document","source":{"type":"base64","media_type":"application/pdf","data":"JVBERi0="}},{"type":"text","text":"Summarise."}]}]}`)
	if resp.StatusCode != 200 || !strings.Contains(body, "event: message_stop") {
		t.Fatalf("%d %s", resp.StatusCode, body)
	}
	sent := string(up.body(0))
	for _, want := range []string{`{"inlineData":{"mimeType":"application/pdf","data":"JVBERi0="}}`, `"stopSequences":["END"]`, `"maxOutputTokens":64`} {
		if !strings.Contains(sent, want) {
			t.Errorf("upstream body lacks %s: %s", want, sent)
		}
	}
}
