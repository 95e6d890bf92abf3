package server_test

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"sync"
	"testing"

	anthropic "github.com/anthropics/anthropic-sdk-go/v2"
	"github.com/aws/aws-sdk-go-v2/aws/protocol/eventstream"
	"github.com/tidwall/gjson"
)

// A Claude Code style Messages request served by Claude on Bedrock
// through InvokeModelWithResponseStream, with no translate_without on the
// route, and failing over from Bedrock to Anthropic before the first
// token. The Bedrock upstream speaks the real event-stream framing (chunk
// events carrying Anthropic's own events); the clients are raw requests as
// Claude Code sends them and the official Anthropic SDK.

// claudeOnBedrock is a Bedrock target whose model is Anthropic's (an
// inference profile), before an Anthropic target.
func claudeOnBedrock(t *testing.T, bedrockURL, anthropicURL string) string {
	t.Helper()
	t.Setenv("AWS_ACCESS_KEY_ID", "AKIDTEST")
	t.Setenv("AWS_SECRET_ACCESS_KEY", "secret")
	t.Setenv("AWS_REGION", "us-east-1")
	t.Setenv(msgKeyEnv, msgKey)
	return fmt.Sprintf(`defaults: {attempts: 1, backoff_base: 1ms, backoff_max: 2ms}
providers:
  br: {kind: bedrock, region: us-east-1, endpoint: %q}
  an: {kind: anthropic, base_url: %q, keys: [{env: %s}]}
routes:
  claude:
    targets:
      - {provider: br, model: "us.anthropic.claude-sonnet-4-5-20250929-v1:0", max_tokens: 1024}
      - {provider: an, model: claude-sonnet-4-5-20250929, max_tokens: 1024}
`, bedrockURL, anthropicURL, msgKeyEnv)
}

// bedrockEvents writes event-stream frames: chunk events carrying each
// data line of sse (an Anthropic stream, as the API writes it), the last
// one with Bedrock's invocation metrics added, then the exception named by
// exception ("" for none), which ends the stream early when cut is set.
func bedrockEvents(w http.ResponseWriter, sse, exception string, cut int) {
	w.Header().Set("Content-Type", "application/vnd.amazon.eventstream")
	w.Header().Set("x-amzn-RequestId", "7c1e5a2f-0b3d-4e6f-8a9b-1c2d3e4f5a6b")
	enc := eventstream.NewEncoder()
	write := func(m eventstream.Message) {
		m.Headers.Set(":content-type", eventstream.StringValue("application/json"))
		enc.Encode(w, m)
		w.(http.Flusher).Flush()
	}
	var datas []string
	for _, line := range strings.Split(sse, "\n") {
		if d, ok := strings.CutPrefix(line, "data: "); ok {
			datas = append(datas, d)
		}
	}
	if cut > 0 {
		datas = datas[:cut]
	}
	for i, d := range datas {
		if i == len(datas)-1 && cut == 0 && exception == "" {
			d = strings.TrimSuffix(d, "}") + `,"amazon-bedrock-invocationMetrics":{"inputTokenCount":25,"outputTokenCount":15,"invocationLatency":812,"firstByteLatency":211}}`
		}
		var m eventstream.Message
		m.Headers.Set(":message-type", eventstream.StringValue("event"))
		m.Headers.Set(":event-type", eventstream.StringValue("chunk"))
		m.Payload = []byte(`{"bytes":"` + base64.StdEncoding.EncodeToString([]byte(d)) + `"}`)
		write(m)
	}
	if exception != "" {
		var m eventstream.Message
		m.Headers.Set(":message-type", eventstream.StringValue("exception"))
		m.Headers.Set(":exception-type", eventstream.StringValue(exception))
		m.Payload = []byte(`{"message":"Too many tokens, please wait before trying again."}`)
		write(m)
	}
}

// bedrockUpstream is a fake Bedrock runtime that records the paths it was
// called on and answers with answer.
type bedrockUpstream struct {
	*upstream
	mu    sync.Mutex
	paths []string
}

func newBedrockUpstream(t *testing.T, answer func(w http.ResponseWriter, r *http.Request)) *bedrockUpstream {
	b := &bedrockUpstream{}
	b.upstream = newUpstream(t, func(w http.ResponseWriter, r *http.Request, _ []byte, _ int) {
		b.mu.Lock()
		b.paths = append(b.paths, r.URL.EscapedPath())
		b.mu.Unlock()
		answer(w, r)
	})
	return b
}

