package server_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"

	anthropic "github.com/anthropics/anthropic-sdk-go/v2"
	"github.com/aws/aws-sdk-go-v2/aws/protocol/eventstream"
)

// A Claude Code style Messages request served by Claude on Bedrock
// (Converse) with nothing dropped, and failing over from Bedrock to
// Anthropic before the first token. The Bedrock upstream speaks the real
// event-stream framing; the client is the official Anthropic SDK.

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

// converseEvents writes ConverseStream events ({type, payload}; a type
// starting with "!" is an exception) in the event-stream framing.
func converseEvents(w http.ResponseWriter, evs ...[2]string) {
	w.Header().Set("Content-Type", "application/vnd.amazon.eventstream")
	w.Header().Set("x-amzn-RequestId", "7c1e5a2f-0b3d-4e6f-8a9b-1c2d3e4f5a6b")
	enc := eventstream.NewEncoder()
	for _, e := range evs {
		var m eventstream.Message
		if typ, ok := strings.CutPrefix(e[0], "!"); ok {
			m.Headers.Set(":message-type", eventstream.StringValue("exception"))
			m.Headers.Set(":exception-type", eventstream.StringValue(typ))
		} else {
			m.Headers.Set(":message-type", eventstream.StringValue("event"))
			m.Headers.Set(":event-type", eventstream.StringValue(e[0]))
		}
		m.Headers.Set(":content-type", eventstream.StringValue("application/json"))
		m.Payload = []byte(e[1])
		enc.Encode(w, m)
		w.(http.Flusher).Flush()
	}
}

// bedrockThinkingAnswer is Claude on Bedrock thinking (text, then its
// signature), a redacted reasoning block, text and a tool call.
func bedrockThinkingAnswer(w http.ResponseWriter) {
	converseEvents(w,
		[2]string{"messageStart", `{"role":"assistant"}`},
		[2]string{"contentBlockDelta", `{"contentBlockIndex":0,"delta":{"reasoningContent":{"text":"b.go may hold it"}}}`},
		[2]string{"contentBlockDelta", `{"contentBlockIndex":0,"delta":{"reasoningContent":{"text":" instead."}}}`},
		[2]string{"contentBlockDelta", `{"contentBlockIndex":0,"delta":{"reasoningContent":{"signature":"ErUBCkYICBgCIkD+bedrock/sig=="}}}`},
		[2]string{"contentBlockStop", `{"contentBlockIndex":0}`},
		[2]string{"contentBlockDelta", `{"contentBlockIndex":1,"delta":{"reasoningContent":{"redactedContent":"BQYHCA=="}}}`},
		[2]string{"contentBlockStop", `{"contentBlockIndex":1}`},
		[2]string{"contentBlockDelta", `{"contentBlockIndex":2,"delta":{"text":"Reading b.go."}}`},
		[2]string{"contentBlockStop", `{"contentBlockIndex":2}`},
		[2]string{"contentBlockStart", `{"contentBlockIndex":3,"start":{"toolUse":{"toolUseId":"tooluse_2","name":"Read"}}}`},
		[2]string{"contentBlockDelta", `{"contentBlockIndex":3,"delta":{"toolUse":{"input":"{\"path\":\"b.go\"}"}}}`},
		[2]string{"contentBlockStop", `{"contentBlockIndex":3}`},
		[2]string{"messageStop", `{"stopReason":"tool_use"}`},
		[2]string{"metadata", `{"usage":{"inputTokens":100,"outputTokens":50,"totalTokens":2450,"cacheReadInputTokens":2000,"cacheWriteInputTokens":300},"metrics":{"latencyMs":900}}`},
	)
}

