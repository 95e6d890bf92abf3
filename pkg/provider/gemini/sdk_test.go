package gemini_test

// End-to-end: the official OpenAI Go SDK talks to the real gateway handler
// (pkg/server) whose route targets this adapter, pointed at a loopback fake
// Gemini API that answers in the API's exact wire format.

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"
	"github.com/openai/openai-go/v3/packages/ssestream"
	"github.com/openai/openai-go/v3/shared"

	"github.com/llmgw/llmgw/pkg/config"
	"github.com/llmgw/llmgw/pkg/exchange"
	"github.com/llmgw/llmgw/pkg/server"
)

const sdkKeyEnv = "LLMGW_TEST_GEMINI_KEY"
const sdkKey = "AIzaSySdkTest0123456789abcdefghijklmn"

// upstream is a fake Gemini API that records request bodies.
type upstream struct {
	*httptest.Server
	hits   atomic.Int32
	mu     sync.Mutex
	bodies [][]byte
	hdrs   []http.Header
	paths  []string
}

func newUpstream(t *testing.T, h http.HandlerFunc) *upstream {
	u := &upstream{}
	u.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		u.hits.Add(1)
		b, _ := io.ReadAll(r.Body)
		u.mu.Lock()
		u.bodies = append(u.bodies, b)
		u.hdrs = append(u.hdrs, r.Header.Clone())
		u.paths = append(u.paths, r.URL.Path+"?"+r.URL.RawQuery)
		u.mu.Unlock()
		h(w, r)
	}))
	t.Cleanup(u.Close)
	return u
}

func (u *upstream) body(i int) []byte {
	u.mu.Lock()
	defer u.mu.Unlock()
	return u.bodies[i]
}

func fixture(t *testing.T, name string) []byte {
	b, err := os.ReadFile(filepath.Join("testdata", name))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// sse streams a Gemini event stream, flushing after every frame.
func sse(body []byte) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		for _, ev := range strings.SplitAfter(string(body), "\r\n\r\n") {
			io.WriteString(w, ev)
			w.(http.Flusher).Flush()
		}
	}
}

func jsonReply(status int, body string) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json; charset=UTF-8")
		w.WriteHeader(status)
		io.WriteString(w, body)
	}
}

// gateway serves the real handler with one route "m" over gemini targets
// at the given upstream URLs.
type gateway struct {
	*httptest.Server
	mu   sync.Mutex
	recs []exchange.Record
}

func newGateway(t *testing.T, urls ...string) *gateway {
	return newGatewayVariant(t, "", urls...)
}

// newGatewayVariant is newGateway with a variant (a YAML flow mapping) on
// the first target.
func newGatewayVariant(t *testing.T, variant string, urls ...string) *gateway {
	t.Setenv(sdkKeyEnv, sdkKey)
	var b strings.Builder
	// Server tools are served unpriced: these tests are about what Gemini
	// can carry (pkg/server's fees_test.go prices them).
	b.WriteString("defaults: {backoff_base: 1ms, backoff_max: 2ms, attempts: 1}\nserver: {allow_unpriced_tools: true}\nproviders:\n")
	for i, u := range urls {
		b.WriteString("  g" + string(rune('0'+i)) + ": {kind: gemini, base_url: \"" + u + "/v1beta\", keys: [{env: " + sdkKeyEnv + "}]}\n")
	}
	b.WriteString("routes:\n  m:\n    targets:\n")
	for i := range urls {
		v := ""
		if i == 0 && variant != "" {
			v = ", variant: " + variant
		}
		b.WriteString("      - {provider: g" + string(rune('0'+i)) + ", model: gemini-test-" + string(rune('0'+i)) + v + "}\n")
	}
	cfg, err := config.Parse([]byte(b.String()))
	if err != nil {
		t.Fatalf("config: %v\n%s", err, b.String())
	}
	g := &gateway{}
	h, err := server.New(context.Background(), cfg, server.Options{
		Logger: slog.New(slog.NewJSONHandler(io.Discard, nil)),
		Upstream: server.Upstream{
			Sleep: func(ctx context.Context, d time.Duration) error { return ctx.Err() },
		},
		Reporting: server.Reporting{
			Record: func(_ context.Context, r *exchange.Record) { g.mu.Lock(); g.recs = append(g.recs, *r); g.mu.Unlock() },
		},
	})
	if err != nil {
		t.Fatalf("server.New: %v", err)
	}
	g.Server = httptest.NewServer(h)
	t.Cleanup(g.Close)
	return g
}

