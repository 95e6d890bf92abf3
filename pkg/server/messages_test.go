package server_test

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

// The Anthropic Messages ingress against an Anthropic upstream: passthrough.

func TestMessagesSDKStreamingPassthrough(t *testing.T) {
	up := newUpstream(t, anthropicOK)
	g := newGateway(t, msgRoute(t, "", "anthropic="+up.URL))
	var raw *http.Response
	client := g.anthropicSDK()
	stream := client.Messages.NewStreaming(context.Background(), anthropic.MessageNewParams{
		Model:     "claude",
		MaxTokens: 256,
		System:    []anthropic.TextBlockParam{{Text: "You are terse.", CacheControl: anthropic.NewCacheControlEphemeralParam()}},
		Messages: []anthropic.MessageParam{
			anthropic.NewUserMessage(anthropic.NewTextBlock("What is in this image?"), anthropic.NewImageBlockBase64("image/png", "iVBORw0KGgo=")),
			anthropic.NewAssistantMessage(anthropic.NewTextBlock("A square.")),
			anthropic.NewUserMessage(anthropic.NewTextBlock("And now?")),
		},
		StopSequences: []string{"END"},
		Metadata:      anthropic.MetadataParam{UserID: anthropic.String("user-7f3a")},
	}, aoption.WithHeader("anthropic-beta", "prompt-caching-2024-07-31,claude-code-20250219"), aoption.WithResponseInto(&raw))
	var m anthropic.Message
	for stream.Next() {
		if err := m.Accumulate(stream.Current()); err != nil {
			t.Fatal(err)
		}
	}
	if err := stream.Err(); err != nil {
		t.Fatalf("stream: %v", err)
	}
	if len(m.Content) != 1 || m.Content[0].Text != "Hello from Claude" || m.StopReason != "end_turn" {
		t.Errorf("message = %s", m.RawJSON())
	}
	if m.Usage.InputTokens != 25 || m.Usage.CacheReadInputTokens != 100 || m.Usage.CacheCreationInputTokens != 20 || m.Usage.OutputTokens != 15 {
		t.Errorf("usage = %+v", m.Usage)
	}
	if raw.Header.Get("x-gateway-provider") != "p0" || raw.Header.Get("Content-Type") != "text/event-stream; charset=utf-8" {
		t.Errorf("headers = %v", raw.Header)
	}
	var sent map[string]any
	json.Unmarshal(up.body(0), &sent)
	if sent["model"] != "up-model-0" || sent["stream"] != true || sent["metadata"].(map[string]any)["user_id"] != "user-7f3a" {
		t.Errorf("upstream body = %s", up.body(0))
	}
	for _, want := range []string{`"cache_control":{"type":"ephemeral"}`, `"stop_sequences":["END"]`, `"media_type":"image/png"`, `"A square."`} {
		if !strings.Contains(string(up.body(0)), want) {
			t.Errorf("upstream body lacks %s: %s", want, up.body(0))
		}
	}
	h := up.header(0)
	if h.Get("anthropic-beta") != "prompt-caching-2024-07-31,claude-code-20250219" || h.Get("anthropic-version") != "2026-10-21" { // the SDK's own version, unchanged
		t.Errorf("anthropic headers = %v", h)
	}
	if h.Get("x-api-key") != msgKey || strings.Contains(strings.Join(h.Values("Authorization"), ""), "client") {
		t.Errorf("upstream credentials: x-api-key %q authorization %q", h.Get("x-api-key"), h.Get("Authorization"))
	}
	rec := g.waitRecs(t, 1)[0]
	if rec.API != "messages" || rec.InputTokens != 145 || rec.CachedTokens != 100 || rec.CacheWriteTokens != 20 || rec.OutputTokens != 15 || rec.Outcome != "ok" {
		t.Errorf("record = %+v", rec)
	}
}

func TestMessagesSDKNonStreamingPassthrough(t *testing.T) {
	up := newUpstream(t, anthropicOK)
	g := newGateway(t, msgRoute(t, "", "anthropic="+up.URL))
	client := g.anthropicSDK()
	m, err := client.Messages.New(context.Background(), anthropic.MessageNewParams{
		Model: "claude", MaxTokens: 64, Messages: []anthropic.MessageParam{anthropic.NewUserMessage(anthropic.NewTextBlock("hi"))},
	})
	if err != nil {
		t.Fatal(err)
	}
	if m.ID != "msg_013Zva2CMHLNnXjNJJKqJ2EF" || m.Content[0].Text != "Hello from Claude" || m.Usage.CacheReadInputTokens != 1800 || m.Usage.OutputTokens != 503 {
		t.Errorf("message = %s", m.RawJSON())
	}
	if rec := g.waitRecs(t, 1)[0]; rec.InputTokens != 3895 || rec.CachedTokens != 1800 || rec.Stream {
		t.Errorf("record = %+v", rec)
	}
}

