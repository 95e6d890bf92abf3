package bedrock_test

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"

	"github.com/llmgw/llmgw/pkg/config"
	"github.com/llmgw/llmgw/pkg/exchange"
	"github.com/llmgw/llmgw/pkg/gwerr"
	"github.com/llmgw/llmgw/pkg/provider"
	"github.com/llmgw/llmgw/pkg/provider/bedrock"
	"github.com/llmgw/llmgw/pkg/provider/bedrock/bedrocktest"
)

// TestOpenAITargetsSpeakChatAndResponses: which Bedrock targets speak
// OpenAI's APIs natively (so the registry passes those requests through
// and nothing only they carry is refused): OpenAI's models by default at
// bedrock-runtime (chat; Responses for gpt-oss only at mantle, where
// Bedrock offers it), any model whose openai_endpoint says so, none whose
// openai_endpoint is off; Claude keeps Messages.
func TestOpenAITargetsSpeakChatAndResponses(t *testing.T) {
	speaks := bedrock.Descriptor.Config.TargetSpeaks
	for _, tc := range []struct {
		model     string
		opts      map[string]string
		chat, rsp bool
	}{
		{"openai.gpt-oss-120b-1:0", nil, true, false},
		{"us.openai.gpt-oss-20b-1:0", nil, true, false},
		{"openai.gpt-oss-120b", map[string]string{"openai_endpoint": "mantle"}, true, true},
		{"us.openai.gpt-5.4", nil, true, true},
		{"arn:aws:bedrock:us-east-1:123456789012:application-inference-profile/abc", map[string]string{"base_model": "openai.gpt-oss-120b-1:0"}, true, false},
		{"qwen.qwen3-32b-v1:0", nil, false, false},
		{"qwen.qwen3-32b-v1:0", map[string]string{"openai_endpoint": "runtime"}, true, true},
		{"openai.gpt-oss-120b-1:0", map[string]string{"openai_endpoint": "off"}, false, false},
		{"us.anthropic.claude-sonnet-4-5-20250929-v1:0", nil, false, false},
	} {
		if got := speaks("chat", tc.model, tc.opts); got != tc.chat {
			t.Errorf("%s %v speaks chat: %v, want %v", tc.model, tc.opts, got, tc.chat)
		}
		if got := speaks("responses", tc.model, tc.opts); got != tc.rsp {
			t.Errorf("%s %v speaks responses: %v, want %v", tc.model, tc.opts, got, tc.rsp)
		}
	}
	if !speaks("messages", "us.anthropic.claude-sonnet-4-5-20250929-v1:0", nil) || speaks("messages", "openai.gpt-oss-120b-1:0", nil) {
		t.Error("messages: Claude's targets speak it, OpenAI's do not")
	}
}

// TestOpenAIEndpointOption: the option takes runtime, mantle or off.
func TestOpenAIEndpointOption(t *testing.T) {
	_, err := config.Parse([]byte(`providers:
  br: {kind: bedrock, region: us-east-1}
routes:
  m: {targets: [{provider: br, model: openai.gpt-oss-120b, options: {openai_endpoint: mantel}}]}
`))
	if err == nil || !strings.Contains(err.Error(), `"mantel" is not runtime, mantle or off`) {
		t.Errorf("err = %v", err)
	}
}

// oaiFake is a Bedrock OpenAI-compatible endpoint: it checks each
// request's SigV4 signature (service by path: /openai/v1 is
// bedrock-runtime's, signed "bedrock"; /v1 is bedrock-mantle's), records
// the body, and answers with answer.
type oaiFake struct {
	srv    *httptest.Server
	bodies []string
	paths  []string
}

func newOAIFake(t *testing.T, answer string) *oaiFake {
	f := &oaiFake{}
	creds := aws.Credentials{AccessKeyID: "AKIDFAKEFAKEFAKE", SecretAccessKey: "fake-secret-key"}
	f.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		service := "bedrock-mantle"
		if strings.HasPrefix(r.URL.Path, "/openai/v1/") {
			service = "bedrock"
		}
		if err := bedrocktest.CheckSigV4(r, body, service, "us-east-1", creds); err != nil {
			t.Errorf("%s: %v", r.URL.Path, err)
			w.WriteHeader(403)
			return
		}
		f.bodies, f.paths = append(f.bodies, string(body)), append(f.paths, r.URL.Path)
		if strings.HasPrefix(answer, "data:") || strings.HasPrefix(answer, "event:") {
			w.Header().Set("Content-Type", "text/event-stream")
		} else {
			w.Header().Set("Content-Type", "application/json")
		}
		io.WriteString(w, answer)
	}))
	t.Cleanup(f.srv.Close)
	return f
}

// everyChatFeature is a Chat Completions body holding every feature of
// the semantics matrix's chat table, and a field no one knows.
const everyChatFeature = `{"model":"m","stream":true,"messages":[{"role":"system","content":"Be brief."},` +
	`{"role":"user","content":[{"type":"text","text":"What is this?"},{"type":"image_url","image_url":{"url":"data:image/png;base64,iVBORw0KGgo=","detail":"low"}}]},` +
	`{"role":"assistant","content":null,"tool_calls":[{"id":"call_1","type":"function","function":{"name":"look","arguments":"{\"q\":\"x\"}"}}]},` +
	`{"role":"tool","tool_call_id":"call_1","content":"a cat"}],` +
	`"tools":[{"type":"function","function":{"name":"look","parameters":{"type":"object","properties":{"q":{"type":"string"}}},"strict":true}}],` +
	`"tool_choice":{"type":"function","function":{"name":"look"}},"parallel_tool_calls":false,` +
	`"response_format":{"type":"json_schema","json_schema":{"name":"a","schema":{"type":"object"},"strict":true}},` +
	`"stop":["END"],"max_completion_tokens":300,"temperature":0.2,"top_p":0.9,"n":2,"logprobs":true,"top_logprobs":2,` +
	`"modalities":["text","audio"],"audio":{"voice":"alloy","format":"wav"},"reasoning_effort":"high","x_vendor":{"keep":[1,null]}}`

