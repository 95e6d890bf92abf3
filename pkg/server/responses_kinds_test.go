package server_test

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"testing"

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"
	"github.com/openai/openai-go/v3/responses"
	"github.com/tidwall/gjson"

	"github.com/llmgw/llmgw/pkg/exchange"
	"github.com/llmgw/llmgw/pkg/server"
)

// Responses clients served by the translating provider kinds.

// anthropicThinkingReply streams extended thinking, its signature, then text.
func anthropicThinkingReply(w http.ResponseWriter) {
	w.Header().Set("Content-Type", "text/event-stream; charset=utf-8")
	for _, e := range []string{
		`event: message_start` + "\n" + `data: {"type":"message_start","message":{"id":"msg_01","type":"message","role":"assistant","content":[],"model":"claude-sonnet-4-5-20250929","stop_reason":null,"stop_sequence":null,"usage":{"input_tokens":40,"cache_creation_input_tokens":0,"cache_read_input_tokens":10,"output_tokens":1}}}`,
		`event: content_block_start` + "\n" + `data: {"type":"content_block_start","index":0,"content_block":{"type":"thinking","thinking":"","signature":""}}`,
		`event: content_block_delta` + "\n" + `data: {"type":"content_block_delta","index":0,"delta":{"type":"thinking_delta","thinking":"Paris is in "}}`,
		`event: content_block_delta` + "\n" + `data: {"type":"content_block_delta","index":0,"delta":{"type":"thinking_delta","thinking":"France."}}`,
		`event: content_block_delta` + "\n" + `data: {"type":"content_block_delta","index":0,"delta":{"type":"signature_delta","signature":"EqQBCgIYAhIM"}}`,
		`event: content_block_stop` + "\n" + `data: {"type":"content_block_stop","index":0}`,
		`event: content_block_start` + "\n" + `data: {"type":"content_block_start","index":1,"content_block":{"type":"text","text":""}}`,
		`event: content_block_delta` + "\n" + `data: {"type":"content_block_delta","index":1,"delta":{"type":"text_delta","text":"France"}}`,
		`event: content_block_stop` + "\n" + `data: {"type":"content_block_stop","index":1}`,
		`event: message_delta` + "\n" + `data: {"type":"message_delta","delta":{"stop_reason":"end_turn","stop_sequence":null},"usage":{"output_tokens":12}}`,
		`event: message_stop` + "\n" + `data: {"type":"message_stop"}`,
	} {
		io.WriteString(w, e+"\n\n")
	}
}

func kindsGateway(t *testing.T, anth, bed string, opts ...func(*server.Options)) *gateway {
	t.Setenv("AWS_ACCESS_KEY_ID", "AKIDTEST")
	t.Setenv("AWS_SECRET_ACCESS_KEY", "secret")
	t.Setenv("AWS_REGION", "us-east-1")
	t.Setenv("ANTHROPIC_TEST_KEY", "sk-ant-test-key-0000000000")
	// Built-in tools are served unpriced: these tests are about which
	// targets can carry them (fees_test.go prices them).
	return newGateway(t, fastPolicy+fmt.Sprintf(`
server: {allow_unpriced_tools: true}
providers:
  anthropic: {kind: anthropic, base_url: %q, keys: [{env: ANTHROPIC_TEST_KEY}]}
  bedrock:   {kind: bedrock, region: us-east-1, endpoint: %q}
routes:
  claude:  {targets: [{provider: anthropic, model: claude-sonnet-4-5}]}
  bedrock: {targets: [{provider: bedrock, model: "us.anthropic.claude-sonnet-4-5-20250929-v1:0"}]}
`, anth, bed), opts...)
}