// claudeCodeBody is a request as Claude Code 2.1 sends it: beta fields and
// tool options the gateway does not know must reach Anthropic untouched.
const claudeCodeBody = `{"model":"claude","messages":[{"role":"user","content":[{"type":"text","text":"hi","cache_control":{"type":"ephemeral"}}]}],` +
	`"system":[{"type":"text","text":"You are Claude Code, Anthropic's official CLI for Claude.","cache_control":{"type":"ephemeral"}}],` +
	`"tools":[{"name":"Read","description":"Reads a file","input_schema":{"type":"object","properties":{"file_path":{"type":"string"}},"required":["file_path"]}},` +
	`{"name":"mcp__docs__search","description":"Search","input_schema":{"type":"object"},"defer_loading":true}],` +
	`"metadata":{"user_id":"user_3f2a_account__session_9c1e"},"max_tokens":32000,"thinking":{"type":"enabled","budget_tokens":31999},` +
	`"context_management":{"edits":[{"type":"clear_thinking_20251015","keep":"all"}]},"stream":true}`

func TestMessagesPassthroughIsByteIdenticalExceptModel(t *testing.T) {
	up := newUpstream(t, anthropicOK)
	g := newGateway(t, msgRoute(t, "", "anthropic="+up.URL))
	resp := g.postMessages(t, claudeCodeBody, "anthropic-beta", "claude-code-20250219,interleaved-thinking-2025-05-14,context-management-2025-06-27,advanced-tool-use-2025-11-20",
		"Authorization", "Bearer sk-client-token", "x-api-key", "sk-client-key")
	got := readAll(t, resp.Body)
	if resp.StatusCode != 200 {
		t.Fatalf("status %d: %s", resp.StatusCode, got)
	}
	if got != msgText("Hello", " from", " Claude") {
		t.Errorf("the client did not receive the upstream's frames byte for byte:\n%s", got)
	}
	want := strings.Replace(claudeCodeBody, `"model":"claude"`, `"model":"up-model-0"`, 1)
	if string(up.body(0)) != want {
		t.Errorf("upstream body\n got %s\nwant %s", up.body(0), want)
	}
	h := up.header(0)
	if h.Get("anthropic-beta") != "claude-code-20250219,interleaved-thinking-2025-05-14,context-management-2025-06-27,advanced-tool-use-2025-11-20" {
		t.Errorf("anthropic-beta = %q", h.Get("anthropic-beta"))
	}
	if h.Get("Authorization") != "" || h.Get("x-api-key") != msgKey {
		t.Errorf("client credentials reached the upstream: authorization %q x-api-key %q", h.Get("Authorization"), h.Get("x-api-key"))
	}
}

func TestMessagesSDKToolRoundTrip(t *testing.T) {
	up := newUpstream(t, func(w http.ResponseWriter, r *http.Request, body []byte, n int) {
		if n == 1 {
			sseFrames(w, msgStart("msg_tool", 400, 0, 0)+msgTextBlock(0, "Let me look.")+
				msgToolBlock(1, "toolu_01A09q90qw90lq917835lq9", "get_weather", `{"city": "Paris"}`)+msgEnd("tool_use", "", 40))
			return
		}
		sseFrames(w, msgText("It is 18C in Paris."))
	})
	g := newGateway(t, msgRoute(t, "", "anthropic="+up.URL))
	client := g.anthropicSDK()
	tools := []anthropic.ToolUnionParam{{OfTool: &anthropic.ToolParam{Name: "get_weather", Description: anthropic.String("Weather by city"),
		InputSchema: anthropic.ToolInputSchemaParam{Properties: map[string]any{"city": map[string]any{"type": "string"}}, Required: []string{"city"}}}}}
	msgs := []anthropic.MessageParam{anthropic.NewUserMessage(anthropic.NewTextBlock("Weather in Paris?"))}
	params := anthropic.MessageNewParams{Model: "claude", MaxTokens: 512, Messages: msgs, Tools: tools,
		ToolChoice: anthropic.ToolChoiceUnionParam{OfAny: &anthropic.ToolChoiceAnyParam{DisableParallelToolUse: anthropic.Bool(true)}}}
	first := accumulate(t, client.Messages.NewStreaming(context.Background(), params))
	if first.StopReason != "tool_use" || len(first.Content) != 2 || first.Content[1].Name != "get_weather" || string(first.Content[1].Input) != `{"city": "Paris"}` {
		t.Fatalf("first turn = %s", first.RawJSON())
	}
	params.Messages = append(msgs, first.ToParam(), anthropic.NewUserMessage(anthropic.NewToolResultBlock(first.Content[1].ID, "18C, sunny", false)))
	params.ToolChoice = anthropic.ToolChoiceUnionParam{OfAuto: &anthropic.ToolChoiceAutoParam{}}
	second := accumulate(t, client.Messages.NewStreaming(context.Background(), params))
	if second.Content[0].Text != "It is 18C in Paris." {
		t.Errorf("second turn = %s", second.RawJSON())
	}
	for _, want := range []string{`"tool_choice":{"disable_parallel_tool_use":true,"type":"any"}`, `"input_schema":{"properties":{"city":{"type":"string"}},"required":["city"],"type":"object"}`} {
		if !strings.Contains(string(up.body(0)), want) {
			t.Errorf("first upstream body lacks %s: %s", want, up.body(0))
		}
	}
	for _, want := range []string{`"id":"toolu_01A09q90qw90lq917835lq9","input":{"city":"Paris"},"name":"get_weather","type":"tool_use"`, `"tool_use_id":"toolu_01A09q90qw90lq917835lq9"`, `"18C, sunny"`} {
		if !strings.Contains(string(up.body(1)), want) {
			t.Errorf("second upstream body lacks %s: %s", want, up.body(1))
		}
	}
}