// claudeCodeParams is a Claude Code style request: adaptive thinking, a
// cached system prompt and tool, a PDF, an earlier turn with signed and
// redacted thinking and a tool call, and a failed tool result.
func claudeCodeParams() anthropic.MessageNewParams {
	cc := anthropic.NewCacheControlEphemeralParam()
	result := anthropic.NewToolResultBlock("tooluse_1", "no such file", true)
	result.OfToolResult.CacheControl = cc
	return anthropic.MessageNewParams{Model: "claude", MaxTokens: 32000,
		Thinking: anthropic.ThinkingConfigParamUnion{OfAdaptive: &anthropic.ThinkingConfigAdaptiveParam{}},
		System:   []anthropic.TextBlockParam{{Text: "You are Claude Code.", CacheControl: cc}},
		Tools: []anthropic.ToolUnionParam{{OfTool: &anthropic.ToolParam{Name: "Read", Description: anthropic.String("Read a file"), CacheControl: cc,
			InputSchema: anthropic.ToolInputSchemaParam{Properties: map[string]any{"path": map[string]any{"type": "string"}}}}}},
		Messages: []anthropic.MessageParam{
			anthropic.NewUserMessage(anthropic.NewDocumentBlock(anthropic.Base64PDFSourceParam{Data: "JVBERi0xLjQK"}),
				anthropic.NewTextBlock("Summarise the spec, then read a.go")),
			anthropic.NewAssistantMessage(anthropic.NewThinkingBlock("EqQBCkYIBxgCKkB+anthropic/sig==", "The spec first."),
				anthropic.NewRedactedThinkingBlock("AQIDBA=="), anthropic.NewTextBlock("Reading a.go."),
				anthropic.NewToolUseBlock("tooluse_1", map[string]any{"path": "a.go"}, "Read")),
			anthropic.NewUserMessage(result),
		}}
}

func TestClaudeCodeRequestServedByClaudeOnBedrockLosesNothing(t *testing.T) {
	bed := newUpstream(t, func(w http.ResponseWriter, _ *http.Request, _ []byte, _ int) { bedrockThinkingAnswer(w) })
	anth := newUpstream(t, anthropicOK)
	g := newGateway(t, claudeOnBedrock(t, bed.URL, anth.URL))
	client := g.anthropicSDK()
	params := claudeCodeParams()
	var raw *http.Response
	m := accumulate(t, client.Messages.NewStreaming(context.Background(), params, optionInto(&raw)))
	if raw.Header.Get("x-gateway-provider") != "br" || raw.Header.Get("x-gateway-dropped-features") != "" || anth.hits.Load() != 0 {
		t.Fatalf("provider %q, dropped %q, anthropic hits %d", raw.Header.Get("x-gateway-provider"), raw.Header.Get("x-gateway-dropped-features"), anth.hits.Load())
	}

	// Converse got all of it.
	var sent struct {
		System   []map[string]any
		Messages []struct {
			Role    string
			Content []map[string]any
		}
		ToolConfig struct{ Tools []map[string]any }
		Additional json.RawMessage `json:"additionalModelRequestFields"`
	}
	if err := json.Unmarshal(bed.body(0), &sent); err != nil {
		t.Fatal(err)
	}
	js := func(v any) string { b, _ := json.Marshal(v); return string(b) }
	checks := map[string]string{
		"thinking config":  js(json.RawMessage(sent.Additional)),
		"system":           js(sent.System),
		"tools":            js(sent.ToolConfig.Tools),
		"document":         js(sent.Messages[0].Content[0]),
		"signed thinking":  js(sent.Messages[1].Content[0]),
		"redacted":         js(sent.Messages[1].Content[1]),
		"failed tool call": js(sent.Messages[2].Content),
	}
	want := map[string]string{
		"thinking config":  `{"thinking":{"type":"adaptive"}}`,
		"system":           `[{"text":"You are Claude Code."},{"cachePoint":{"type":"default"}}]`,
		"tools":            `[{"toolSpec":{"description":"Read a file","inputSchema":{"json":{"properties":{"path":{"type":"string"}},"type":"object"}},"name":"Read"}},{"cachePoint":{"type":"default"}}]`,
		"document":         `{"document":{"format":"pdf","name":"document-1","source":{"bytes":"JVBERi0xLjQK"}}}`,
		"signed thinking":  `{"reasoningContent":{"reasoningText":{"signature":"EqQBCkYIBxgCKkB+anthropic/sig==","text":"The spec first."}}}`,
		"redacted":         `{"reasoningContent":{"redactedContent":"AQIDBA=="}}`,
		"failed tool call": `[{"toolResult":{"content":[{"text":"no such file"}],"status":"error","toolUseId":"tooluse_1"}},{"cachePoint":{"type":"default"}}]`,
	}
	for k, w := range want {
		if checks[k] != w {
			t.Errorf("converse %s\n got %s\nwant %s", k, checks[k], w)
		}
	}

	// Bedrock's reasoning came back as a thinking block with its signature,
	// its redacted reasoning as redacted_thinking.
	if len(m.Content) != 4 || m.Content[0].Type != "thinking" || m.Content[0].Thinking != "b.go may hold it instead." ||
		m.Content[0].Signature != "ErUBCkYICBgCIkD+bedrock/sig==" || m.Content[1].Type != "redacted_thinking" || m.Content[1].Data != "BQYHCA==" ||
		m.Content[2].Text != "Reading b.go." || m.Content[3].Name != "Read" || m.StopReason != "tool_use" ||
		m.Usage.CacheReadInputTokens != 2000 || m.Usage.CacheCreationInputTokens != 300 {
		t.Fatalf("message = %s", m.RawJSON())
	}

	// The next turn sends it back: Bedrock gets its own signature and
	// bytes unchanged.
	params.Messages = append(params.Messages, m.ToParam(), anthropic.NewUserMessage(anthropic.NewToolResultBlock("tooluse_2", "package b", false)))
	accumulate(t, client.Messages.NewStreaming(context.Background(), params))
	if b := string(bed.body(1)); !strings.Contains(b, `{"reasoningContent":{"reasoningText":{"signature":"ErUBCkYICBgCIkD+bedrock/sig==","text":"b.go may hold it instead."}}},{"reasoningContent":{"redactedContent":"BQYHCA=="}}`) {
		t.Errorf("second turn = %s", b)
	}
}