// TestOpenAIChatPassesThroughToBedrock: a Chat Completions request at a
// gpt-oss target goes to bedrock-runtime's /openai/v1/chat/completions,
// signed for "bedrock", with the client's bytes but the model (and the
// stream usage the gateway always asks for); Bedrock's chunks come back
// untouched, its usage read from the stream.
func TestOpenAIChatPassesThroughToBedrock(t *testing.T) {
	const chunks = "data: {\"id\":\"chatcmpl-b1\",\"object\":\"chat.completion.chunk\",\"created\":1,\"model\":\"openai.gpt-oss-120b-1:0\",\"choices\":[{\"index\":0,\"delta\":{\"role\":\"assistant\",\"content\":\"A cat\",\"reasoning_content\":\"look\"},\"finish_reason\":null}]}\n\n" +
		"data: {\"id\":\"chatcmpl-b1\",\"object\":\"chat.completion.chunk\",\"created\":1,\"model\":\"openai.gpt-oss-120b-1:0\",\"choices\":[{\"index\":0,\"delta\":{},\"finish_reason\":\"stop\"}]}\n\n" +
		"data: {\"id\":\"chatcmpl-b1\",\"object\":\"chat.completion.chunk\",\"created\":1,\"model\":\"openai.gpt-oss-120b-1:0\",\"choices\":[],\"usage\":{\"prompt_tokens\":40,\"completion_tokens\":3,\"total_tokens\":43,\"prompt_tokens_details\":{\"cached_tokens\":16}}}\n\n" +
		"data: [DONE]\n\n"
	f := newOAIFake(t, chunks)
	awsEnv(t)
	a, err := bedrock.New(context.Background(), "br", &config.Provider{Kind: "bedrock", Region: "us-east-1", Endpoint: f.srv.URL}, nil)
	if err != nil {
		t.Fatal(err)
	}
	const model = "openai.gpt-oss-120b-1:0"
	call := &provider.Call{Req: &exchange.Request{API: exchange.Chat, Body: []byte(everyChatFeature), Stream: true},
		Step: config.Step{ID: "br/" + model, Provider: "br", Model: model}}
	s, err := a.Send(context.Background(), call)
	if err != nil {
		t.Fatal(err)
	}
	frames, evs, err := drainRaw(s)
	if err != nil || len(frames) != 3 {
		t.Fatalf("stream: %v %q", err, frames)
	}
	for i, ev := range evs {
		if ev.Kind != exchange.Raw || ev.RawAPI != exchange.Chat {
			t.Errorf("event %d is %v %v, want a raw chat chunk", i, ev.Kind, ev.RawAPI)
		}
	}
	if want := strings.Split(strings.TrimSpace(strings.ReplaceAll(chunks, "data: ", "")), "\n\n"); frames[0] != want[0] || frames[2] != want[2] {
		t.Errorf("frames not relayed as sent:\n%q\nwant %q", frames, want)
	}
	if u := s.Usage(); u.Input != 40 || u.Output != 3 || u.CacheRead != 16 || u.Estimated {
		t.Errorf("usage %+v", u)
	}
	want := strings.Replace(everyChatFeature, `"model":"m"`, `"model":"`+model+`"`, 1)
	want = strings.TrimSuffix(want, "}") + `,"stream_options":{"include_usage":true}}`
	if len(f.bodies) != 1 || f.paths[0] != "/openai/v1/chat/completions" || f.bodies[0] != want {
		t.Errorf("bedrock got %q\n%s\nwant\n%s", f.paths, f.bodies, want)
	}
}

// TestOpenAIChatCutStreamIsInterrupted: Bedrock's chat stream breaking off
// after its first chunk (no finish_reason, no [DONE]) is an interruption,
// never a clean end.
func TestOpenAIChatCutStreamIsInterrupted(t *testing.T) {
	f := newOAIFake(t, "data: {\"id\":\"c\",\"object\":\"chat.completion.chunk\",\"created\":1,\"model\":\"m\",\"choices\":[{\"index\":0,\"delta\":{\"content\":\"Hel\"},\"finish_reason\":null}]}\n\n")
	awsEnv(t)
	a, err := bedrock.New(context.Background(), "br", &config.Provider{Kind: "bedrock", Region: "us-east-1", Endpoint: f.srv.URL}, nil)
	if err != nil {
		t.Fatal(err)
	}
	call := &provider.Call{Req: &exchange.Request{API: exchange.Chat, Body: []byte(`{"model":"m","stream":true,"messages":[{"role":"user","content":"hi"}]}`), Stream: true},
		Step: config.Step{ID: "br/openai.gpt-oss-20b-1:0", Provider: "br", Model: "openai.gpt-oss-20b-1:0"}}
	s, err := a.Send(context.Background(), call)
	if err != nil {
		t.Fatal(err)
	}
	frames, _, err := drainRaw(s)
	if ge := gwerr.As(err); len(frames) != 1 || ge == nil || ge.Category != gwerr.Interrupted {
		t.Errorf("frames %q, error %v: want one frame, then an interruption", frames, err)
	}
}
