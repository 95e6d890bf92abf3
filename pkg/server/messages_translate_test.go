package server_test

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	anthropic "github.com/anthropics/anthropic-sdk-go/v2"
	aoption "github.com/anthropics/anthropic-sdk-go/v2/option"
)

func optionInto(r **http.Response) aoption.RequestOption { return aoption.WithResponseInto(r) }

// The Messages ingress served by an OpenAI-compatible upstream: the
// request is translated from its canonical form, the answer encoded as
// Anthropic events.

var updateGolden = flag.Bool("update", false, "rewrite the golden files")

func goldenFile(t *testing.T, name, got string) {
	t.Helper()
	p := filepath.Join("testdata", name)
	if *updateGolden {
		os.MkdirAll("testdata", 0o755)
		os.WriteFile(p, []byte(got), 0o644)
	}
	want, err := os.ReadFile(p)
	if err != nil {
		t.Fatalf("%v (run with -update)", err)
	}
	if got != string(want) {
		t.Errorf("%s differs:\n got:\n%s\nwant:\n%s", name, got, want)
	}
}

func TestMessagesTranslatedToOpenAIGolden(t *testing.T) {
	up := newUpstream(t, func(w http.ResponseWriter, r *http.Request, body []byte, n int) {
		switch {
		case strings.Contains(string(body), `"tools"`):
			openaiToolCall(w)
		case strings.Contains(string(body), `"stream":true`):
			streamReply(w, []string{"Hello", " world"}, strings.Contains(string(body), `"include_usage":true`))
		default:
			completionReply(w, "Hello world")
		}
	})
	g := newGateway(t, msgRoute(t, "", "openai="+up.URL))
	cases := map[string]string{
		"text": `{"model":"claude","max_tokens":100,"stream":true,"system":"Be brief.","stop_sequences":["END"],"metadata":{"user_id":"u-1"},` +
			`"messages":[{"role":"user","content":"hi"},{"role":"assistant","content":"Hello?"},{"role":"user","content":[{"type":"text","text":"again","cache_control":{"type":"ephemeral"}}]}]}`,
		"tool_call": `{"model":"claude","max_tokens":100,"stream":true,"tools":[{"name":"get_weather","input_schema":{"type":"object","properties":{"city":{"type":"string"}}}}],` +
			`"tool_choice":{"type":"tool","name":"get_weather"},"messages":[{"role":"user","content":"weather in Paris?"}]}`,
		"non_streaming": `{"model":"claude","max_tokens":100,"messages":[{"role":"user","content":"hi"}]}`,
	}
	wantUpstream := map[string]string{
		"text": `{"model":"up-model-0","messages":[{"role":"system","content":"Be brief."},{"role":"user","content":"hi"},{"role":"assistant","content":"Hello?"},` +
			`{"role":"user","content":[{"type":"text","text":"again","cache_control":{"type":"ephemeral"}}]}],"stream":true,"max_tokens":100,"stop":["END"],"user":"u-1","stream_options":{"include_usage":true}}`,
		"tool_call": `{"model":"up-model-0","messages":[{"role":"user","content":"weather in Paris?"}],"stream":true,"max_tokens":100,` +
			`"tools":[{"type":"function","function":{"name":"get_weather","parameters":{"type":"object","properties":{"city":{"type":"string"}}}}}],` +
			`"tool_choice":{"type":"function","function":{"name":"get_weather"}},"stream_options":{"include_usage":true}}`,
		"non_streaming": `{"model":"up-model-0","messages":[{"role":"user","content":"hi"}],"max_tokens":100}`,
	}
	for _, name := range []string{"text", "tool_call", "non_streaming"} {
		t.Run(name, func(t *testing.T) {
			n := int(up.hits.Load())
			resp := g.postMessages(t, cases[name])
			got := readAll(t, resp.Body)
			if resp.StatusCode != 200 {
				t.Fatalf("status %d: %s", resp.StatusCode, got)
			}
			goldenFile(t, "messages_from_openai_"+name+".golden", got)
			if body := string(up.body(n)); body != wantUpstream[name] {
				t.Errorf("upstream body\n got %s\nwant %s", body, wantUpstream[name])
			}
		})
	}
}