func (b *bedrockUpstream) calls() []string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return slices.Clone(b.paths)
}

// claudeCodeRequest is what Claude Code sends first-party on every turn:
// adaptive thinking with display, context_management, output_config,
// cached system prompt and tools, a PDF, an earlier turn with signed and
// redacted thinking and a tool call, and a failed tool result.
const claudeCodeRequest = `{"model":"claude","max_tokens":32000,"stream":true,` +
	`"messages":[{"role":"user","content":[{"type":"document","source":{"type":"base64","media_type":"application/pdf","data":"JVBERi0xLjQK"}},{"type":"text","text":"Summarise the spec, then read a.go"}]},` +
	`{"role":"assistant","content":[{"type":"thinking","thinking":"The spec first.","signature":"EqQBCkYIBxgCKkB+anthropic/sig=="},{"type":"redacted_thinking","data":"AQIDBA=="},{"type":"text","text":"Reading a.go."},{"type":"tool_use","id":"toolu_1","name":"Read","input":{"path":"a.go"}}]},` +
	`{"role":"user","content":[{"type":"tool_result","tool_use_id":"toolu_1","content":"no such file","is_error":true,"cache_control":{"type":"ephemeral"}}]}],` +
	`"system":[{"type":"text","text":"You are Claude Code.","cache_control":{"type":"ephemeral","ttl":"1h"}}],` +
	`"tools":[{"name":"Read","description":"Read a file","input_schema":{"type":"object","properties":{"path":{"type":"string"}}},"cache_control":{"type":"ephemeral"}}],` +
	`"thinking":{"type":"adaptive","display":"omitted"},"context_management":{"edits":[{"type":"clear_thinking_20251015","keep":"all"}]},"output_config":{"effort":"high"}}`

const claudeCodeBetas = "claude-code-20250219,interleaved-thinking-2025-05-14,context-management-2025-06-27,advanced-tool-use-2025-11-20"

func TestClaudeCodeRequestServedByClaudeOnBedrockInvokeModel(t *testing.T) {
	answer := msgText("Hello", " from", " Bedrock")
	bed := newBedrockUpstream(t, func(w http.ResponseWriter, _ *http.Request) { bedrockEvents(w, answer, "", 0) })
	anth := newUpstream(t, anthropicOK)
	g := newGateway(t, claudeOnBedrock(t, bed.URL, anth.URL))
	resp := g.postMessages(t, claudeCodeRequest, "anthropic-beta", claudeCodeBetas)
	got := readAll(t, resp.Body)
	if resp.StatusCode != 200 || resp.Header.Get("x-gateway-provider") != "br" || anth.hits.Load() != 0 {
		t.Fatalf("status %d provider %q anthropic hits %d:\n%s", resp.StatusCode, resp.Header.Get("x-gateway-provider"), anth.hits.Load(), got)
	}
	// Anthropic's own frames, as Anthropic would send them (Bedrock's
	// invocation metrics stay behind).
	if got != answer {
		t.Errorf("relayed stream\n got %q\nwant %q", got, answer)
	}
	if p := bed.calls(); len(p) != 1 || p[0] != "/model/us.anthropic.claude-sonnet-4-5-20250929-v1%3A0/invoke-with-response-stream" {
		t.Fatalf("bedrock calls %q", p)
	}
	const dropped = "anthropic-beta:claude-code-20250219,anthropic-beta:context-management-2025-06-27,context_management,output_config,thinking.display"
	if h := resp.Header.Get("x-gateway-dropped-features"); h != dropped {
		t.Errorf("x-gateway-dropped-features = %q", h)
	}

	// The client's bytes: what the model reads and what it must get back
	// as it sent it.
	sent, client := bed.body(0), []byte(claudeCodeRequest)
	for _, path := range []string{"messages", "system", "tools", "max_tokens"} {
		if g, w := gjson.GetBytes(sent, path).Raw, gjson.GetBytes(client, path).Raw; g != w {
			t.Errorf("%s\n got %s\nwant %s", path, g, w)
		}
	}
	for path, want := range map[string]string{"thinking": `{"type":"adaptive"}`, "anthropic_version": `"bedrock-2023-05-31"`,
		"anthropic_beta": `["interleaved-thinking-2025-05-14","tool-search-tool-2025-10-19"]`} {
		if g := gjson.GetBytes(sent, path).Raw; g != want {
			t.Errorf("%s = %s, want %s", path, g, want)
		}
	}
	for _, k := range []string{"model", "stream", "context_management", "output_config"} {
		if gjson.GetBytes(sent, k).Exists() {
			t.Errorf("bedrock got %s: %s", k, sent)
		}
	}
	r := g.waitRecs(t, 1)
	if len(r) != 1 || strings.Join(r[0].DroppedFeatures, ",") != dropped || r[0].InputTokens != 145 || r[0].CachedTokens != 100 ||
		r[0].OutputTokens != 15 || r[0].Outcome != "ok" {
		t.Errorf("record %+v", r)
	}
}

