package bedrock_test

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"io"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"

	"github.com/tidwall/gjson"

	"github.com/llmgw/llmgw/pkg/config"
	"github.com/llmgw/llmgw/pkg/exchange"
	"github.com/llmgw/llmgw/pkg/gwerr"
	"github.com/llmgw/llmgw/pkg/ingress/messages"
	"github.com/llmgw/llmgw/pkg/provider"
	"github.com/llmgw/llmgw/pkg/provider/bedrock"
)

// Claude through InvokeModel and InvokeModelWithResponseStream: the fake
// answers with chunk events carrying Anthropic's own stream events, in the
// real event-stream framing.

// chunk is one chunk event of InvokeModelWithResponseStream: the
// Anthropic event's JSON, base64 in "bytes".
func chunk(data string) event {
	return ev("chunk", `{"bytes":"`+base64.StdEncoding.EncodeToString([]byte(data))+`"}`)
}

// Anthropic stream events, as Claude on Bedrock sends them.
const (
	evStart     = `{"type":"message_start","message":{"id":"msg_bdrk_01","type":"message","role":"assistant","model":"claude-sonnet-4-5-20250929","content":[],"stop_reason":null,"stop_sequence":null,"usage":{"input_tokens":40,"cache_creation_input_tokens":300,"cache_read_input_tokens":2000,"output_tokens":1}}}`
	evThinking  = `{"type":"content_block_start","index":0,"content_block":{"type":"thinking","thinking":"","signature":""}}`
	evThinkText = `{"type":"content_block_delta","index":0,"delta":{"type":"thinking_delta","thinking":"Look at a.go."}}`
	evSignature = `{"type":"content_block_delta","index":0,"delta":{"type":"signature_delta","signature":"EqQBCkYIBxgCKkB+bedrock/sig=="}}`
	evStop0     = `{"type":"content_block_stop","index":0}`
	evText      = `{"type":"content_block_start","index":1,"content_block":{"type":"text","text":""}}`
	evTextDelta = `{"type":"content_block_delta","index":1,"delta":{"type":"text_delta","text":"Hello from Bedrock"}}`
	evStop1     = `{"type":"content_block_stop","index":1}`
	evTool      = `{"type":"content_block_start","index":2,"content_block":{"type":"tool_use","id":"toolu_bdrk_01","name":"Read","input":{}}}`
	evToolArgs  = `{"type":"content_block_delta","index":2,"delta":{"type":"input_json_delta","partial_json":"{\"path\":\"b.go\"}"}}`
	evStop2     = `{"type":"content_block_stop","index":2}`
	evDelta     = `{"type":"message_delta","delta":{"stop_reason":"end_turn","stop_sequence":null},"usage":{"output_tokens":25}}`
	evEnd       = `{"type":"message_stop","amazon-bedrock-invocationMetrics":{"inputTokenCount":40,"outputTokenCount":25,"invocationLatency":900,"firstByteLatency":300,"cacheReadInputTokenCount":2000,"cacheWriteInputTokenCount":300}}`
)

func claudeChunks() []event {
	var out []event
	for _, e := range []string{evStart, evThinking, evThinkText, evSignature, evStop0, evText, evTextDelta, evStop1, evTool, evToolArgs, evStop2, evDelta, evEnd} {
		out = append(out, chunk(e))
	}
	return out
}

// claudeCodeBody is a first-party Claude Code style request: adaptive
// thinking with display, context_management, output_config, a cached
// system prompt and tool, a PDF, an earlier turn with signed thinking.
const claudeCodeBody = `{"model":"claude","max_tokens":32000,"stream":true,` +
	`"messages":[{"role":"user","content":[{"type":"document","source":{"type":"base64","media_type":"application/pdf","data":"JVBERi0xLjQK"},"cache_control":{"type":"ephemeral"}},{"type":"text","text":"Summarise, then read a.go"}]},` +
	`{"role":"assistant","content":[{"type":"thinking","thinking":"The spec first.","signature":"EqQBCkYIBxgCKkB+anthropic/sig=="},{"type":"redacted_thinking","data":"AQIDBA=="},{"type":"tool_use","id":"toolu_1","name":"Read","input":{"path":"a.go"}}]},` +
	`{"role":"user","content":[{"type":"tool_result","tool_use_id":"toolu_1","content":"package a","cache_control":{"type":"ephemeral","ttl":"1h"}}]}],` +
	`"system":[{"type":"text","text":"You are Claude Code.","cache_control":{"type":"ephemeral"}}],` +
	`"tools":[{"name":"Read","description":"Read a file","input_schema":{"type":"object","properties":{"path":{"type":"string"}}},"cache_control":{"type":"ephemeral"}},{"name":"Grep","defer_loading":true,"input_schema":{"type":"object"}}],` +
	`"metadata":{"user_id":"u-1"},"tool_choice":{"type":"auto"},"stop_sequences":["END"],"top_k":40,"thinking":{"type":"adaptive","display":"summarized"},` +
	`"context_management":{"edits":[{"type":"clear_thinking_20251015","keep":"all"}]},"output_config":{"effort":"high"}}`