// records waits for n usage records (written after the last byte).
func (g *gateway) records(t *testing.T, n int) []exchange.Record {
	for deadline := time.Now().Add(5 * time.Second); time.Now().Before(deadline); time.Sleep(5 * time.Millisecond) {
		g.mu.Lock()
		recs := append([]exchange.Record(nil), g.recs...)
		g.mu.Unlock()
		if len(recs) >= n {
			return recs
		}
	}
	t.Fatalf("fewer than %d usage records", n)
	return nil
}

func (g *gateway) sdk() openai.Client {
	return openai.NewClient(option.WithBaseURL(g.URL+"/v1"), option.WithAPIKey("sk-client"), option.WithMaxRetries(0))
}

func TestSDKStreamedTextWithCachedUsage(t *testing.T) {
	up := newUpstream(t, sse(fixture(t, "text.sse")))
	g := newGateway(t, up.URL)
	client := g.sdk()
	stream := client.Chat.Completions.NewStreaming(context.Background(), openai.ChatCompletionNewParams{
		Model:         "m",
		Messages:      []openai.ChatCompletionMessageParamUnion{openai.SystemMessage("be brief"), openai.UserMessage("hi")},
		StreamOptions: openai.ChatCompletionStreamOptionsParam{IncludeUsage: openai.Bool(true)},
	})
	var acc openai.ChatCompletionAccumulator
	for stream.Next() {
		acc.AddChunk(stream.Current())
	}
	if err := stream.Err(); err != nil {
		t.Fatalf("stream error: %v", err)
	}
	if got := acc.Choices[0].Message.Content; got != "Hello, \"world\"\n\tcafé 😀!" || acc.Choices[0].FinishReason != "stop" {
		t.Errorf("content %q finish %q", got, acc.Choices[0].FinishReason)
	}
	if acc.Usage.PromptTokens != 2012 || acc.Usage.CompletionTokens != 37 || acc.Usage.PromptTokensDetails.CachedTokens != 1800 {
		t.Errorf("usage = %+v", acc.Usage)
	}
	up.mu.Lock()
	if k := up.hdrs[0].Get("x-goog-api-key"); k != sdkKey || up.paths[0] != "/v1beta/models/gemini-test-0:streamGenerateContent?alt=sse" {
		t.Errorf("upstream key %q path %q", k, up.paths[0])
	}
	up.mu.Unlock()
	if b := string(up.body(0)); !strings.Contains(b, `"systemInstruction":{"parts":[{"text":"be brief"}]}`) {
		t.Errorf("upstream body = %s", b)
	}
	recs := g.records(t, 1)
	if r := recs[0]; r.InputTokens != 2012 || r.OutputTokens != 37 || r.CachedTokens != 1800 || r.Estimated || r.Target != "g0/gemini-test-0" {
		t.Errorf("usage record = %+v", r)
	}
}

func TestSDKNonStreamingText(t *testing.T) {
	up := newUpstream(t, jsonReply(200, `{"candidates":[{"content":{"parts":[{"text":"Bonjour"}],"role":"model"},"finishReason":"STOP","index":0}],
		"usageMetadata":{"promptTokenCount":7,"candidatesTokenCount":2,"totalTokenCount":9},"modelVersion":"gemini-2.5-flash","responseId":"ns1"}`))
	g := newGateway(t, up.URL)
	client := g.sdk()
	resp, err := client.Chat.Completions.New(context.Background(), openai.ChatCompletionNewParams{
		Model: "m", Messages: []openai.ChatCompletionMessageParamUnion{openai.UserMessage("hi")},
	})
	if err != nil {
		t.Fatal(err)
	}
	if resp.Choices[0].Message.Content != "Bonjour" || resp.Choices[0].FinishReason != "stop" || resp.Usage.TotalTokens != 9 || resp.ID != "chatcmpl-ns1" {
		t.Errorf("response = %+v", resp)
	}
}

