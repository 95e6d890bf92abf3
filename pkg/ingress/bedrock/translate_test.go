package bedrock_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/bedrockruntime"
	"github.com/aws/aws-sdk-go-v2/service/bedrockruntime/document"
	"github.com/aws/aws-sdk-go-v2/service/bedrockruntime/types"

	"github.com/llmgw/llmgw/pkg/wire/bedrockwire"
)

// Bedrock-shaped requests to targets of other kinds are translated
// through the canonical Prompt: an OpenAI-compatible upstream (Chat
// Completions) and Bedrock itself (Converse, through the adapter), each
// the second target after a dead one.

// recorder keeps the bodies and paths an upstream received.
type recorder struct {
	mu     sync.Mutex
	paths  []string
	bodies []string
}

func (r *recorder) add(path string, body []byte) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.paths, r.bodies = append(r.paths, path), append(r.bodies, string(body))
}

func (r *recorder) last() (string, string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if len(r.paths) == 0 {
		return "", ""
	}
	return r.paths[len(r.paths)-1], r.bodies[len(r.bodies)-1]
}

// fakeOpenAI answers Chat Completions: a get_weather call when the request
// has tools, else "Hello from GPT"; streamed or whole.
func fakeOpenAI(t *testing.T, rec *recorder) *httptest.Server {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		rec.add(r.URL.Path, b)
		var req struct {
			Stream bool              `json:"stream"`
			Tools  []json.RawMessage `json:"tools"`
		}
		json.Unmarshal(b, &req)
		tool := len(req.Tools) > 0
		if !req.Stream {
			w.Header().Set("Content-Type", "application/json")
			msg, finish := `{"role":"assistant","content":"Hello from GPT"}`, "stop"
			if tool {
				msg, finish = `{"role":"assistant","content":null,"tool_calls":[{"id":"call_1","type":"function","function":{"name":"get_weather","arguments":"{\"city\":\"Paris\"}"}}]}`, "tool_calls"
			}
			fmt.Fprintf(w, `{"id":"chatcmpl-1","object":"chat.completion","created":1,"model":"gpt-x","choices":[{"index":0,"message":%s,"finish_reason":%q}],"usage":{"prompt_tokens":9,"completion_tokens":3,"total_tokens":12}}`, msg, finish)
			return
		}
		w.Header().Set("Content-Type", "text/event-stream")
		chunk := func(delta, finish string) {
			f := "null"
			if finish != "" {
				f = `"` + finish + `"`
			}
			fmt.Fprintf(w, "data: {\"id\":\"chatcmpl-1\",\"object\":\"chat.completion.chunk\",\"created\":1,\"model\":\"gpt-x\",\"choices\":[{\"index\":0,\"delta\":%s,\"finish_reason\":%s}]}\n\n", delta, f)
			w.(http.Flusher).Flush()
		}
		chunk(`{"role":"assistant","content":""}`, "")
		if tool {
			chunk(`{"tool_calls":[{"index":0,"id":"call_1","type":"function","function":{"name":"get_weather","arguments":""}}]}`, "")
			chunk(`{"tool_calls":[{"index":0,"function":{"arguments":"{\"city\":"}}]}`, "")
			chunk(`{"tool_calls":[{"index":0,"function":{"arguments":"\"Paris\"}"}}]}`, "")
			chunk(`{}`, "tool_calls")
		} else {
			chunk(`{"content":"Hello"}`, "")
			chunk(`{"content":" from GPT"}`, "")
			chunk(`{}`, "stop")
		}
		io.WriteString(w, "data: {\"id\":\"chatcmpl-1\",\"object\":\"chat.completion.chunk\",\"created\":1,\"model\":\"gpt-x\",\"choices\":[],\"usage\":{\"prompt_tokens\":9,\"completion_tokens\":3,\"total_tokens\":12}}\n\ndata: [DONE]\n\n")
	}))
	t.Cleanup(srv.Close)
	return srv
}

var weatherTools = &types.ToolConfiguration{Tools: []types.Tool{&types.ToolMemberToolSpec{Value: types.ToolSpecification{
	Name: aws.String("get_weather"), Description: aws.String("Weather of a city"),
	InputSchema: &types.ToolInputSchemaMemberJson{Value: document.NewLazyDocument(map[string]any{"type": "object",
		"properties": map[string]any{"city": map[string]any{"type": "string"}}})},
}}}}

