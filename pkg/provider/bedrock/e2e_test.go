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

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"
	"github.com/openai/openai-go/v3/shared"

	"github.com/llmgw/llmgw/pkg/config"
	"github.com/llmgw/llmgw/pkg/server"
)

// gateway serves the real gateway handler with a route "chat" whose chain
// is bedrock provider br1, then br2, each pointed at a fake by its endpoint.
func gateway(t *testing.T, br1, br2 *fakeBedrock) (*httptest.Server, openai.Client) {
	t.Helper()
	awsEnv(t)
	cfg, err := config.Parse([]byte(`
providers:
  br1: {kind: bedrock, region: us-east-1, endpoint: "` + br1.srv.URL + `"}
  br2: {kind: bedrock, region: us-west-2, endpoint: "` + br2.srv.URL + `"}
routes:
  chat:
    attempts: 1
    targets:
      - {provider: br1, model: "` + model + `"}
      - {provider: br2, model: "amazon.nova-lite-v1:0"}
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
	client := openai.NewClient(option.WithBaseURL(srv.URL+"/v1/"), option.WithAPIKey("client-key"), option.WithMaxRetries(0))
	return srv, client
}

func weatherParams() openai.ChatCompletionNewParams {
	return openai.ChatCompletionNewParams{
		Model:    "chat",
		Messages: []openai.ChatCompletionMessageParamUnion{openai.UserMessage("Weather and time in Paris?")},
		Tools: []openai.ChatCompletionToolUnionParam{
			openai.ChatCompletionFunctionTool(shared.FunctionDefinitionParam{Name: "get_weather",
				Parameters: shared.FunctionParameters{"type": "object", "properties": map[string]any{"city": map[string]any{"type": "string"}}}}),
			openai.ChatCompletionFunctionTool(shared.FunctionDefinitionParam{Name: "get_time"}),
		},
		StreamOptions: openai.ChatCompletionStreamOptionsParam{IncludeUsage: openai.Bool(true)},
	}
}

// accumulate streams a request and reassembles it with the SDK's accumulator.
func accumulate(t *testing.T, client openai.Client, p openai.ChatCompletionNewParams) (openai.ChatCompletionAccumulator, error) {
	t.Helper()
	stream := client.Chat.Completions.NewStreaming(context.Background(), p)
	defer stream.Close()
	var acc openai.ChatCompletionAccumulator
	for stream.Next() {
		if !acc.AddChunk(stream.Current()) {
			t.Errorf("the accumulator rejected chunk %s", stream.Current().RawJSON())
		}
	}
	return acc, stream.Err()
}

// TestOpenAISDK drives the real gateway handler, routed to the bedrock
// adapter, with the official OpenAI Go SDK.
func TestOpenAISDK(t *testing.T) {
	t.Run("streamed_tool_calls", func(t *testing.T) {
		br1, br2 := newFake(t, reply{events: toolEvents()}), newFake(t, reply{body: okConverse})
		_, client := gateway(t, br1, br2)
		acc, err := accumulate(t, client, weatherParams())
		if err != nil {
			t.Fatal(err)
		}
		if len(acc.Choices) != 1 {
			t.Fatalf("choices %+v", acc.Choices)
		}
		c := acc.Choices[0]
		if c.Message.Content != "Let me check." || c.FinishReason != "tool_calls" {
			t.Errorf("content %q finish %q", c.Message.Content, c.FinishReason)
		}
		type call struct{ id, name, args string }
		var got []call
		for _, tc := range c.Message.ToolCalls {
			got = append(got, call{tc.ID, tc.Function.Name, tc.Function.Arguments})
		}
		want := []call{{"tooluse_A1", "get_weather", `{"city":"Paris"}`}, {"tooluse_B2", "get_time", `{"tz":"CET"}`}}
		if len(got) != 2 || got[0] != want[0] || got[1] != want[1] {
			t.Errorf("tool calls %+v, want %+v", got, want)
		}
		if acc.Usage.PromptTokens != 20 || acc.Usage.CompletionTokens != 30 {
			t.Errorf("usage %+v", acc.Usage)
		}
		reqs := br1.requests()
		if len(reqs) != 1 || reqs[0].path != streamPath(model) {
			t.Fatalf("bedrock requests %+v", reqs)
		}
		tools, _ := reqs[0].body["toolConfig"].(map[string]any)["tools"].([]any)
		if len(tools) != 2 {
			t.Errorf("toolConfig sent to bedrock: %s", reqs[0].raw)
		}
	})

	t.Run("streamed_and_whole_text", func(t *testing.T) {
		br1 := newFake(t, reply{events: concat(textEvents("Hello", ", world"), stopEvents("end_turn", 5, 3))}, reply{body: okConverse})
		_, client := gateway(t, br1, newFake(t, reply{body: okConverse}))
		acc, err := accumulate(t, client, openai.ChatCompletionNewParams{Model: "chat",
			Messages: []openai.ChatCompletionMessageParamUnion{openai.SystemMessage("Be kind."), openai.UserMessage("Hi")}})
		if err != nil {
			t.Fatal(err)
		}
		if got := acc.Choices[0].Message.Content; got != "Hello, world" || acc.Choices[0].FinishReason != "stop" {
			t.Errorf("content %q finish %q", got, acc.Choices[0].FinishReason)
		}
		res, err := client.Chat.Completions.New(context.Background(), openai.ChatCompletionNewParams{Model: "chat",
			Messages: []openai.ChatCompletionMessageParamUnion{openai.UserMessage("Hi")}})
		if err != nil {
			t.Fatal(err)
		}
		if res.Choices[0].Message.Content != "ok" || res.Model != model || !strings.HasPrefix(res.ID, "chatcmpl-") {
			t.Errorf("completion %+v", res)
		}
	})

	t.Run("midstream_model_error", func(t *testing.T) {
		br1 := newFake(t, reply{events: append(textEvents("This answer is cut"), exc("modelStreamErrorException", "model crashed"))})
		br2 := newFake(t, reply{events: concat(textEvents("never"), stopEvents("end_turn", 1, 1))})
		_, client := gateway(t, br1, br2)
		acc, err := accumulate(t, client, openai.ChatCompletionNewParams{Model: "chat",
			Messages: []openai.ChatCompletionMessageParamUnion{openai.UserMessage("Hi")}})
		// The Go SDK raises the gateway's in-band error event as an error
		// of its stream ("received error while streaming: {...}").
		if err == nil || !strings.Contains(err.Error(), `"category":"interrupted"`) {
			t.Fatalf("stream error = %v, want the gateway's interrupted error event (not a clean finish)", err)
		}
		if len(acc.Choices) > 0 && acc.Choices[0].FinishReason != "" {
			t.Errorf("the stream finished cleanly with %q", acc.Choices[0].FinishReason)
		}
		if n := len(br2.requests()); n != 0 {
			t.Errorf("fallback after the first token: br2 got %d requests", n)
		}
	})

	t.Run("throttled_before_stream_falls_back", func(t *testing.T) {
		br1 := newFake(t, reply{status: 429, errType: "ThrottlingException", body: `{"message":"Too many requests, please wait before trying again."}`})
		br2 := newFake(t, reply{events: concat(textEvents("from the fallback"), stopEvents("end_turn", 2, 3))})
		_, client := gateway(t, br1, br2)
		var resp *http.Response
		stream := client.Chat.Completions.NewStreaming(context.Background(), openai.ChatCompletionNewParams{Model: "chat",
			Messages: []openai.ChatCompletionMessageParamUnion{openai.UserMessage("Hi")}}, option.WithResponseInto(&resp))
		var acc openai.ChatCompletionAccumulator
		for stream.Next() {
			acc.AddChunk(stream.Current())
		}
		if err := stream.Err(); err != nil {
			t.Fatal(err)
		}
		stream.Close()
		if got := acc.Choices[0].Message.Content; got != "from the fallback" {
			t.Errorf("content %q", got)
		}
		if acc.Model != "amazon.nova-lite-v1:0" {
			t.Errorf("model %q, want the fallback's", acc.Model)
		}
		if resp == nil || resp.Header.Get("x-gateway-provider") != "br2" || resp.Header.Get("x-gateway-fallback-depth") != "1" {
			t.Errorf("gateway headers %v", resp.Header)
		}
		if n1, n2 := len(br1.requests()), len(br2.requests()); n1 != 1 || n2 != 1 {
			t.Errorf("requests br1 %d, br2 %d; want 1 and 1", n1, n2)
		}
	})

	t.Run("throttled_in_stream_before_content_falls_back", func(t *testing.T) {
		br1 := newFake(t, reply{events: []event{ev("messageStart", `{"role":"assistant"}`), exc("throttlingException", "Too many tokens")}})
		br2 := newFake(t, reply{events: concat(textEvents("second"), stopEvents("end_turn", 2, 1))})
		_, client := gateway(t, br1, br2)
		acc, err := accumulate(t, client, openai.ChatCompletionNewParams{Model: "chat",
			Messages: []openai.ChatCompletionMessageParamUnion{openai.UserMessage("Hi")}})
		if err != nil {
			t.Fatal(err)
		}
		if got := acc.Choices[0].Message.Content; got != "second" {
			t.Errorf("content %q, want the fallback's", got)
		}
	})

	t.Run("unsupported_feature_is_a_client_error", func(t *testing.T) {
		br1, br2 := newFake(t, reply{body: okConverse}), newFake(t, reply{body: okConverse})
		_, client := gateway(t, br1, br2)
		_, err := client.Chat.Completions.New(context.Background(), openai.ChatCompletionNewParams{Model: "chat", N: openai.Int(2),
			Messages: []openai.ChatCompletionMessageParamUnion{openai.UserMessage("Hi")}})
		var apiErr *openai.Error
		if !errors.As(err, &apiErr) || apiErr.StatusCode != 400 || !strings.Contains(apiErr.Message, "n>1") {
			t.Fatalf("err = %v, want a 400 naming n>1", err)
		}
		if n := len(br1.requests()) + len(br2.requests()); n != 0 {
			t.Errorf("%d bedrock calls for a refused request", n)
		}
	})
}