// The official SDK, without streaming, and with streaming: InvokeModel's
// message, and the stream's thinking with its signature, which the next
// turn sends back byte for byte.
func TestAnthropicSDKOverClaudeOnBedrockInvokeModel(t *testing.T) {
	thinking := msgStart("msg_bdrk_1", 25, 0, 0) +
		"event: content_block_start\ndata: {\"type\":\"content_block_start\",\"index\":0,\"content_block\":{\"type\":\"thinking\",\"thinking\":\"\",\"signature\":\"\"}}\n\n" +
		"event: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"index\":0,\"delta\":{\"type\":\"thinking_delta\",\"thinking\":\"b.go may hold it.\"}}\n\n" +
		"event: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"index\":0,\"delta\":{\"type\":\"signature_delta\",\"signature\":\"ErUBCkYICBgCIkD+bedrock/sig==\"}}\n\n" +
		"event: content_block_stop\ndata: {\"type\":\"content_block_stop\",\"index\":0}\n\n" +
		msgTextBlock(1, "Reading b.go.") + msgEnd("end_turn", "", 15)
	bed := newBedrockUpstream(t, func(w http.ResponseWriter, r *http.Request) {
		if strings.HasSuffix(r.URL.Path, "/invoke") {
			w.Header().Set("Content-Type", "application/json")
			w.Write([]byte(msgBody("Hello from Bedrock")))
			return
		}
		bedrockEvents(w, thinking, "", 0)
	})
	g := newGateway(t, claudeOnBedrock(t, bed.URL, "http://127.0.0.1:1"))
	client := g.anthropicSDK()
	params := anthropic.MessageNewParams{Model: "claude", MaxTokens: 2048,
		Thinking: anthropic.ThinkingConfigParamUnion{OfAdaptive: &anthropic.ThinkingConfigAdaptiveParam{}},
		Messages: []anthropic.MessageParam{anthropic.NewUserMessage(anthropic.NewTextBlock("b.go?"))}}
	whole, err := client.Messages.New(context.Background(), params)
	if err != nil || whole.Content[0].Text != "Hello from Bedrock" || whole.Usage.CacheReadInputTokens != 1800 {
		t.Fatalf("non-streaming %v: %v", err, whole)
	}
	m := accumulate(t, client.Messages.NewStreaming(context.Background(), params))
	if len(m.Content) != 2 || m.Content[0].Thinking != "b.go may hold it." || m.Content[0].Signature != "ErUBCkYICBgCIkD+bedrock/sig==" || m.Content[1].Text != "Reading b.go." {
		t.Fatalf("message %s", m.RawJSON())
	}
	params.Messages = append(params.Messages, m.ToParam(), anthropic.NewUserMessage(anthropic.NewTextBlock("and?")))
	accumulate(t, client.Messages.NewStreaming(context.Background(), params))
	if b := string(bed.body(2)); !strings.Contains(b, `"signature":"ErUBCkYICBgCIkD+bedrock/sig=="`) {
		t.Errorf("second turn = %s", b)
	}
	if p := bed.calls(); len(p) != 3 || !strings.HasSuffix(p[0], "/invoke") || !strings.HasSuffix(p[1], "/invoke-with-response-stream") {
		t.Errorf("bedrock calls %q", p)
	}
}