func TestMessagesSDKTranslatedToOpenAI(t *testing.T) {
	up := newUpstream(t, func(w http.ResponseWriter, r *http.Request, body []byte, n int) {
		if strings.Contains(string(body), `"tool"`) { // the tool result came back
			streamReply(w, []string{"It is ", "18C."}, true)
			return
		}
		openaiToolCall(w)
	})
	g := newGateway(t, msgRoute(t, "", "openai="+up.URL))
	client := g.anthropicSDK()
	tools := []anthropic.ToolUnionParam{{OfTool: &anthropic.ToolParam{Name: "get_weather",
		InputSchema: anthropic.ToolInputSchemaParam{Properties: map[string]any{"city": map[string]any{"type": "string"}}}}}}
	msgs := []anthropic.MessageParam{anthropic.NewUserMessage(anthropic.NewTextBlock("weather in Paris?"))}
	first := accumulate(t, client.Messages.NewStreaming(context.Background(), anthropic.MessageNewParams{Model: "claude", MaxTokens: 100, Messages: msgs, Tools: tools}))
	if first.StopReason != "tool_use" || len(first.Content) != 1 || first.Content[0].ID != "call_DdmO9pD3xa9XTPNJ32zg2hcA" ||
		string(first.Content[0].Input) != `{"city": "Paris"}` || first.Usage.InputTokens != 472 || first.Usage.OutputTokens != 89 {
		t.Fatalf("first turn = %s", first.RawJSON())
	}
	msgs = append(msgs, first.ToParam(), anthropic.NewUserMessage(anthropic.NewToolResultBlock(first.Content[0].ID, "18C", false)))
	second := accumulate(t, client.Messages.NewStreaming(context.Background(), anthropic.MessageNewParams{Model: "claude", MaxTokens: 100, Messages: msgs, Tools: tools}))
	if second.Content[0].Text != "It is 18C." || second.StopReason != "end_turn" {
		t.Errorf("second turn = %s", second.RawJSON())
	}
	var sent struct {
		Messages []map[string]any `json:"messages"`
	}
	json.Unmarshal(up.body(1), &sent)
	if len(sent.Messages) != 3 || sent.Messages[1]["tool_calls"] == nil || sent.Messages[2]["role"] != "tool" || sent.Messages[2]["tool_call_id"] != "call_DdmO9pD3xa9XTPNJ32zg2hcA" {
		t.Errorf("translated history = %s", up.body(1))
	}
}

func TestMessagesTranslatedCutEndsWithAnErrorEvent(t *testing.T) {
	up := newUpstream(t, func(w http.ResponseWriter, r *http.Request, _ []byte, _ int) {
		w.Header().Set("Content-Type", "text/event-stream")
		io.WriteString(w, roleChunk(true)+contentChunk("The answer", true))
	})
	g := newGateway(t, msgRoute(t, "", "openai="+up.URL))
	resp := g.postMessages(t, `{"model":"claude","max_tokens":100,"stream":true,"messages":[{"role":"user","content":"hi"}]}`)
	body := readAll(t, resp.Body)
	frames := strings.Split(strings.TrimSuffix(body, "\n\n"), "\n\n")
	if last := frames[len(frames)-1]; !strings.HasPrefix(last, "event: error\n") || strings.Contains(body, "content_block_stop") || strings.Contains(body, "message_stop") {
		t.Errorf("cut translated stream:\n%s", body)
	}
	client := g.anthropicSDK()
	s := client.Messages.NewStreaming(context.Background(), anthropic.MessageNewParams{Model: "claude", MaxTokens: 9,
		Messages: []anthropic.MessageParam{anthropic.NewUserMessage(anthropic.NewTextBlock("hi"))}})
	for s.Next() {
	}
	var ae *anthropic.Error
	if !errors.As(s.Err(), &ae) || ae.Type() != "api_error" {
		t.Errorf("SDK error = %v", s.Err())
	}
}

func TestMessagesUntranslatableFeatureSkipsTheTargetThenRejects(t *testing.T) {
	oai := newUpstream(t, okHandler)
	anth := newUpstream(t, anthropicOK)
	thinking := `{"model":"claude","max_tokens":4096,"thinking":{"type":"enabled","budget_tokens":2048},"messages":[{"role":"user","content":"hi"}]}`

	g := newGateway(t, msgRoute(t, "", "openai="+oai.URL, "anthropic="+anth.URL))
	resp := g.postMessages(t, thinking)
	if body := readAll(t, resp.Body); resp.StatusCode != 200 || resp.Header.Get("x-gateway-provider") != "p1" || oai.hits.Load() != 0 {
		t.Errorf("status %d provider %q openai hits %d: %s", resp.StatusCode, resp.Header.Get("x-gateway-provider"), oai.hits.Load(), body)
	}

	only := newGateway(t, msgRoute(t, "", "openai="+oai.URL))
	resp = only.postMessages(t, thinking)
	body := readAll(t, resp.Body)
	var e struct {
		Error struct{ Type, Message, Code, Param string } `json:"error"`
	}
	json.Unmarshal([]byte(body), &e)
	if resp.StatusCode != 400 || e.Error.Type != "invalid_request_error" || e.Error.Code != "unsupported_feature" || e.Error.Param != "thinking" ||
		!strings.Contains(e.Error.Message, "thinking") || !strings.Contains(e.Error.Message, "p0/up-model-0") || oai.hits.Load() != 0 {
		t.Errorf("status %d: %s", resp.StatusCode, body)
	}
}