// The raw stream: the thinking arrives as thinking_delta events and its
// signature as a signature_delta, as Anthropic itself sends them.
func TestClaudeOnBedrockStreamsSignatureDeltas(t *testing.T) {
	bed := newUpstream(t, func(w http.ResponseWriter, _ *http.Request, _ []byte, _ int) { bedrockThinkingAnswer(w) })
	g := newGateway(t, claudeOnBedrock(t, bed.URL, "http://127.0.0.1:1"))
	resp := g.postMessages(t, `{"model":"claude","max_tokens":4096,"stream":true,"thinking":{"type":"enabled","budget_tokens":2048},"messages":[{"role":"user","content":"b.go?"}]}`)
	body := readAll(t, resp.Body)
	for _, want := range []string{
		`"content_block":{"type":"thinking","thinking":"","signature":""}`,
		`"delta":{"type":"thinking_delta","thinking":"b.go may hold it"}`,
		`"delta":{"type":"signature_delta","signature":"ErUBCkYICBgCIkD+bedrock/sig=="}`,
		`"content_block":{"type":"redacted_thinking","data":"BQYHCA=="}`,
	} {
		if !strings.Contains(body, want) {
			t.Errorf("stream lacks %s:\n%s", want, body)
		}
	}
	if b := string(bed.body(0)); !strings.Contains(b, `"additionalModelRequestFields":{"thinking":{"budget_tokens":2048,"type":"enabled"}}`) {
		t.Errorf("converse request = %s", b)
	}
}

// Bedrock fails before the first token (a throttling exception in the
// stream): the same request goes to Anthropic, which gets the client's own
// bytes (thinking, signatures and all), and the client its answer.
func TestClaudeCodeRequestFailsOverFromBedrockToAnthropic(t *testing.T) {
	bed := newUpstream(t, func(w http.ResponseWriter, _ *http.Request, _ []byte, _ int) {
		converseEvents(w, [2]string{"messageStart", `{"role":"assistant"}`}, [2]string{"!throttlingException", `{"message":"Too many tokens, please wait before trying again."}`})
	})
	anth := newUpstream(t, anthropicOK)
	g := newGateway(t, claudeOnBedrock(t, bed.URL, anth.URL))
	var raw *http.Response
	client := g.anthropicSDK()
	m := accumulate(t, client.Messages.NewStreaming(context.Background(), claudeCodeParams(), optionInto(&raw)))
	if raw.Header.Get("x-gateway-provider") != "an" || raw.Header.Get("x-gateway-attempts") != "2" || m.Content[0].Text != "Hello from Claude" || bed.hits.Load() != 1 {
		t.Fatalf("provider %q attempts %q bedrock hits %d: %s", raw.Header.Get("x-gateway-provider"), raw.Header.Get("x-gateway-attempts"), bed.hits.Load(), m.RawJSON())
	}
	sent := string(anth.body(0))
	for _, want := range []string{`"model":"claude-sonnet-4-5-20250929"`, `"thinking":{"type":"adaptive"}`, `"signature":"EqQBCkYIBxgCKkB+anthropic/sig=="`,
		`"data":"AQIDBA=="`, `"is_error":true`, `"media_type":"application/pdf"`} {
		if !strings.Contains(sent, want) {
			t.Errorf("anthropic got no %s: %s", want, sent)
		}
	}
	if r := g.waitRecs(t, 1); len(r) != 1 || len(r[0].Attempts) != 2 || r[0].Attempts[0].Category != "rate_limited" {
		t.Errorf("records %+v", r)
	}
}