// accumulate reads a stream into a Message, failing the test on an error.
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

func TestMessagesSDKThinkingSignaturesRoundTrip(t *testing.T) {
	const sig = "EqQBCgIYAhIM1gbcDa9GJwZA2b3hGgxBdjrkzLoky3dl1pkiMOYds+/=="
	thinking := msgStart("msg_think", 40, 0, 0) +
		"event: content_block_start\ndata: {\"type\":\"content_block_start\",\"index\":0,\"content_block\":{\"type\":\"thinking\",\"thinking\":\"\",\"signature\":\"\"}}\n\n" +
		"event: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"index\":0,\"delta\":{\"type\":\"thinking_delta\",\"thinking\":\"27 * 453 = 12231\"}}\n\n" +
		"event: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"index\":0,\"delta\":{\"type\":\"signature_delta\",\"signature\":\"" + sig + "\"}}\n\n" +
		"event: content_block_stop\ndata: {\"type\":\"content_block_stop\",\"index\":0}\n\n" +
		"event: content_block_start\ndata: {\"type\":\"content_block_start\",\"index\":1,\"content_block\":{\"type\":\"redacted_thinking\",\"data\":\"EmwKAhgBEgy3va3pzix\"}}\n\n" +
		"event: content_block_stop\ndata: {\"type\":\"content_block_stop\",\"index\":1}\n\n" +
		msgTextBlock(2, "12,231") + msgEnd("end_turn", "", 60)
	up := newUpstream(t, func(w http.ResponseWriter, r *http.Request, body []byte, n int) { sseFrames(w, thinking) })
	g := newGateway(t, msgRoute(t, "", "anthropic="+up.URL))
	client := g.anthropicSDK()
	params := anthropic.MessageNewParams{Model: "claude", MaxTokens: 4096, Thinking: anthropic.ThinkingConfigParamOfEnabled(2048),
		Messages: []anthropic.MessageParam{anthropic.NewUserMessage(anthropic.NewTextBlock("27 * 453?"))}}
	m := accumulate(t, client.Messages.NewStreaming(context.Background(), params))
	if m.Content[0].Thinking != "27 * 453 = 12231" || m.Content[0].Signature != sig || m.Content[1].Data != "EmwKAhgBEgy3va3pzix" || m.Content[2].Text != "12,231" {
		t.Fatalf("message = %s", m.RawJSON())
	}
	params.Messages = append(params.Messages, m.ToParam(), anthropic.NewUserMessage(anthropic.NewTextBlock("Thanks")))
	accumulate(t, client.Messages.NewStreaming(context.Background(), params))
	for _, want := range []string{`"signature":"` + sig + `"`, `"data":"EmwKAhgBEgy3va3pzix"`, `"thinking":{"budget_tokens":2048,"type":"enabled"}`} {
		if !strings.Contains(string(up.body(1)), want) {
			t.Errorf("second upstream body lacks %s: %s", want, up.body(1))
		}
	}
}

func TestMessagesQueryStringAndUnknownEventsPassThrough(t *testing.T) {
	// An event type the gateway does not know is relayed as it came.
	stream := msgStart("msg_x", 5, 0, 0) + "event: content_block_start\ndata: {\"type\":\"content_block_start\",\"index\":0,\"content_block\":{\"type\":\"server_tool_use\",\"id\":\"srvtoolu_1\",\"name\":\"web_search\",\"input\":{}}}\n\n" +
		"event: future_event\ndata: {\"type\":\"future_event\",\"x\":1}\n\n" +
		"event: content_block_stop\ndata: {\"type\":\"content_block_stop\",\"index\":0}\n\n" + msgTextBlock(1, "done") + msgEnd("end_turn", "", 3)
	up := newUpstream(t, func(w http.ResponseWriter, r *http.Request, _ []byte, _ int) { sseFrames(w, stream) })
	g := newGateway(t, msgRoute(t, "", "anthropic="+up.URL))
	resp := g.postMessages(t, `{"model":"claude","max_tokens":9,"stream":true,"messages":[{"role":"user","content":"x"}]}`)
	if got, _ := io.ReadAll(resp.Body); resp.StatusCode != 200 || string(got) != stream {
		t.Errorf("status %d:\n%s", resp.StatusCode, got)
	}
}