// TestMessagesCrossProviderFailover: one route mixing provider kinds serves
// a Messages client from whichever is up, before the first token, on the
// streaming and the non-streaming path.
func TestMessagesCrossProviderFailover(t *testing.T) {
	t.Setenv("AWS_ACCESS_KEY_ID", "AKIDTEST")
	t.Setenv("AWS_SECRET_ACCESS_KEY", "secret")
	t.Setenv("AWS_REGION", "us-east-1")
	anth := newUpstream(t, anthropicOverloaded)
	bed := newUpstream(t, func(w http.ResponseWriter, r *http.Request, _ []byte, _ int) {
		if strings.HasSuffix(r.URL.Path, "/converse") {
			w.Header().Set("Content-Type", "application/json")
			io.WriteString(w, `{"output":{"message":{"role":"assistant","content":[{"toolUse":{"toolUseId":"tooluse_1","name":"get_weather","input":{"city":"Paris"}}}]}},"stopReason":"tool_use","usage":{"inputTokens":472,"outputTokens":89,"totalTokens":561}}`)
			return
		}
		bedrockToolCall(w)
	})
	oai := newUpstream(t, func(w http.ResponseWriter, r *http.Request, body []byte, _ int) { openaiToolCall(w) })
	g := newGateway(t, msgRoute(t, "", "anthropic="+anth.URL, "bedrock="+bed.URL, "openai="+oai.URL))
	client := g.anthropicSDK()
	params := anthropic.MessageNewParams{Model: "claude", MaxTokens: 100, Messages: []anthropic.MessageParam{anthropic.NewUserMessage(anthropic.NewTextBlock("weather in Paris?"))},
		Tools: []anthropic.ToolUnionParam{{OfTool: &anthropic.ToolParam{Name: "get_weather", InputSchema: anthropic.ToolInputSchemaParam{Properties: map[string]any{"city": map[string]any{"type": "string"}}}}}}}
	check := func(name string, m *anthropic.Message, raw *http.Response, provider string) {
		t.Helper()
		var in map[string]string
		json.Unmarshal(m.Content[len(m.Content)-1].Input, &in)
		if raw.Header.Get("x-gateway-provider") != provider || m.StopReason != "tool_use" || in["city"] != "Paris" || m.Usage.InputTokens != 472 {
			t.Errorf("%s: provider %q, message %s", name, raw.Header.Get("x-gateway-provider"), m.RawJSON())
		}
	}
	var raw *http.Response
	m := accumulate(t, client.Messages.NewStreaming(context.Background(), params, optionInto(&raw)))
	check("streaming, anthropic down", &m, raw, "p1")
	whole, err := client.Messages.New(context.Background(), params, optionInto(&raw))
	if err != nil {
		t.Fatal(err)
	}
	check("non-streaming, anthropic down", whole, raw, "p1")
	bed.Close() // now only OpenAI is up
	m = accumulate(t, client.Messages.NewStreaming(context.Background(), params, optionInto(&raw)))
	check("streaming, only openai up", &m, raw, "p2")
}

// TestClaudeCodeRequestsFailOverAcrossKindsWhenTheRouteAllowsIt: Claude Code
// sends adaptive thinking and context_management on every request, which a
// translating target cannot honour. By default such a target is skipped (the
// test above); a route that lists them in translate_without lets an
// OpenAI-compatible target serve when Anthropic is down, and the response
// says what it went without.
func TestClaudeCodeRequestsFailOverAcrossKindsWhenTheRouteAllowsIt(t *testing.T) {
	anth := newUpstream(t, anthropicOverloaded)
	oai := newUpstream(t, func(w http.ResponseWriter, r *http.Request, body []byte, _ int) { openaiToolCall(w) })
	g := newGateway(t, msgRoute(t, "    translate_without: [thinking, context_management]\n", "anthropic="+anth.URL, "openai="+oai.URL))
	body := `{"model":"claude","max_tokens":100,"stream":true,"thinking":{"type":"adaptive"},"context_management":{"edits":[]},` +
		`"messages":[{"role":"user","content":"weather in Paris?"}],"tools":[{"name":"get_weather","input_schema":{"type":"object"}}]}`
	resp := g.postMessages(t, body)
	out := readAll(t, resp.Body)
	if resp.StatusCode != 200 || resp.Header.Get("x-gateway-provider") != "p1" || !strings.Contains(out, "get_weather") {
		t.Fatalf("status %d provider %q:\n%s", resp.StatusCode, resp.Header.Get("x-gateway-provider"), out)
	}
	if got := resp.Header.Get("x-gateway-dropped-features"); got != "context_management,thinking" {
		t.Errorf("x-gateway-dropped-features = %q", got)
	}
	if b := string(oai.body(0)); strings.Contains(b, "context_management") || strings.Contains(b, "adaptive") {
		t.Errorf("the openai upstream got what it cannot take: %s", oai.body(0))
	}
	// A feature the route does not list still keeps the target out.
	g = newGateway(t, msgRoute(t, "    translate_without: [context_management]\n", "anthropic="+anth.URL, "openai="+oai.URL))
	hits := oai.hits.Load()
	resp = g.postMessages(t, body)
	readAll(t, resp.Body)
	if resp.StatusCode == 200 || oai.hits.Load() != hits {
		t.Errorf("status %d, openai hits %d -> %d: thinking is not in translate_without", resp.StatusCode, hits, oai.hits.Load())
	}
}