const claudeCodeBetas = "claude-code-20250219,interleaved-thinking-2025-05-14,context-management-2025-06-27,advanced-tool-use-2025-11-20"

// messagesCall decodes a Messages request through the Messages ingress
// into a Call at model (target br/model), with anthropic-beta betas; a
// body without max_tokens is a count_tokens request.
func messagesCall(t *testing.T, body, betas, model string) *provider.Call {
	t.Helper()
	hr := httptest.NewRequest("POST", "/v1/messages?beta=true", nil)
	if betas != "" {
		hr.Header.Set("anthropic-beta", betas)
	}
	rq := &exchange.Request{API: exchange.Messages}
	decode := messages.Ingress{}.Decode
	if !strings.Contains(body, `"max_tokens"`) {
		decode = messages.Ingress{}.DecodeCount
	}
	if err := decode(hr, []byte(body), rq); err != nil {
		t.Fatalf("decode: %v", err)
	}
	return &provider.Call{Req: rq, Step: config.Step{ID: "br/" + model, Provider: "br", Model: model, MaxTokens: 4096}}
}

// drainRaw reads a stream to its end: the raw frames, and the error that
// ended it (nil for io.EOF).
func drainRaw(s provider.Stream) (frames []string, evs []exchange.Event, err error) {
	for {
		ev, err := s.Next()
		if err == io.EOF {
			return frames, evs, nil
		}
		if err != nil {
			return frames, evs, err
		}
		frames = append(frames, string(ev.Raw))
		evs = append(evs, ev)
	}
}

func TestClaudeMessagesGoToInvokeWithResponseStreamWithTheClientsBody(t *testing.T) {
	const profile = "us.anthropic.claude-sonnet-4-5-20250929-v1:0"
	f := newFake(t, reply{events: claudeChunks()})
	a := newAdapter(t, f)
	call := messagesCall(t, claudeCodeBody, claudeCodeBetas, profile)
	s, err := a.Send(context.Background(), call)
	if err != nil {
		t.Fatal(err)
	}
	frames, evs, err := drainRaw(s)
	if err != nil {
		t.Fatal(err)
	}
	reqs := f.requests()
	if len(reqs) != 1 || reqs[0].path != "/model/us.anthropic.claude-sonnet-4-5-20250929-v1%3A0/invoke-with-response-stream" {
		t.Fatalf("requests %+v", reqs)
	}
	sent := reqs[0].raw

	// Byte-exact: what the model reads, and what it must get back as it
	// sent it (signatures, redacted thinking, cache_control, documents).
	client := []byte(claudeCodeBody)
	for _, path := range []string{"messages", "system", "tools", "metadata", "max_tokens", "tool_choice", "stop_sequences", "top_k"} {
		if got, want := gjson.GetBytes(sent, path).Raw, gjson.GetBytes(client, path).Raw; got != want {
			t.Errorf("%s\n got %s\nwant %s", path, got, want)
		}
	}
	for _, k := range []string{"model", "stream", "context_management", "output_config", "thinking.display"} {
		if gjson.GetBytes(sent, k).Exists() {
			t.Errorf("bedrock got %s: %s", k, sent)
		}
	}
	if got := gjson.GetBytes(sent, "thinking").Raw; got != `{"type":"adaptive"}` {
		t.Errorf("thinking = %s", got)
	}
	if got := gjson.GetBytes(sent, "anthropic_beta").Raw; got != `["interleaved-thinking-2025-05-14","tool-search-tool-2025-10-19"]` {
		t.Errorf("anthropic_beta = %s", got)
	}
	if !strings.HasSuffix(string(sent), `,"anthropic_version":"bedrock-2023-05-31"}`) {
		t.Errorf("body = %s", sent)
	}
	dropped := call.Req.Trace.DroppedBy(call.Step.ID)
	slices.Sort(dropped)
	if want := []string{"anthropic-beta:claude-code-20250219", "anthropic-beta:context-management-2025-06-27", "context_management",
		"output_config", "thinking.display"}; !slices.Equal(dropped, want) {
		t.Errorf("dropped %q, want %q", dropped, want)
	}

	// The frames are Anthropic's, one per chunk; the invocation metrics
	// are Bedrock's and stay behind.
	want := []string{evStart, evThinking, evThinkText, evSignature, evStop0, evText, evTextDelta, evStop1, evTool, evToolArgs, evStop2, evDelta, `{"type":"message_stop"}`}
	if len(frames) != len(want) {
		t.Fatalf("%d frames: %q", len(frames), frames)
	}
	for i, w := range want {
		if ty := gjson.Get(w, "type").String(); frames[i] != "event: "+ty+"\ndata: "+w+"\n\n" {
			t.Errorf("frame %d = %q", i, frames[i])
		}
	}
	if evs[0].Flags&exchange.HasContent != 0 || evs[2].Flags&exchange.HasContent == 0 || evs[8].Flags&exchange.HasContent == 0 || evs[11].Flags&exchange.HasFinish == 0 ||
		evs[11].Finish != "stop" || evs[11].Stop != "end_turn" || evs[0].RawAPI != exchange.Messages {
		t.Errorf("flags %+v", evs)
	}
	if u := s.Usage(); u != (exchange.TokenUsage{Input: 2340, Output: 25, CacheRead: 2000, CacheWrite: 300}) {
		t.Errorf("usage %+v", u)
	}
}

