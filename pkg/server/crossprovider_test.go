package server_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws/protocol/eventstream"
	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"
	"github.com/openai/openai-go/v3/shared"

	"github.com/llmgw/llmgw/pkg/exchange"
	"github.com/llmgw/llmgw/pkg/server"
)

// Native upstreams that answer "weather in Paris?" with a get_weather tool
// call, each in its own wire format, and can be switched off.

func anthropicToolCall(w http.ResponseWriter) {
	w.Header().Set("Content-Type", "text/event-stream; charset=utf-8")
	events := []string{
		`event: message_start` + "\n" + `data: {"type":"message_start","message":{"id":"msg_01Aq9w938a90dw8q","type":"message","role":"assistant","content":[],"model":"claude-sonnet-4-5-20250929","stop_reason":null,"stop_sequence":null,"usage":{"input_tokens":472,"cache_creation_input_tokens":0,"cache_read_input_tokens":0,"output_tokens":2}}}`,
		`event: content_block_start` + "\n" + `data: {"type":"content_block_start","index":0,"content_block":{"type":"tool_use","id":"toolu_01T1x1fJ34qAmk2tNTrN7Up6","name":"get_weather","input":{}}}`,
		`event: ping` + "\n" + `data: {"type": "ping"}`,
		`event: content_block_delta` + "\n" + `data: {"type":"content_block_delta","index":0,"delta":{"type":"input_json_delta","partial_json":"{\"city\": "}}`,
		`event: content_block_delta` + "\n" + `data: {"type":"content_block_delta","index":0,"delta":{"type":"input_json_delta","partial_json":"\"Paris\"}"}}`,
		`event: content_block_stop` + "\n" + `data: {"type":"content_block_stop","index":0}`,
		`event: message_delta` + "\n" + `data: {"type":"message_delta","delta":{"stop_reason":"tool_use","stop_sequence":null},"usage":{"output_tokens":89}}`,
		`event: message_stop` + "\n" + `data: {"type":"message_stop"}`,
	}
	for _, e := range events {
		io.WriteString(w, e+"\n\n")
	}
}

func bedrockToolCall(w http.ResponseWriter) {
	w.Header().Set("Content-Type", "application/vnd.amazon.eventstream")
	w.Header().Set("x-amzn-RequestId", "5f1c6a2e-4b8d-4c1e-9f3a-2b7d8e9f0a1b")
	enc := eventstream.NewEncoder()
	for _, e := range [][2]string{
		{"messageStart", `{"role":"assistant"}`},
		{"contentBlockStart", `{"contentBlockIndex":0,"start":{"toolUse":{"toolUseId":"tooluse_kZJMlvQmRJ6eAyJE5GIl7Q","name":"get_weather"}}}`},
		{"contentBlockDelta", `{"contentBlockIndex":0,"delta":{"toolUse":{"input":"{\"city\": "}}}`},
		{"contentBlockDelta", `{"contentBlockIndex":0,"delta":{"toolUse":{"input":"\"Paris\"}"}}}`},
		{"contentBlockStop", `{"contentBlockIndex":0}`},
		{"messageStop", `{"stopReason":"tool_use"}`},
		{"metadata", `{"usage":{"inputTokens":472,"outputTokens":89,"totalTokens":561},"metrics":{"latencyMs":812}}`},
	} {
		var m eventstream.Message
		m.Headers.Set(":message-type", eventstream.StringValue("event"))
		m.Headers.Set(":event-type", eventstream.StringValue(e[0]))
		m.Headers.Set(":content-type", eventstream.StringValue("application/json"))
		m.Payload = []byte(e[1])
		enc.Encode(w, m)
	}
}

func openaiToolCall(w http.ResponseWriter) {
	w.Header().Set("Content-Type", "text/event-stream")
	for _, f := range []string{
		roleChunk(true),
		"data: " + chunkHead + `[{"index":0,"delta":{"tool_calls":[{"index":0,"id":"call_DdmO9pD3xa9XTPNJ32zg2hcA","type":"function","function":{"name":"get_weather","arguments":""}}]},"logprobs":null,"finish_reason":null}],"usage":null}` + "\n\n",
		"data: " + chunkHead + `[{"index":0,"delta":{"tool_calls":[{"index":0,"function":{"arguments":"{\"city\": "}}]},"logprobs":null,"finish_reason":null}],"usage":null}` + "\n\n",
		"data: " + chunkHead + `[{"index":0,"delta":{"tool_calls":[{"index":0,"function":{"arguments":"\"Paris\"}"}}]},"logprobs":null,"finish_reason":null}],"usage":null}` + "\n\n",
		finishChunk("tool_calls", true),
		usageChunk(472, 89, 0),
		"data: [DONE]\n\n",
	} {
		io.WriteString(w, f)
	}
}

// switchable answers with ok() while up, else with down().
func switchable(t *testing.T, up *atomic.Bool, ok func(http.ResponseWriter), down func(http.ResponseWriter)) *upstream {
	return newUpstream(t, func(w http.ResponseWriter, r *http.Request, _ []byte, _ int) {
		if up.Load() {
			ok(w)
			return
		}
		down(w)
	})
}