// TestResponsesTranslatedToAnthropicAndBedrock: a function tool call from
// each translating kind arrives as the same golden lifecycle with the full
// arguments, and each upstream got its own native request.
func TestResponsesTranslatedToAnthropicAndBedrock(t *testing.T) {
	anth := newUpstream(t, func(w http.ResponseWriter, r *http.Request, _ []byte, _ int) { anthropicToolCall(w) })
	bed := newUpstream(t, func(w http.ResponseWriter, r *http.Request, _ []byte, _ int) { bedrockToolCall(w) })
	g := kindsGateway(t, anth.URL, bed.URL)
	client := g.sdk()
	for _, route := range []string{"claude", "bedrock"} {
		t.Run(route, func(t *testing.T) {
			var raw *http.Response
			evs, err := respEvents(client.Responses.NewStreaming(context.Background(), responses.ResponseNewParams{
				Model:        route,
				Instructions: openai.String("Use tools."),
				Input:        responses.ResponseNewParamsInputUnion{OfString: openai.String("weather in Paris?")},
				Tools:        []responses.ToolUnionParam{weatherTool()},
			}, option.WithResponseInto(&raw)))
			if err != nil {
				t.Fatalf("stream error: %v", err)
			}
			sameList(t, "events", seqTypes(evs), numbered(goldenToolCall))
			done := evs[len(evs)-2].AsResponseOutputItemDone().Item
			if done.Type != "function_call" || done.Name != "get_weather" || done.Arguments.OfString != `{"city": "Paris"}` || done.CallID == "" {
				t.Errorf("function call item: %s", done.RawJSON())
			}
			u := evs[len(evs)-1].AsResponseCompleted().Response.Usage
			if u.InputTokens != 472 || u.OutputTokens != 89 || raw.Header.Get("x-gateway-provider") != map[string]string{"claude": "anthropic", "bedrock": "bedrock"}[route] {
				t.Errorf("usage %+v, provider %q", u, raw.Header.Get("x-gateway-provider"))
			}
		})
	}
	a := anth.body(0)
	if gjson.GetBytes(a, "tools.0.name").Str != "get_weather" || !gjson.GetBytes(a, "tools.0.input_schema").IsObject() ||
		!bytes.Contains(a, []byte("Use tools.")) || gjson.GetBytes(a, "messages.0.role").Str != "user" || !gjson.GetBytes(a, "stream").Bool() {
		t.Errorf("anthropic request: %s", a)
	}
	b := bed.body(0)
	if gjson.GetBytes(b, "toolConfig.tools.0.toolSpec.name").Str != "get_weather" || gjson.GetBytes(b, "system.0.text").Str != "Use tools." {
		t.Errorf("bedrock request: %s", b)
	}
}

// TestResponsesAnthropicThinkingBecomesAReasoningItem: extended thinking
// arrives as a reasoning item with its summary text, before the message.
func TestResponsesAnthropicThinkingBecomesAReasoningItem(t *testing.T) {
	anth := newUpstream(t, func(w http.ResponseWriter, r *http.Request, _ []byte, _ int) { anthropicThinkingReply(w) })
	g := kindsGateway(t, anth.URL, "http://127.0.0.1:1")
	client := g.sdk()
	evs, err := respEvents(client.Responses.NewStreaming(context.Background(), responses.ResponseNewParams{
		Model: "claude", Input: responses.ResponseNewParamsInputUnion{OfString: openai.String("capital?")}}))
	if err != nil {
		t.Fatalf("stream error: %v", err)
	}
	sameList(t, "events", seqTypes(evs), numbered("response.created response.in_progress response.output_item.added "+
		"response.reasoning_summary_part.added response.reasoning_summary_text.delta response.reasoning_summary_text.delta "+
		"response.reasoning_summary_text.done response.reasoning_summary_part.done response.output_item.done "+
		"response.output_item.added response.content_part.added response.output_text.delta response.output_text.done "+
		"response.content_part.done response.output_item.done response.completed"))
	r := evs[len(evs)-1].AsResponseCompleted().Response
	if r.Output[0].Type != "reasoning" || r.Output[0].Summary[0].Text != "Paris is in France." || r.OutputText() != "France" ||
		r.Usage.InputTokensDetails.CachedTokens != 10 {
		t.Errorf("completed: %s", evs[len(evs)-1].RawJSON())
	}
}