// Every way a target names a Claude model goes to InvokeModel; other
// models and other APIs keep Converse.
func TestClaudeModelIDsChooseInvokeModel(t *testing.T) {
	for _, tc := range []struct {
		model, base string
		invoke      bool
	}{
		{"anthropic.claude-opus-4-5-20251101-v1:0", "", true},
		{"us.anthropic.claude-sonnet-4-5-20250929-v1:0", "", true},
		{"global.anthropic.claude-haiku-4-5-20251001-v1:0", "", true},
		{"arn:aws:bedrock:us-east-1:123456789012:inference-profile/eu.anthropic.claude-sonnet-4-5-20250929-v1:0", "", true},
		{"arn:aws:bedrock:us-east-1:123456789012:application-inference-profile/a1b2c3", "anthropic.claude-sonnet-4-5-20250929-v1:0", true},
		{"arn:aws:bedrock:us-east-1:123456789012:application-inference-profile/a1b2c3", "", false},
		{"amazon.nova-pro-v1:0", "", false},
	} {
		f := newFake(t, reply{events: claudeChunks()})
		a := newAdapter(t, f)
		call := messagesCall(t, `{"model":"c","max_tokens":10,"stream":true,"messages":[{"role":"user","content":"hi"}]}`, "", tc.model)
		if tc.base != "" {
			call.Step.Options = map[string]string{"base_model": tc.base}
		}
		if d := bedrock.Descriptor.Config.TargetSpeaks("messages", tc.model, call.Step.Options); d != tc.invoke {
			t.Errorf("%s: TargetSpeaks(messages) = %v", tc.model, d)
		}
		if bedrock.Descriptor.Config.TargetSpeaks("chat", tc.model, call.Step.Options) {
			t.Errorf("%s: speaks chat", tc.model)
		}
		s, err := a.Send(context.Background(), call)
		if err == nil {
			s.Close()
		}
		p := f.requests()[0].path
		if got := strings.HasSuffix(p, "/invoke-with-response-stream"); got != tc.invoke || strings.Contains(p, "converse") == tc.invoke {
			t.Errorf("%s (base %q): %s", tc.model, tc.base, p)
		}
	}
	// A chat request for Claude still goes through Converse.
	f := newFake(t, reply{events: concat(textEvents("hi"), stopEvents("end_turn", 1, 1))})
	a := newAdapter(t, f)
	s, err := a.Send(context.Background(), newCall(t, streamHi))
	if err != nil {
		t.Fatal(err)
	}
	s.Close()
	if p := f.requests()[0].path; p != streamPath(model) {
		t.Errorf("chat went to %s", p)
	}
}