func TestConverseToOpenAITarget(t *testing.T) {
	var rec recorder
	up := fakeOpenAI(t, &rec)
	g := gatewayWith(t, fmt.Sprintf("  live: {kind: openai, base_url: %q}\n", up.URL+"/v1"), "gpt-x")
	c := goClient(g, teamKey)
	ctx := context.Background()
	out, err := c.ConverseStream(ctx, &bedrockruntime.ConverseStreamInput{ModelId: aws.String("claude"),
		System:   []types.SystemContentBlock{&types.SystemContentBlockMemberText{Value: "Be brief."}},
		Messages: userText("Weather in Paris?"), ToolConfig: weatherTools})
	if err != nil {
		t.Fatalf("ConverseStream: %v", err)
	}
	var name, id, input string
	var stop types.StopReason
	for ev := range out.GetStream().Events() {
		switch v := ev.(type) {
		case *types.ConverseStreamOutputMemberContentBlockStart:
			tu := v.Value.Start.(*types.ContentBlockStartMemberToolUse).Value
			name, id = aws.ToString(tu.Name), aws.ToString(tu.ToolUseId)
		case *types.ConverseStreamOutputMemberContentBlockDelta:
			input += aws.ToString(v.Value.Delta.(*types.ContentBlockDeltaMemberToolUse).Value.Input)
		case *types.ConverseStreamOutputMemberMessageStop:
			stop = v.Value.StopReason
		}
	}
	if err := out.GetStream().Err(); err != nil {
		t.Fatal(err)
	}
	if name != "get_weather" || id != "call_1" || input != `{"city":"Paris"}` || stop != types.StopReasonToolUse {
		t.Errorf("tool call %q %q %q, stop %q", name, id, input, stop)
	}
	path, body := rec.last()
	var chat struct {
		Model    string
		Messages []struct{ Role, Content string }
		Tools    []struct{ Function struct{ Name string } }
	}
	json.Unmarshal([]byte(body), &chat)
	if path != "/v1/chat/completions" || chat.Model != "gpt-x" || len(chat.Messages) != 2 || chat.Messages[0].Role != "system" ||
		chat.Messages[1].Content != "Weather in Paris?" || len(chat.Tools) != 1 || chat.Tools[0].Function.Name != "get_weather" {
		t.Errorf("upstream %s got %s", path, body)
	}

	// The tool result goes back, non-streaming, and the answer is text.
	conv, err := c.Converse(ctx, &bedrockruntime.ConverseInput{ModelId: aws.String("claude"), Messages: []types.Message{
		{Role: types.ConversationRoleUser, Content: []types.ContentBlock{&types.ContentBlockMemberText{Value: "Weather in Paris?"}}},
		{Role: types.ConversationRoleAssistant, Content: []types.ContentBlock{&types.ContentBlockMemberToolUse{Value: types.ToolUseBlock{
			ToolUseId: aws.String("call_1"), Name: aws.String("get_weather"), Input: document.NewLazyDocument(map[string]any{"city": "Paris"})}}}},
		{Role: types.ConversationRoleUser, Content: []types.ContentBlock{&types.ContentBlockMemberToolResult{Value: types.ToolResultBlock{
			ToolUseId: aws.String("call_1"), Content: []types.ToolResultContentBlock{&types.ToolResultContentBlockMemberText{Value: "sunny"}}}}}},
	}})
	if err != nil {
		t.Fatalf("Converse: %v", err)
	}
	if got := conv.Output.(*types.ConverseOutputMemberMessage).Value.Content[0].(*types.ContentBlockMemberText).Value; got != "Hello from GPT" {
		t.Errorf("answer %q", got)
	}
	_, body = rec.last()
	if !strings.Contains(body, `"role":"tool"`) || !strings.Contains(body, `"tool_call_id":"call_1"`) || !strings.Contains(body, "sunny") {
		t.Errorf("tool result not sent as a tool message: %s", body)
	}
	for _, r := range g.records(t, 2) {
		if r.Provider != "live" || r.FallbackDepth != 1 || r.API != "converse" {
			t.Errorf("record %s %s depth %d", r.API, r.Provider, r.FallbackDepth)
		}
	}
}

func TestInvokeModelToOpenAITarget(t *testing.T) {
	var rec recorder
	up := fakeOpenAI(t, &rec)
	g := gatewayWith(t, fmt.Sprintf("  live: {kind: openai, base_url: %q}\n", up.URL+"/v1"), "gpt-x")
	out, err := goClient(g, teamKey).InvokeModel(context.Background(), &bedrockruntime.InvokeModelInput{
		ModelId: aws.String(profileID), Body: []byte(`{"anthropic_version":"bedrock-2023-05-31","max_tokens":64,"messages":[{"role":"user","content":"Say hello"}]}`)})
	if err != nil {
		t.Fatalf("InvokeModel: %v", err)
	}
	var msg struct {
		Type       string
		StopReason string `json:"stop_reason"`
		Content    []struct{ Type, Text string }
	}
	if err := json.Unmarshal(out.Body, &msg); err != nil || msg.Type != "message" || msg.StopReason != "end_turn" || msg.Content[0].Text != "Hello from GPT" {
		t.Errorf("body %s: %v", out.Body, err)
	}
	if _, body := rec.last(); !strings.Contains(body, `"max_tokens":64`) && !strings.Contains(body, `"max_completion_tokens":64`) {
		t.Errorf("upstream body %s", body)
	}
}