// TestResponsesAdmittedOutputCap: the limiter's admitted cap reaches a
// native Responses upstream as max_output_tokens (added byte-level) and a
// chat upstream as its max tokens field.
func TestResponsesAdmittedOutputCap(t *testing.T) {
	native := newUpstream(t, nativeHandler(nativeFrames))
	chatOnly := newUpstream(t, okHandler)
	g := newGateway(t, responsesRoute([2]string{"native", native.URL}), func(o *server.Options) {
		o.Admit = func(_ context.Context, a *exchange.Request) (exchange.Settle, error) {
			if a.Prompt.Sampling.MaxTokens == 0 {
				a.OutputCap = 77
			}
			return nil, nil
		}
	})
	readAll(t, postTo(t, g.URL+"/v1/responses", `{"model":"m","input":"hi"}`).Body)
	readAll(t, postTo(t, g.URL+"/v1/responses", `{"model":"m","input":"hi","max_output_tokens":12}`).Body)
	if string(native.body(0)) != `{"model":"up-model-0","input":"hi","max_output_tokens":77}` ||
		string(native.body(1)) != `{"model":"up-model-0","input":"hi","max_output_tokens":12}` {
		t.Errorf("native got %s and %s", native.body(0), native.body(1))
	}
	g2 := newGateway(t, responsesRoute([2]string{"chat", chatOnly.URL}), func(o *server.Options) {
		o.Admit = func(_ context.Context, a *exchange.Request) (exchange.Settle, error) {
			a.OutputCap = 77
			return nil, nil
		}
	})
	readAll(t, postTo(t, g2.URL+"/v1/responses", `{"model":"m","input":"hi"}`).Body)
	if !bytes.HasSuffix(chatOnly.body(0), []byte(`,"max_tokens":77}`)) {
		t.Errorf("chat upstream got %s", chatOnly.body(0))
	}
}

// TestResponsesNativeOnlyRefusedByEveryTranslatingKind: Anthropic and
// Bedrock targets cannot serve built-in tools or stored conversations: the
// client gets a 400 naming the feature and the target, and neither
// upstream is called.
func TestResponsesNativeOnlyRefusedByEveryTranslatingKind(t *testing.T) {
	anth := newUpstream(t, func(w http.ResponseWriter, r *http.Request, _ []byte, _ int) { anthropicToolCall(w) })
	bed := newUpstream(t, func(w http.ResponseWriter, r *http.Request, _ []byte, _ int) { bedrockToolCall(w) })
	g := kindsGateway(t, anth.URL, bed.URL)
	for _, tc := range []struct{ route, body, says string }{
		{"claude", `{"model":"claude","input":"hi","tools":[{"type":"web_search"}]}`, "the web_search tool is not supported by target anthropic/claude-sonnet-4-5"},
		{"bedrock", `{"model":"bedrock","input":"hi","tools":[{"type":"file_search","vector_store_ids":["vs_1"]}]}`, "the file_search tool is not supported by target bedrock/"},
		{"claude", `{"model":"claude","input":"hi","previous_response_id":"resp_1"}`, "the gateway does not store conversations"},
		{"bedrock", `{"model":"bedrock","input":"hi","conversation":{"id":"conv_1"}}`, "the gateway does not store conversations"},
		{"claude", `{"model":"claude","input":"hi","background":true}`, "background"},
		{"bedrock", `{"model":"bedrock","input":"hi","background":true}`, "background"},
	} {
		r := postTo(t, g.URL+"/v1/responses", tc.body)
		got := readAll(t, r.Body)
		if r.StatusCode != 400 || gjson.Get(got, "error.code").Str != "unsupported_feature" || !bytes.Contains([]byte(got), []byte(tc.says)) {
			t.Errorf("%s: %d %s", tc.body, r.StatusCode, got)
		}
	}
	if anth.hits.Load() != 0 || bed.hits.Load() != 0 {
		t.Errorf("upstream hits: anthropic %d, bedrock %d", anth.hits.Load(), bed.hits.Load())
	}
}