func TestClaudeMessagesWithoutStreamGoToInvokeModel(t *testing.T) {
	const answer = `{"id":"msg_bdrk_02","type":"message","role":"assistant","model":"claude-sonnet-4-5-20250929","content":[{"type":"text","text":"Hi"}],"stop_reason":"max_tokens","stop_sequence":null,"usage":{"input_tokens":12,"cache_read_input_tokens":4,"output_tokens":3}}`
	f := newFake(t, reply{body: answer})
	a := newAdapter(t, f)
	call := messagesCall(t, `{"model":"c","max_tokens":9000,"messages":[{"role":"user","content":"hi"}]}`, "", model)
	call.Req.OutputCap = 100
	s, err := a.Send(context.Background(), call)
	if err != nil {
		t.Fatal(err)
	}
	frames, evs, err := drainRaw(s)
	if err != nil || len(frames) != 1 || frames[0] != answer || evs[0].Flags&exchange.Whole == 0 || evs[0].Finish != "length" {
		t.Fatalf("frames %q, %v", frames, err)
	}
	r := f.requests()[0]
	if r.path != "/model/anthropic.claude-3-5-haiku-20241022-v1%3A0/invoke" ||
		string(r.raw) != `{"max_tokens":100,"messages":[{"role":"user","content":"hi"}],"anthropic_version":"bedrock-2023-05-31"}` {
		t.Errorf("%s %s", r.path, r.raw)
	}
	if u := s.Usage(); u != (exchange.TokenUsage{Input: 16, Output: 3, CacheRead: 4}) {
		t.Errorf("usage %+v", u)
	}
}

// Errors by phase: the call's own (HTTP, x-amzn-ErrorType) as Converse's;
// an exception inside the stream before any content is retryable (the
// engine fails over), after content it interrupts; a stream that ends
// before message_stop is interrupted, never a clean end.
func TestClaudeInvokeErrorsByPhase(t *testing.T) {
	hi := `{"model":"c","max_tokens":10,"stream":true,"messages":[{"role":"user","content":"hi"}]}`
	for _, tc := range []struct {
		name    string
		rp      reply
		cat     gwerr.Category
		content bool // content was relayed before the error
	}{
		{"http throttling", reply{status: 429, errType: "ThrottlingException", body: `{"message":"Too many requests"}`}, gwerr.RateLimited, false},
		{"http validation", reply{status: 400, errType: "ValidationException", body: `{"message":"invalid beta flag"}`}, gwerr.InvalidRequest, false},
		{"http access denied", reply{status: 403, errType: "AccessDeniedException", body: `{"message":"no"}`}, gwerr.Unavailable, false},
		{"throttled in the stream", reply{events: []event{chunk(evStart), exc("throttlingException", "Too many tokens")}}, gwerr.RateLimited, false},
		{"model error after content", reply{events: []event{chunk(evStart), chunk(evText), chunk(evTextDelta), exc("modelStreamErrorException", "failed")}}, gwerr.Interrupted, true},
		{"cut", reply{events: []event{chunk(evStart), chunk(evText), chunk(evTextDelta)}}, gwerr.Interrupted, true},
		{"stop without a stop_reason", reply{events: []event{chunk(evStart), chunk(evEnd)}}, gwerr.Interrupted, false},
		{"error event", reply{events: []event{chunk(evStart), chunk(`{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}`)}}, gwerr.Overloaded, false},
	} {
		f := newFake(t, tc.rp)
		a := newAdapter(t, f)
		s, err := a.Send(context.Background(), messagesCall(t, hi, "", model))
		content := false
		if err == nil {
			var evs []exchange.Event
			_, evs, err = drainRaw(s)
			for _, e := range evs {
				content = content || e.Flags&exchange.HasContent != 0
			}
		}
		if ge := gwerr.As(err); err == nil || ge.Category != tc.cat || content != tc.content {
			t.Errorf("%s: err %v (%v), content %v", tc.name, err, ge.Category, content)
		}
	}
}

