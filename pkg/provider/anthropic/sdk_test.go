package anthropic_test

// End-to-end: the official OpenAI Go SDK talks to the real gateway handler
// (pkg/server) whose route targets this adapter, pointed at a loopback fake
// Anthropic upstream that answers in Anthropic's exact wire format.

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

const sdkKeyEnv = "LLMGW_TEST_ANTHROPIC_KEY"
const sdkKey = "sk-ant-api03-sdktest-0123456789abcdef"

// upstream is a fake Anthropic API that records request bodies.
type upstream struct {
	*httptest.Server
	hits   atomic.Int32
	mu     sync.Mutex
	bodies [][]byte
	hdrs   []http.Header
}

func newUpstream(t *testing.T, h http.HandlerFunc) *upstream {
	u := &upstream{}
	u.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		u.hits.Add(1)
		b, _ := io.ReadAll(r.Body)
		u.mu.Lock()
		u.bodies = append(u.bodies, b)
		u.hdrs = append(u.hdrs, r.Header.Clone())
		u.mu.Unlock()
		if r.URL.Path != "/v1/messages" {
			http.NotFound(w, r)
			return
		}
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

// sse streams an Anthropic event stream, flushing after every event.
func sse(body []byte) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream; charset=utf-8")
		w.WriteHeader(200)
		for _, ev := range strings.SplitAfter(string(body), "\n\n") {
			io.WriteString(w, ev)
			w.(http.Flusher).Flush()
		}
	}
}

// gateway serves the real handler with one route "m" over anthropic
// targets at the given upstream URLs.
type gateway struct {
	*httptest.Server
	mu   sync.Mutex
	recs []exchange.Record
}