// TestSDKParallelToolCallsRoundTrip: streamed parallel function calls
// reassemble in the SDK, and the client's tool results reach Gemini as
// functionResponse parts named after the calls.
func TestSDKParallelToolCallsRoundTrip(t *testing.T) {
	up := newUpstream(t, func(w http.ResponseWriter, r *http.Request) {
		if strings.Contains(r.URL.RawQuery, "alt=sse") {
			sse(fixture(t, "tool_calls.sse"))(w, r)
			return
		}
		jsonReply(200, `{"candidates":[{"content":{"parts":[{"text":"18C and 4C."}],"role":"model"},"finishReason":"STOP","index":0}],"usageMetadata":{"promptTokenCount":90,"candidatesTokenCount":5,"totalTokenCount":95}}`)(w, r)
	})
	g := newGateway(t, up.URL)
	client := g.sdk()
	tools := []openai.ChatCompletionToolUnionParam{openai.ChatCompletionFunctionTool(shared.FunctionDefinitionParam{Name: "get_weather",
		Parameters: shared.FunctionParameters{"type": "object", "properties": map[string]any{"location": map[string]any{"type": "string"}, "unit": map[string]any{"type": "string"}}, "required": []string{"location"}}})}
	params := openai.ChatCompletionNewParams{
		Model:      "m",
		Messages:   []openai.ChatCompletionMessageParamUnion{openai.UserMessage("weather in Paris and Oslo?")},
		Tools:      tools,
		ToolChoice: openai.ChatCompletionToolChoiceOptionUnionParam{OfAuto: openai.String("required")},
	}
	stream := client.Chat.Completions.NewStreaming(context.Background(), params)
	var acc openai.ChatCompletionAccumulator
	for stream.Next() {
		acc.AddChunk(stream.Current())
	}
	if err := stream.Err(); err != nil {
		t.Fatalf("stream error: %v", err)
	}
	msg := acc.Choices[0].Message
	calls := msg.ToolCalls
	if len(calls) != 2 || calls[0].Function.Name != "get_weather" || calls[0].Function.Arguments != `{"location":"Paris"}` ||
		calls[1].Function.Arguments != `{"location":"Oslo","unit":"celsius"}` || calls[0].ID == calls[1].ID || !strings.HasPrefix(calls[0].ID, "call_") {
		t.Fatalf("tool calls = %+v", calls)
	}
	if acc.Choices[0].FinishReason != "tool_calls" || msg.Content != "Checking both cities." {
		t.Errorf("finish %q content %q", acc.Choices[0].FinishReason, msg.Content)
	}
	var sent map[string]any
	json.Unmarshal(up.body(0), &sent)
	if tc, _ := json.Marshal(sent["toolConfig"]); string(tc) != `{"functionCallingConfig":{"mode":"ANY"}}` {
		t.Errorf("toolConfig = %s", tc)
	}

	params.Messages = append(params.Messages, msg.ToParam(),
		openai.ToolMessage("18C", calls[0].ID), openai.ToolMessage(`{"temp":4}`, calls[1].ID))
	resp, err := client.Chat.Completions.New(context.Background(), params)
	if err != nil {
		t.Fatal(err)
	}
	if resp.Choices[0].Message.Content != "18C and 4C." {
		t.Errorf("answer = %+v", resp.Choices[0].Message)
	}
	var second struct {
		Contents []struct {
			Role  string           `json:"role"`
			Parts []map[string]any `json:"parts"`
		} `json:"contents"`
	}
	if err := json.Unmarshal(up.body(1), &second); err != nil || len(second.Contents) != 3 {
		t.Fatalf("second request: %s", up.body(1))
	}
	model, user := second.Contents[1], second.Contents[2]
	fc, _ := json.Marshal(model.Parts)
	fr, _ := json.Marshal(user.Parts)
	if model.Role != "model" || !strings.Contains(string(fc), `{"functionCall":{"args":{"location":"Paris"},"name":"get_weather"},"thoughtSignature":"skip_thought_signature_validator"}`) ||
		user.Role != "user" || string(fr) != `[{"functionResponse":{"name":"get_weather","response":{"result":"18C"}}},{"functionResponse":{"name":"get_weather","response":{"temp":4}}}]` {
		t.Errorf("replayed turns:\nmodel %s\nuser %s", fc, fr)
	}
}

// TestSDKRateLimitedFallsBack: 429 RESOURCE_EXHAUSTED with a retry delay
// longer than the retry cap moves on to the next target at once.
func TestSDKRateLimitedFallsBack(t *testing.T) {
	limited := newUpstream(t, jsonReply(429, `{"error":{"code":429,"message":"Resource has been exhausted (e.g. check quota).","status":"RESOURCE_EXHAUSTED","details":[{"@type":"type.googleapis.com/google.rpc.RetryInfo","retryDelay":"37s"}]}}`))
	steady := newUpstream(t, sse(fixture(t, "text.sse")))
	g := newGateway(t, limited.URL, steady.URL)
	client := g.sdk()
	stream := client.Chat.Completions.NewStreaming(context.Background(), openai.ChatCompletionNewParams{
		Model: "m", Messages: []openai.ChatCompletionMessageParamUnion{openai.UserMessage("hi")},
	})
	var acc openai.ChatCompletionAccumulator
	for stream.Next() {
		acc.AddChunk(stream.Current())
	}
	if err := stream.Err(); err != nil || !strings.HasPrefix(acc.Choices[0].Message.Content, "Hello") {
		t.Fatalf("err %v content %q", err, acc.Choices[0].Message.Content)
	}
	recs := g.records(t, 1)
	if a := recs[0].Attempts; len(a) != 2 || a[0].Category != "rate_limited" || a[0].Status != 429 || recs[0].Target != "g1/gemini-test-1" {
		t.Errorf("attempts = %+v target %q", a, recs[0].Target)
	}
	if limited.hits.Load() != 1 {
		t.Errorf("the rate-limited target was called %d times", limited.hits.Load())
	}
}