// Without figures in the events, the invocation metrics give the usage.
func TestClaudeInvokeUsageFromInvocationMetrics(t *testing.T) {
	f := newFake(t, reply{events: []event{chunk(evText), chunk(evTextDelta), chunk(evStop1),
		chunk(`{"type":"message_delta","delta":{"stop_reason":"end_turn","stop_sequence":null}}`), chunk(evEnd)}})
	a := newAdapter(t, f)
	s, err := a.Send(context.Background(), messagesCall(t, `{"model":"c","max_tokens":10,"stream":true,"messages":[{"role":"user","content":"hi"}]}`, "", model))
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err := drainRaw(s); err != nil {
		t.Fatal(err)
	}
	if u := s.Usage(); u != (exchange.TokenUsage{Input: 2340, Output: 25, CacheRead: 2000, CacheWrite: 300}) {
		t.Errorf("usage %+v", u)
	}
}

// What Bedrock does not offer is refused before any call, so the next
// target serves.
func TestClaudeInvokeRefusesAnthropicOnlyFeatures(t *testing.T) {
	for _, body := range []string{
		`{"model":"c","max_tokens":10,"tools":[{"type":"web_search_20250305","name":"web_search"}],"messages":[{"role":"user","content":"hi"}]}`,
		`{"model":"c","max_tokens":10,"mcp_servers":[{"type":"url","url":"https://x","name":"x"}],"messages":[{"role":"user","content":"hi"}]}`,
		`{"model":"c","max_tokens":10,"messages":[{"role":"user","content":[{"type":"document","source":{"type":"file","file_id":"file_1"}}]}]}`,
	} {
		f := newFake(t, reply{body: "{}"})
		a := newAdapter(t, f)
		_, err := a.Send(context.Background(), messagesCall(t, body, "", model))
		if ge := gwerr.As(err); err == nil || ge.Code != provider.CodeUnsupportedFeature || len(f.requests()) != 0 {
			t.Errorf("%s: err %v, %d calls", body, err, len(f.requests()))
		}
	}
}

// count_tokens: Bedrock's CountTokens with the InvokeModel body, for the
// base model behind the profile.
func TestClaudeCountTokensUsesBedrockCountTokens(t *testing.T) {
	f := newFake(t, reply{body: `{"inputTokens":1234}`})
	a := newAdapter(t, f)
	call := messagesCall(t, `{"model":"c","messages":[{"role":"user","content":"hi"}],"thinking":{"type":"adaptive","display":"omitted"}}`,
		"interleaved-thinking-2025-05-14", "global.anthropic.claude-sonnet-4-5-20250929-v1:0")
	n, err := a.CountTokens(context.Background(), call)
	if err != nil || n != 1234 {
		t.Fatalf("count %d, %v", n, err)
	}
	r := f.requests()[0]
	var in struct {
		Input struct {
			InvokeModel struct{ Body []byte } `json:"invokeModel"`
		} `json:"input"`
	}
	if err := json.Unmarshal(r.raw, &in); err != nil {
		t.Fatal(err)
	}
	if r.path != "/model/anthropic.claude-sonnet-4-5-20250929-v1%3A0/count-tokens" ||
		string(in.Input.InvokeModel.Body) != `{"messages":[{"role":"user","content":"hi"}],"thinking":{"type":"adaptive"},"max_tokens":1,"anthropic_beta":["interleaved-thinking-2025-05-14"],"anthropic_version":"bedrock-2023-05-31"}` {
		t.Errorf("%s %s / %s", r.path, r.raw, in.Input.InvokeModel.Body)
	}
	// A chat request, or a model that is not Claude, is not counted here.
	if _, err := a.CountTokens(context.Background(), newCall(t, streamHi)); !errors.Is(err, provider.ErrCannotCount) {
		t.Errorf("chat: %v", err)
	}
	if _, err := a.CountTokens(context.Background(), messagesCall(t, `{"model":"c","messages":[{"role":"user","content":"hi"}]}`, "", "amazon.nova-pro-v1:0")); !errors.Is(err, provider.ErrCannotCount) {
		t.Errorf("nova: %v", err)
	}
	// Throttled: classified as any Bedrock call.
	f2 := newFake(t, reply{status: 429, errType: "ThrottlingException", body: `{"message":"slow down"}`})
	if _, err := newAdapter(t, f2).CountTokens(context.Background(), call); gwerr.As(err).Category != gwerr.RateLimited {
		t.Errorf("throttled count: %v", err)
	}
}