func newGateway(t *testing.T, urls ...string) *gateway {
	t.Setenv(sdkKeyEnv, sdkKey)
	var b strings.Builder
	b.WriteString("defaults: {backoff_base: 1ms, backoff_max: 2ms, attempts: 1}\nproviders:\n")
	for i, u := range urls {
		b.WriteString("  a" + string(rune('0'+i)) + ": {kind: anthropic, base_url: \"" + u + "\", keys: [{env: " + sdkKeyEnv + "}]}\n")
	}
	b.WriteString("routes:\n  m:\n    targets:\n")
	for i := range urls {
		b.WriteString("      - {provider: a" + string(rune('0'+i)) + ", model: claude-test-" + string(rune('0'+i)) + "}\n")
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

func (g *gateway) records() []exchange.Record {
	g.mu.Lock()
	defer g.mu.Unlock()
	return append([]exchange.Record(nil), g.recs...)
}

func (g *gateway) sdk() openai.Client {
	return openai.NewClient(option.WithBaseURL(g.URL+"/v1"), option.WithAPIKey("sk-client"), option.WithMaxRetries(0))
}

func TestSDKStreamedToolCallReassembles(t *testing.T) {
	up := newUpstream(t, sse(fixture(t, "tool_use.sse")))
	g := newGateway(t, up.URL)
	client := g.sdk()
	stream := client.Chat.Completions.NewStreaming(context.Background(), openai.ChatCompletionNewParams{
		Model:             "m",
		Messages:          []openai.ChatCompletionMessageParamUnion{openai.SystemMessage("be brief"), openai.UserMessage("weather in Paris and Oslo?")},
		Tools:             []openai.ChatCompletionToolUnionParam{openai.ChatCompletionFunctionTool(shared.FunctionDefinitionParam{Name: "get_weather", Parameters: shared.FunctionParameters{"type": "object", "properties": map[string]any{"location": map[string]any{"type": "string"}}}})},
		ToolChoice:        openai.ChatCompletionToolChoiceOptionUnionParam{OfAuto: openai.String("required")},
		ParallelToolCalls: openai.Bool(false),
		StreamOptions:     openai.ChatCompletionStreamOptionsParam{IncludeUsage: openai.Bool(true)},
	})
	var acc openai.ChatCompletionAccumulator
	for stream.Next() {
		acc.AddChunk(stream.Current())
	}
	if err := stream.Err(); err != nil {
		t.Fatalf("stream error: %v", err)
	}
	msg := acc.Choices[0].Message
	if msg.Content != "Let me check both cities." {
		t.Errorf("content = %q", msg.Content)
	}
	calls := msg.ToolCalls
	if len(calls) != 2 || calls[0].ID != "toolu_01T1x1fJ34qAmk2tNTrN7Up6" || calls[0].Function.Name != "get_weather" ||
		calls[0].Function.Arguments != `{"location": "Paris"}` || calls[1].ID != "toolu_02Abc" || calls[1].Function.Arguments != `{"location": "Oslo"}` {
		t.Fatalf("tool calls = %+v", calls)
	}
	if acc.Choices[0].FinishReason != "tool_calls" || acc.Usage.PromptTokens != 472 || acc.Usage.CompletionTokens != 89 {
		t.Errorf("finish=%q usage=%+v", acc.Choices[0].FinishReason, acc.Usage)
	}
	if acc.ID != "chatcmpl-msg_014p7gG3wDgGV9EUtLvnow3U" || acc.Model != "claude-sonnet-4-5-20250929" {
		t.Errorf("id %q model %q", acc.ID, acc.Model)
	}
	up.mu.Lock()
	if k := up.hdrs[0].Get("x-api-key"); k != sdkKey {
		t.Errorf("upstream x-api-key = %q, want the configured key", k)
	}
	up.mu.Unlock()
	var sent map[string]any
	if err := json.Unmarshal(up.body(0), &sent); err != nil {
		t.Fatal(err)
	}
	tc, _ := json.Marshal(sent["tool_choice"])
	if string(tc) != `{"disable_parallel_tool_use":true,"type":"any"}` || sent["model"] != "claude-test-0" || sent["stream"] != true {
		t.Errorf("upstream request: %s", up.body(0))
	}
}

func TestSDKStreamedTextWithCachedUsage(t *testing.T) {
	up := newUpstream(t, sse(fixture(t, "cached.sse")))
	g := newGateway(t, up.URL)
	client := g.sdk()
	stream := client.Chat.Completions.NewStreaming(context.Background(), openai.ChatCompletionNewParams{
		Model:         "m",
		Messages:      []openai.ChatCompletionMessageParamUnion{openai.UserMessage("hi")},
		StreamOptions: openai.ChatCompletionStreamOptionsParam{IncludeUsage: openai.Bool(true)},
	})
	var acc openai.ChatCompletionAccumulator
	for stream.Next() {
		acc.AddChunk(stream.Current())
	}
	if err := stream.Err(); err != nil {
		t.Fatalf("stream error: %v", err)
	}
	if acc.Choices[0].Message.Content != "Cut short" || acc.Choices[0].FinishReason != "length" {
		t.Errorf("content %q finish %q", acc.Choices[0].Message.Content, acc.Choices[0].FinishReason)
	}
	if acc.Usage.PromptTokens != 2012 || acc.Usage.CompletionTokens != 3 || acc.Usage.PromptTokensDetails.CachedTokens != 1800 {
		t.Errorf("usage = %+v", acc.Usage)
	}
	// The record is written after the stream's last byte; the SDK stops at [DONE].
	var recs []exchange.Record
	for deadline := time.Now().Add(5 * time.Second); len(recs) == 0 && time.Now().Before(deadline); time.Sleep(5 * time.Millisecond) {
		recs = g.records()
	}
	if len(recs) != 1 || recs[0].InputTokens != 2012 || recs[0].OutputTokens != 3 || recs[0].CachedTokens != 1800 || recs[0].CacheWriteTokens != 200 || recs[0].Estimated {
		t.Errorf("usage record = %+v", recs)
	}
}

func TestSDKNonStreamingText(t *testing.T) {
	up := newUpstream(t, func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, `{"id":"msg_ns","type":"message","role":"assistant","model":"claude-x","content":[{"type":"text","text":"Bonjour"}],"stop_reason":"end_turn","stop_sequence":null,"usage":{"input_tokens":7,"output_tokens":2}}`)
	})
	g := newGateway(t, up.URL)
	client := g.sdk()
	resp, err := client.Chat.Completions.New(context.Background(), openai.ChatCompletionNewParams{
		Model: "m", Messages: []openai.ChatCompletionMessageParamUnion{openai.UserMessage("hi")},
	})
	if err != nil {
		t.Fatal(err)
	}
	if resp.Choices[0].Message.Content != "Bonjour" || resp.Choices[0].FinishReason != "stop" || resp.Usage.TotalTokens != 9 || resp.ID != "chatcmpl-msg_ns" {
		t.Errorf("response = %+v", resp)
	}
}

