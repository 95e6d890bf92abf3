package bedrock_test

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	anthropic "github.com/anthropics/anthropic-sdk-go/v2"
	aoption "github.com/anthropics/anthropic-sdk-go/v2/option"

	"github.com/llmgw/llmgw/pkg/config"
	"github.com/llmgw/llmgw/pkg/server"
)

// An Anthropic Messages client (the official SDK) served by Bedrock
// through the gateway: at a model that is not Claude by Converse (the
// request translated from the canonical Prompt, the event stream back
// into Anthropic events), at Claude by InvokeModelWithResponseStream with
// its own body, Anthropic's events relayed.

// nova is a Bedrock model that is not Claude: Messages go to Converse.
const nova = "amazon.nova-pro-v1:0"

func messagesGateway(t *testing.T, f *fakeBedrock, model string) anthropic.Client {
	t.Helper()
	awsEnv(t)
	// Server tools are served unpriced here: these tests are about what
	// Bedrock can carry (pkg/server's fees_test.go prices them).
	cfg, err := config.Parse([]byte(`
server: {allow_unpriced_tools: true}
providers:
  br: {kind: bedrock, region: us-east-1, endpoint: "` + f.srv.URL + `"}
routes:
  claude:
    attempts: 1
    targets: [{provider: br, model: "` + model + `", max_tokens: 1024}]
`))
	if err != nil {
		t.Fatal(err)
	}
	h, err := server.New(context.Background(), cfg, server.Options{Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	return anthropic.NewClient(aoption.WithBaseURL(srv.URL+"/"), aoption.WithAPIKey("client-key"), aoption.WithMaxRetries(0))
}

func readMessage(t *testing.T, s interface {
	Next() bool
	Current() anthropic.MessageStreamEventUnion
	Err() error
}) (anthropic.Message, error) {
	t.Helper()
	var m anthropic.Message
	for s.Next() {
		if err := m.Accumulate(s.Current()); err != nil {
			t.Fatal(err)
		}
	}
	return m, s.Err()
}

func TestMessagesSDKOverBedrockConverse(t *testing.T) {
	f := newFake(t, reply{events: toolEvents()}, reply{events: concat(textEvents("It is ", "18C."), stopEvents("end_turn", 30, 5))},
		reply{body: `{"output":{"message":{"role":"assistant","content":[{"text":"Hi there"}]}},"stopReason":"end_turn","usage":{"inputTokens":12,"outputTokens":3,"totalTokens":15,"cacheReadInputTokens":4}}`})
	client := messagesGateway(t, f, nova)
	tools := []anthropic.ToolUnionParam{{OfTool: &anthropic.ToolParam{Name: "get_weather", InputSchema: anthropic.ToolInputSchemaParam{
		Properties: map[string]any{"city": map[string]any{"type": "string"}}}}}, {OfTool: &anthropic.ToolParam{Name: "get_time",
		InputSchema: anthropic.ToolInputSchemaParam{Properties: map[string]any{"tz": map[string]any{"type": "string"}}}}}}
	msgs := []anthropic.MessageParam{anthropic.NewUserMessage(anthropic.NewTextBlock("Weather and time in Paris?"))}
	params := anthropic.MessageNewParams{Model: "claude", MaxTokens: 512, System: []anthropic.TextBlockParam{{Text: "Be brief."}},
		Messages: msgs, Tools: tools, StopSequences: []string{"END"}}

	first, err := readMessage(t, client.Messages.NewStreaming(context.Background(), params))
	if err != nil {
		t.Fatal(err)
	}
	if len(first.Content) != 3 || first.Content[0].Text != "Let me check." ||
		first.Content[1].ID != "tooluse_A1" || string(first.Content[1].Input) != `{"city":"Paris"}` || first.Content[2].Name != "get_time" ||
		first.StopReason != "tool_use" || first.Usage.InputTokens != 20 || first.Usage.OutputTokens != 30 {
		t.Fatalf("first turn = %s", first.RawJSON())
	}
	req := f.requests()[0]
	if req.path != streamPath(nova) {
		t.Errorf("path %s", req.path)
	}
	if !strings.Contains(string(req.raw), `"system":[{"text":"Be brief."}]`) || !strings.Contains(string(req.raw), `"stopSequences":["END"]`) ||
		!strings.Contains(string(req.raw), `"maxTokens":512`) || !strings.Contains(string(req.raw), `"name":"get_weather"`) {
		t.Errorf("converse request = %s", req.raw)
	}

	// The whole turn goes back with the tool results.
	params.Messages = append(msgs, first.ToParam(), anthropic.NewUserMessage(anthropic.NewToolResultBlock("tooluse_A1", "18C", false),
		anthropic.NewToolResultBlock("tooluse_B2", "14:00", false)))
	// A second gateway (a second Bedrock SDK client): under -race the tests
	// keep one ConverseStream per SDK client (smithy-go shares one
	// event-stream codec between a client's stream readers; see
	// pkg/resilience oneBedrockStream).
	client2 := messagesGateway(t, f, nova)
	second, err := readMessage(t, client2.Messages.NewStreaming(context.Background(), params))
	if err != nil || second.Content[0].Text != "It is 18C." || second.StopReason != "end_turn" {
		t.Fatalf("second turn = %s, %v", second.RawJSON(), err)
	}
	if raw := string(f.requests()[1].raw); !strings.Contains(raw, `"toolResult":{"content":[{"text":"18C"}],"toolUseId":"tooluse_A1"}`) ||
		!strings.Contains(raw, `{"content":[{"text":"Let me check."},{"toolUse"`) {
		t.Errorf("second request = %s", raw)
	}

	whole, err := client.Messages.New(context.Background(), anthropic.MessageNewParams{Model: "claude", MaxTokens: 64, Messages: msgs})
	if err != nil || whole.Content[0].Text != "Hi there" || whole.Usage.InputTokens != 12 || whole.Usage.CacheReadInputTokens != 4 || whole.StopReason != "end_turn" {
		t.Errorf("non-streaming = %v, %v", whole, err)
	}
}

// Claude on Bedrock through the gateway: the SDK gets Anthropic's events,
// its thinking with Bedrock's signature, and the next turn sends it back
// byte for byte; without streaming, InvokeModel's message.
func TestMessagesSDKOverClaudeOnBedrockInvoke(t *testing.T) {
	f := newFake(t, reply{events: claudeChunks()}, reply{events: claudeChunks()},
		reply{body: `{"id":"msg_bdrk_03","type":"message","role":"assistant","model":"claude-sonnet-4-5-20250929","content":[{"type":"text","text":"Hi there"}],"stop_reason":"end_turn","stop_sequence":null,"usage":{"input_tokens":12,"cache_read_input_tokens":4,"output_tokens":3}}`})
	client := messagesGateway(t, f, model)
	msgs := []anthropic.MessageParam{anthropic.NewUserMessage(anthropic.NewTextBlock("Read a.go?"))}
	params := anthropic.MessageNewParams{Model: "claude", MaxTokens: 512, Messages: msgs,
		Thinking: anthropic.ThinkingConfigParamUnion{OfAdaptive: &anthropic.ThinkingConfigAdaptiveParam{}}}
	first, err := readMessage(t, client.Messages.NewStreaming(context.Background(), params))
	if err != nil {
		t.Fatal(err)
	}
	if len(first.Content) != 3 || first.Content[2].Name != "Read" || string(first.Content[2].Input) != `{"path":"b.go"}` || first.Content[0].Thinking != "Look at a.go." || first.Content[0].Signature != "EqQBCkYIBxgCKkB+bedrock/sig==" ||
		first.Content[1].Text != "Hello from Bedrock" || first.StopReason != "end_turn" || first.Usage.CacheReadInputTokens != 2000 || first.Usage.OutputTokens != 25 {
		t.Fatalf("first turn = %s", first.RawJSON())
	}
	params.Messages = append(msgs, first.ToParam(), anthropic.NewUserMessage(anthropic.NewToolResultBlock("toolu_bdrk_01", "package b", false)))
	client2 := messagesGateway(t, f, model)
	if _, err := readMessage(t, client2.Messages.NewStreaming(context.Background(), params)); err != nil {
		t.Fatal(err)
	}
	r := f.requests()[1]
	if !strings.HasSuffix(r.path, "/invoke-with-response-stream") ||
		!strings.Contains(string(r.raw), `{"signature":"EqQBCkYIBxgCKkB+bedrock/sig==","thinking":"Look at a.go.","type":"thinking"}`) {
		t.Errorf("second request %s %s", r.path, r.raw)
	}
	whole, err := client.Messages.New(context.Background(), anthropic.MessageNewParams{Model: "claude", MaxTokens: 64, Messages: msgs})
	if err != nil || whole.Content[0].Text != "Hi there" || whole.Usage.CacheReadInputTokens != 4 || !strings.HasSuffix(f.requests()[2].path, "/invoke") {
		t.Errorf("non-streaming = %v, %v", whole, err)
	}
}

func TestMessagesOverBedrockMidStreamException(t *testing.T) {
	f := newFake(t, reply{events: []event{chunk(evStart), chunk(`{"type":"content_block_start","index":0,"content_block":{"type":"text","text":""}}`),
		chunk(`{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"Half an ans"}}`), exc("modelStreamErrorException", "model failed")}})
	client := messagesGateway(t, f, model)
	_, err := readMessage(t, client.Messages.NewStreaming(context.Background(), anthropic.MessageNewParams{Model: "claude", MaxTokens: 64,
		Messages: []anthropic.MessageParam{anthropic.NewUserMessage(anthropic.NewTextBlock("hi"))}}))
	var ae *anthropic.Error
	if !errors.As(err, &ae) || ae.Type() != "api_error" || !strings.Contains(ae.RawJSON(), `"category":"interrupted"`) {
		t.Errorf("err = %v", err)
	}
}

// A Messages feature Bedrock does not offer (a server tool) keeps the
// request from Bedrock: refused before any call.
func TestMessagesOverBedrockRefusesWhatBedrockCannotGet(t *testing.T) {
	f := newFake(t, reply{events: concat(textEvents("x"), stopEvents("end_turn", 1, 1))})
	client := messagesGateway(t, f, model)
	_, err := client.Messages.New(context.Background(), anthropic.MessageNewParams{Model: "claude", MaxTokens: 4096,
		Tools:    []anthropic.ToolUnionParam{{OfWebSearchTool20250305: &anthropic.WebSearchTool20250305Param{}}},
		Messages: []anthropic.MessageParam{anthropic.NewUserMessage(anthropic.NewTextBlock("hi"))}})
	var ae *anthropic.Error
	if !errors.As(err, &ae) || ae.StatusCode != http.StatusBadRequest || !strings.Contains(ae.RawJSON(), `"code":"unsupported_feature"`) ||
		!strings.Contains(ae.RawJSON(), "the web_search_20250305 tool") || len(f.requests()) != 0 {
		t.Errorf("err = %v, %d bedrock calls", err, len(f.requests()))
	}
}