// fakeBedrock answers Converse (JSON) and ConverseStream (event-stream
// frames) as Bedrock Runtime does.
func fakeBedrock(t *testing.T, rec *recorder) *httptest.Server {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		rec.add(r.URL.EscapedPath(), b)
		_, op, _ := bedrockwire.ParsePath(r.URL.Path)
		u := bedrockwire.Usage{Input: 7, Output: 3}
		if op == bedrockwire.Converse {
			w.Header().Set("Content-Type", "application/json")
			w.Write(bedrockwire.AppendConverseResponse(nil, bedrockwire.AppendTextBlock(nil, "Hello from Nova"), "end_turn", u, 5))
			return
		}
		w.Header().Set("Content-Type", bedrockwire.EventStreamType)
		var f []byte
		f = bedrockwire.AppendEvent(f, bedrockwire.EventMessageStart, []byte(bedrockwire.MessageStartPayload))
		f = bedrockwire.AppendEvent(f, bedrockwire.EventContentBlockDelta, bedrockwire.AppendDelta(nil, 0, bedrockwire.DeltaText, "Hello"))
		f = bedrockwire.AppendEvent(f, bedrockwire.EventContentBlockDelta, bedrockwire.AppendDelta(nil, 0, bedrockwire.DeltaText, " from Nova"))
		f = bedrockwire.AppendEvent(f, bedrockwire.EventContentBlockStop, bedrockwire.AppendBlockStop(nil, 0))
		f = bedrockwire.AppendEvent(f, bedrockwire.EventMessageStop, bedrockwire.AppendMessageStop(nil, "end_turn"))
		f = bedrockwire.AppendEvent(f, bedrockwire.EventMetadata, bedrockwire.AppendMetadata(nil, u, 5))
		w.Write(f)
	}))
	t.Cleanup(srv.Close)
	return srv
}

func TestConverseToBedrockTarget(t *testing.T) {
	t.Setenv("AWS_ACCESS_KEY_ID", "AKIAIOSFODNN7EXAMPLE")
	t.Setenv("AWS_SECRET_ACCESS_KEY", "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY")
	t.Setenv("AWS_BEARER_TOKEN_BEDROCK", "")
	var rec recorder
	up := fakeBedrock(t, &rec)
	g := gatewayWith(t, fmt.Sprintf("  live: {kind: bedrock, region: us-east-1, endpoint: %q}\n", up.URL), "amazon.nova-pro-v1:0")
	c := goClient(g, teamKey)
	ctx := context.Background()
	out, err := c.Converse(ctx, &bedrockruntime.ConverseInput{ModelId: aws.String(profileID), Messages: userText("Say hello"),
		System:          []types.SystemContentBlock{&types.SystemContentBlockMemberText{Value: "Be brief."}},
		InferenceConfig: &types.InferenceConfiguration{MaxTokens: aws.Int32(50), StopSequences: []string{"END"}}})
	if err != nil {
		t.Fatalf("Converse: %v", err)
	}
	if got := out.Output.(*types.ConverseOutputMemberMessage).Value.Content[0].(*types.ContentBlockMemberText).Value; got != "Hello from Nova" {
		t.Errorf("answer %q", got)
	}
	path, body := rec.last()
	var sent bedrockwire.ConverseRequest
	json.Unmarshal([]byte(body), &sent)
	if path != "/model/amazon.nova-pro-v1%3A0/converse" || len(sent.System) != 1 || *sent.System[0].Text != "Be brief." ||
		*sent.InferenceConfig.MaxTokens != 50 || sent.InferenceConfig.StopSequences[0] != "END" || *sent.Messages[0].Content[0].Text != "Say hello" {
		t.Errorf("upstream %s got %s", path, body)
	}
	s, err := c.ConverseStream(ctx, &bedrockruntime.ConverseStreamInput{ModelId: aws.String("claude"), Messages: userText("Say hello")})
	if err != nil {
		t.Fatalf("ConverseStream: %v", err)
	}
	var text string
	for ev := range s.GetStream().Events() {
		if d, ok := ev.(*types.ConverseStreamOutputMemberContentBlockDelta); ok {
			text += d.Value.Delta.(*types.ContentBlockDeltaMemberText).Value
		}
	}
	if err := s.GetStream().Err(); err != nil || text != "Hello from Nova" {
		t.Errorf("stream %q: %v", text, err)
	}
	for _, r := range g.records(t, 2) {
		if r.Provider != "live" || r.FallbackDepth != 1 || r.OutputTokens != 3 {
			t.Errorf("record %s depth %d output %d", r.Provider, r.FallbackDepth, r.OutputTokens)
		}
	}
}