func TestCrossProviderChainServesTheSameToolCallFromWhicheverIsUp(t *testing.T) {
	t.Setenv("AWS_ACCESS_KEY_ID", "AKIDTEST")
	t.Setenv("AWS_SECRET_ACCESS_KEY", "secret")
	t.Setenv("AWS_REGION", "us-east-1")
	t.Setenv("ANTHROPIC_TEST_KEY", "sk-ant-test-key-0000000000")
	var aUp, bUp, oUp atomic.Bool
	anth := switchable(t, &aUp, anthropicToolCall, func(w http.ResponseWriter) {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(529)
		io.WriteString(w, `{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}`)
	})
	bed := switchable(t, &bUp, bedrockToolCall, func(w http.ResponseWriter) {
		w.Header().Set("Content-Type", "application/json")
		w.Header().Set("X-Amzn-ErrorType", "ThrottlingException:http://internal.amazon.com/coral/com.amazon.bedrock/")
		w.WriteHeader(429)
		io.WriteString(w, `{"message":"Too many requests, please wait before trying again."}`)
	})
	oai := switchable(t, &oUp, openaiToolCall, func(w http.ResponseWriter) {
		w.WriteHeader(503)
	})
	g := newGateway(t, fmt.Sprintf(`
defaults: {attempts: 1, backoff_base: 1ms, backoff_max: 2ms}
providers:
  anthropic: {kind: anthropic, base_url: %q, keys: [{env: ANTHROPIC_TEST_KEY}]}
  bedrock:   {kind: bedrock, region: us-east-1, endpoint: %q}
  openai:    {kind: openai, base_url: %q}
routes:
  claude-sonnet:
    targets:
      - {provider: anthropic, model: claude-sonnet-4-5}
      - {provider: bedrock, model: "us.anthropic.claude-sonnet-4-5-20250929-v1:0"}
      - {provider: openai, model: gpt-4.1}
`, anth.URL, bed.URL, oai.URL+"/v1"))
	client := g.sdk()
	params := openai.ChatCompletionNewParams{
		Model:    "claude-sonnet",
		Messages: []openai.ChatCompletionMessageParamUnion{openai.UserMessage("weather in Paris?")},
		Tools: []openai.ChatCompletionToolUnionParam{openai.ChatCompletionFunctionTool(shared.FunctionDefinitionParam{
			Name: "get_weather", Parameters: shared.FunctionParameters{"type": "object", "properties": map[string]any{"city": map[string]any{"type": "string"}}}})},
		StreamOptions: openai.ChatCompletionStreamOptionsParam{IncludeUsage: openai.Bool(true)},
	}
	for _, tc := range []struct {
		name     string
		up       *atomic.Bool
		provider string
	}{{"anthropic up", &aUp, "anthropic"}, {"anthropic down, bedrock up", &bUp, "bedrock"}, {"only openai up", &oUp, "openai"}} {
		t.Run(tc.name, func(t *testing.T) {
			aUp.Store(false)
			bUp.Store(false)
			oUp.Store(false)
			tc.up.Store(true)
			var raw *http.Response
			stream := client.Chat.Completions.NewStreaming(context.Background(), params, optionResponseInto(&raw))
			var acc openai.ChatCompletionAccumulator
			n := 0
			for stream.Next() {
				c := stream.Current()
				acc.AddChunk(c)
				n++
				assertChunkShape(t, c.RawJSON())
			}
			if err := stream.Err(); err != nil {
				t.Fatalf("stream error: %v", err)
			}
			if got := raw.Header.Get("x-gateway-provider"); got != tc.provider {
				t.Fatalf("served by %q, want %q", got, tc.provider)
			}
			calls := acc.Choices[0].Message.ToolCalls
			if len(calls) != 1 || calls[0].Function.Name != "get_weather" || calls[0].ID == "" {
				t.Fatalf("tool calls = %+v", calls)
			}
			var args map[string]string
			if err := json.Unmarshal([]byte(calls[0].Function.Arguments), &args); err != nil || args["city"] != "Paris" {
				t.Errorf("arguments = %q", calls[0].Function.Arguments)
			}
			if acc.Choices[0].FinishReason != "tool_calls" || acc.Usage.PromptTokens != 472 || acc.Usage.CompletionTokens != 89 {
				t.Errorf("finish %q usage %+v", acc.Choices[0].FinishReason, acc.Usage)
			}
		})
	}
}

// assertChunkShape checks a chunk carries the OpenAI chunk fields every
// provider's translation produces, whoever served it.
func assertChunkShape(t *testing.T, raw string) {
	t.Helper()
	var c map[string]json.RawMessage
	if err := json.Unmarshal([]byte(raw), &c); err != nil {
		t.Fatalf("chunk is not JSON: %s", raw)
	}
	for _, k := range []string{"id", "object", "created", "model", "choices"} {
		if _, ok := c[k]; !ok {
			t.Errorf("chunk lacks %q: %s", k, raw)
		}
	}
	if !bytes.Equal(c["object"], []byte(`"chat.completion.chunk"`)) || !strings.HasPrefix(string(c["id"]), `"chatcmpl-`) {
		t.Errorf("chunk shape: %s", raw)
	}
}