func TestSDKMidStreamErrorEventSurfacesAsError(t *testing.T) {
	up := newUpstream(t, sse(fixture(t, "error_midstream.sse")))
	second := newUpstream(t, sse(fixture(t, "text.sse")))
	g := newGateway(t, up.URL, second.URL)
	client := g.sdk()
	stream := client.Chat.Completions.NewStreaming(context.Background(), openai.ChatCompletionNewParams{
		Model: "m", Messages: []openai.ChatCompletionMessageParamUnion{openai.UserMessage("tell a story")},
	})
	var text strings.Builder
	finished := false
	for stream.Next() {
		if c := stream.Current(); len(c.Choices) > 0 {
			text.WriteString(c.Choices[0].Delta.Content)
			finished = finished || c.Choices[0].FinishReason != ""
		}
	}
	err := stream.Err()
	var se *ssestream.StreamError
	if !errors.As(err, &se) {
		t.Fatalf("SDK finished without an error (silent truncation); err = %v, text %q", err, text.String())
	}
	if !strings.Contains(err.Error(), "interrupted") || !strings.Contains(err.Error(), "overloaded") {
		t.Errorf("error does not say interrupted (overloaded): %v", err)
	}
	if finished || text.String() != "Once upon a time" {
		t.Errorf("text %q finished %v", text.String(), finished)
	}
	if second.hits.Load() != 0 {
		t.Error("the gateway switched provider after the first token")
	}
}

func TestSDKErrorEventBeforeFirstTokenFallsBack(t *testing.T) {
	up := newUpstream(t, sse([]byte(strings.Join([]string{
		"event: message_start\n" + `data: {"type":"message_start","message":{"id":"msg_x","type":"message","role":"assistant","content":[],"model":"claude-x","stop_reason":null,"stop_sequence":null,"usage":{"input_tokens":10,"output_tokens":1}}}` + "\n\n",
		"event: ping\ndata: {\"type\": \"ping\"}\n\n",
		"event: error\n" + `data: {"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}` + "\n\n",
	}, ""))))
	second := newUpstream(t, sse(fixture(t, "text.sse")))
	g := newGateway(t, up.URL, second.URL)
	client := g.sdk()
	stream := client.Chat.Completions.NewStreaming(context.Background(), openai.ChatCompletionNewParams{
		Model: "m", Messages: []openai.ChatCompletionMessageParamUnion{openai.UserMessage("hi")},
	})
	var acc openai.ChatCompletionAccumulator
	for stream.Next() {
		acc.AddChunk(stream.Current())
	}
	if err := stream.Err(); err != nil {
		t.Fatalf("stream error: %v", err)
	}
	if got := acc.Choices[0].Message.Content; got != "Hello, \"world\"\n\tcafé <b> & \\ 😀!" {
		t.Errorf("content = %q", got)
	}
	if up.hits.Load() != 1 || second.hits.Load() != 1 {
		t.Errorf("hits first=%d second=%d, want a fallback to the second", up.hits.Load(), second.hits.Load())
	}
}

func TestSDKUnsupportedFeatureIsRejectedWithoutCallingUpstream(t *testing.T) {
	up := newUpstream(t, sse(fixture(t, "text.sse")))
	g := newGateway(t, up.URL)
	client := g.sdk()
	_, err := client.Chat.Completions.New(context.Background(), openai.ChatCompletionNewParams{
		Model: "m", Messages: []openai.ChatCompletionMessageParamUnion{openai.UserMessage("hi")}, N: openai.Int(3),
	})
	var apiErr *openai.Error
	if !errors.As(err, &apiErr) || apiErr.StatusCode != 400 || apiErr.Param != "n" || !strings.Contains(apiErr.Message, "a0/claude-test-0") {
		t.Fatalf("err = %v, want a 400 naming param n and the target", err)
	}
	if up.hits.Load() != 0 {
		t.Error("the upstream was called")
	}
}