// TestSDKStreamCutSurfacesError: a stream that ends without a finishReason
// reaches the SDK as an error, never as a clean end.
func TestSDKStreamCutSurfacesError(t *testing.T) {
	up := newUpstream(t, sse(fixture(t, "cut.sse")))
	g := newGateway(t, up.URL)
	client := g.sdk()
	stream := client.Chat.Completions.NewStreaming(context.Background(), openai.ChatCompletionNewParams{
		Model: "m", Messages: []openai.ChatCompletionMessageParamUnion{openai.UserMessage("tell a story")},
	})
	var text strings.Builder
	for stream.Next() {
		if c := stream.Current(); len(c.Choices) > 0 {
			text.WriteString(c.Choices[0].Delta.Content)
		}
	}
	var se *ssestream.StreamError
	if err := stream.Err(); !errors.As(err, &se) || !strings.Contains(err.Error(), "interrupted") {
		t.Fatalf("err = %v (text %q), want the interrupted error", err, text.String())
	}
	if text.String() != "Once upon a time" {
		t.Errorf("text = %q", text.String())
	}
}

// TestSDKUnsupportedFeatureIsRejectedWithoutCallingUpstream: n > 1 is a
// 400 naming the parameter and the target.
func TestSDKUnsupportedFeatureIsRejectedWithoutCallingUpstream(t *testing.T) {
	up := newUpstream(t, sse(fixture(t, "text.sse")))
	g := newGateway(t, up.URL)
	client := g.sdk()
	_, err := client.Chat.Completions.New(context.Background(), openai.ChatCompletionNewParams{
		Model: "m", Messages: []openai.ChatCompletionMessageParamUnion{openai.UserMessage("hi")}, N: openai.Int(2),
	})
	var apiErr *openai.Error
	if !errors.As(err, &apiErr) || apiErr.StatusCode != 400 || apiErr.Param != "n" || !strings.Contains(apiErr.Message, "g0/gemini-test-0") {
		t.Fatalf("err = %v, want a 400 naming param n and the target", err)
	}
	if up.hits.Load() != 0 {
		t.Error("the upstream was called")
	}
}

// TestSDKVariantOnAGeminiTarget: the target's prompt variant reaches
// Gemini through the translated request, and the record names it.
func TestSDKVariantOnAGeminiTarget(t *testing.T) {
	up := newUpstream(t, sse(fixture(t, "text.sse")))
	g := newGatewayVariant(t, `{name: gemini-v3, system: "Answer in one line.", top_p: 0.5, max_tokens_cap: 128}`, up.URL)
	client := g.sdk()
	stream := client.Chat.Completions.NewStreaming(context.Background(), openai.ChatCompletionNewParams{
		Model:     "m",
		Messages:  []openai.ChatCompletionMessageParamUnion{openai.SystemMessage("You are a poet."), openai.UserMessage("hi")},
		MaxTokens: openai.Int(4000),
	})
	for stream.Next() {
	}
	if err := stream.Err(); err != nil {
		t.Fatal(err)
	}
	var sent struct {
		SystemInstruction struct {
			Parts []struct{ Text string } `json:"parts"`
		} `json:"systemInstruction"`
		GenerationConfig map[string]any `json:"generationConfig"`
	}
	if err := json.Unmarshal(up.body(0), &sent); err != nil {
		t.Fatal(err)
	}
	if p := sent.SystemInstruction.Parts; len(p) != 1 || p[0].Text != "Answer in one line." ||
		sent.GenerationConfig["topP"] != 0.5 || sent.GenerationConfig["maxOutputTokens"] != 128.0 {
		t.Errorf("upstream body = %s", up.body(0))
	}
	if r := g.records(t, 1)[0]; r.Variant != "gemini-v3" {
		t.Errorf("record variant = %q", r.Variant)
	}
}