func TestUnsupportedFeatureSkipsTargetThenRejects(t *testing.T) {
	t.Setenv("ANTHROPIC_TEST_KEY", "sk-ant-test-key-0000000000")
	anth := newUpstream(t, func(w http.ResponseWriter, r *http.Request, _ []byte, _ int) { anthropicToolCall(w) })
	oai := newUpstream(t, okHandler)
	g := newGateway(t, fastPolicy+fmt.Sprintf(`
providers:
  anthropic: {kind: anthropic, base_url: %q, keys: [{env: ANTHROPIC_TEST_KEY}]}
  openai:    {kind: openai, base_url: %q}
routes:
  chain: {targets: [{provider: anthropic, model: claude-sonnet-4-5}, {provider: openai, model: gpt-4.1}]}
  only-claude: {targets: [{provider: anthropic, model: claude-sonnet-4-5}]}
`, anth.URL, oai.URL+"/v1"))
	// n=2: Anthropic cannot honour it, so the chain skips to OpenAI.
	resp := g.post(t, `{"model":"chain","n":2,"messages":[{"role":"user","content":"hi"}]}`)
	readAll(t, resp.Body)
	if resp.StatusCode != 200 || resp.Header.Get("x-gateway-provider") != "openai" || anth.hits.Load() != 0 {
		t.Fatalf("status %d provider %q anthropic hits %d", resp.StatusCode, resp.Header.Get("x-gateway-provider"), anth.hits.Load())
	}
	// No target can honour it: a clear invalid_request naming feature and target, no upstream call.
	resp = g.post(t, `{"model":"only-claude","n":2,"messages":[{"role":"user","content":"hi"}]}`)
	out := readAll(t, resp.Body)
	if resp.StatusCode != 400 || !strings.Contains(out, `"code":"unsupported_feature"`) || !strings.Contains(out, "anthropic/claude-sonnet-4-5") || anth.hits.Load() != 0 {
		t.Fatalf("status %d: %s", resp.StatusCode, out)
	}
}

func optionResponseInto(r **http.Response) option.RequestOption { return option.WithResponseInto(r) }

// TestAdmittedOutputCapReachesEveryProviderKind: when the limiter admits a
// request without max tokens for a bounded output, the provider is asked
// for at most that many tokens, whatever its API.
func TestAdmittedOutputCapReachesEveryProviderKind(t *testing.T) {
	t.Setenv("ANTHROPIC_TEST_KEY", "sk-ant-test-key-0000000000")
	anth := newUpstream(t, func(w http.ResponseWriter, r *http.Request, _ []byte, _ int) { anthropicToolCall(w) })
	oai := newUpstream(t, okHandler)
	g := newGateway(t, fastPolicy+fmt.Sprintf(`
providers:
  anthropic: {kind: anthropic, base_url: %q, keys: [{env: ANTHROPIC_TEST_KEY}]}
  openai:    {kind: openai, base_url: %q}
  reasoning: {kind: openai, base_url: %q, options: {max_tokens_field: max_completion_tokens}}
routes:
  a: {targets: [{provider: anthropic, model: claude-sonnet-4-5, max_tokens: 8192}]}
  o: {targets: [{provider: openai, model: gpt-4.1}]}
  r: {targets: [{provider: reasoning, model: o3}]}
`, anth.URL, oai.URL+"/v1", oai.URL+"/v1"), func(o *server.Options) {
		o.Admit = func(_ context.Context, a *exchange.Request) (exchange.Settle, error) {
			if a.Prompt.Sampling.MaxTokens == 0 {
				a.OutputCap = 77
			}
			return nil, nil
		}
	})
	readAll(t, g.post(t, `{"model":"a","messages":[{"role":"user","content":"hi"}]}`).Body)
	if !bytes.Contains(anth.body(0), []byte(`"max_tokens":77`)) {
		t.Errorf("anthropic got %s", anth.body(0))
	}
	readAll(t, g.post(t, `{"model":"o","messages":[{"role":"user","content":"hi"}]}`).Body)
	if !bytes.HasSuffix(oai.body(0), []byte(`,"max_tokens":77}`)) {
		t.Errorf("openai got %s", oai.body(0))
	}
	readAll(t, g.post(t, `{"model":"r","messages":[{"role":"user","content":"hi"}]}`).Body)
	if !bytes.HasSuffix(oai.body(1), []byte(`,"max_completion_tokens":77}`)) {
		t.Errorf("reasoning model got %s", oai.body(1))
	}
	readAll(t, g.post(t, `{"model":"o","max_tokens":12,"messages":[{"role":"user","content":"hi"}]}`).Body)
	if bytes.Contains(oai.body(2), []byte(`77`)) {
		t.Errorf("a client's own max_tokens was overridden: %s", oai.body(2))
	}
}