// Bedrock fails before the first token (a throttling exception in the
// stream): the same request goes to Anthropic, which gets the client's own
// bytes and betas, and the client its answer. Cut after the first token,
// the client gets an error, never a clean end.
func TestClaudeCodeRequestFailsOverFromBedrockToAnthropic(t *testing.T) {
	bed := newBedrockUpstream(t, func(w http.ResponseWriter, _ *http.Request) {
		bedrockEvents(w, msgText("never"), "throttlingException", 1)
	})
	anth := newUpstream(t, anthropicOK)
	g := newGateway(t, claudeOnBedrock(t, bed.URL, anth.URL))
	resp := g.postMessages(t, claudeCodeRequest, "anthropic-beta", claudeCodeBetas)
	got := readAll(t, resp.Body)
	if resp.Header.Get("x-gateway-provider") != "an" || resp.Header.Get("x-gateway-attempts") != "2" || got != msgText("Hello", " from", " Claude") ||
		resp.Header.Get("x-gateway-dropped-features") != "" {
		t.Fatalf("provider %q attempts %q dropped %q:\n%s", resp.Header.Get("x-gateway-provider"), resp.Header.Get("x-gateway-attempts"),
			resp.Header.Get("x-gateway-dropped-features"), got)
	}
	sent := anth.body(0)
	want := strings.Replace(claudeCodeRequest, `"model":"claude"`, `"model":"claude-sonnet-4-5-20250929"`, 1)
	if string(sent) != want {
		t.Errorf("anthropic got\n%s\nwant\n%s", sent, want)
	}
	if h := anth.header(0).Get("anthropic-beta"); h != claudeCodeBetas {
		t.Errorf("anthropic-beta = %q", h)
	}
	if r := g.waitRecs(t, 1); len(r) != 1 || len(r[0].Attempts) != 2 || r[0].Attempts[0].Category != "rate_limited" {
		t.Errorf("records %+v", r)
	}

	cut := newBedrockUpstream(t, func(w http.ResponseWriter, _ *http.Request) { bedrockEvents(w, msgText("Half", " an"), "", 4) })
	g = newGateway(t, claudeOnBedrock(t, cut.URL, anth.URL))
	hits := anth.hits.Load()
	resp = g.postMessages(t, claudeCodeRequest)
	got = readAll(t, resp.Body)
	if !strings.Contains(got, "event: error") || strings.Contains(got, "message_stop") || anth.hits.Load() != hits {
		t.Errorf("cut stream:\n%s", got)
	}
}

// count_tokens at a route whose first target is Claude on Bedrock is
// Bedrock's count: its CountTokens operation with the InvokeModel body,
// for the base model behind the inference profile, never the estimate.
func TestMessagesCountTokensOnClaudeOnBedrock(t *testing.T) {
	bed := newBedrockUpstream(t, func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.Write([]byte(`{"inputTokens":77}`))
	})
	g := newGateway(t, claudeOnBedrock(t, bed.URL, "http://127.0.0.1:1"))
	req, _ := http.NewRequest(http.MethodPost, g.URL+"/v1/messages/count_tokens?beta=true",
		strings.NewReader(`{"model":"claude","messages":[{"role":"user","content":"hi"}],"context_management":{"edits":[]}}`))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("anthropic-version", "2023-06-01")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	body := readAll(t, resp.Body)
	if resp.StatusCode != 200 || body != `{"input_tokens":77}` || resp.Header.Get("x-gateway-estimate") != "" {
		t.Fatalf("status %d %q: %s", resp.StatusCode, resp.Header.Get("x-gateway-estimate"), body)
	}
	if p := bed.calls(); len(p) != 1 || p[0] != "/model/anthropic.claude-sonnet-4-5-20250929-v1%3A0/count-tokens" {
		t.Errorf("bedrock calls %q", p)
	}
	var in struct {
		Input struct {
			InvokeModel struct{ Body []byte } `json:"invokeModel"`
		} `json:"input"`
	}
	if err := json.Unmarshal(bed.body(0), &in); err != nil || string(in.Input.InvokeModel.Body) !=
		`{"messages":[{"role":"user","content":"hi"}],"max_tokens":1,"anthropic_version":"bedrock-2023-05-31"}` {
		t.Errorf("count body %s (%v)", bed.body(0), err)
	}
}
