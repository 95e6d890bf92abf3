package bedrock_test

import (
	"context"
	"encoding/json"
	"encoding/pem"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/llmgw/llmgw/pkg/config"
	"github.com/llmgw/llmgw/pkg/exchange"
	"github.com/llmgw/llmgw/pkg/gwerr"
	"github.com/llmgw/llmgw/pkg/ingress/chat"
	"github.com/llmgw/llmgw/pkg/provider"
	"github.com/llmgw/llmgw/pkg/provider/bedrock"
	"github.com/llmgw/llmgw/pkg/wire/chatwire"
)

var update = flag.Bool("update", false, "rewrite testdata/*.golden")

// model is a target model id with a character the SDK must escape in the path.
const model = "anthropic.claude-3-5-haiku-20241022-v1:0"

// newCall parses an OpenAI request body into a Call for model, whose
// default max tokens is 4096.
func newCall(t *testing.T, body string) *provider.Call {
	t.Helper()
	call, err := tryCall(body)
	if err != nil {
		t.Fatalf("decode %s: %v", body, err)
	}
	return call
}

// tryCall decodes an OpenAI request body through the chat ingress into a
// Call for model (target br/model, default max tokens 4096); the error is
// the ingress's, for a malformed request.
func tryCall(body string) (*provider.Call, error) {
	rq := &exchange.Request{API: exchange.Chat}
	if err := (chat.Ingress{}).Decode(httptest.NewRequest("POST", "/v1/chat/completions", nil), []byte(body), rq); err != nil {
		return nil, err
	}
	return &provider.Call{Req: rq, Step: config.Step{ID: "br/" + model, Model: model, MaxTokens: 4096}}, nil
}

// guarded sends call as the gateway does: the registry's guard refuses
// what the Prompt cannot hold (Untranslated) before the adapter translates.
func guarded(a provider.Provider, call *provider.Call) (provider.Stream, error) {
	if e := provider.RefuseUntranslated(call.Req, call.Step.ID, false); e != nil {
		return nil, e
	}
	return a.Send(context.Background(), call)
}

const streamHi = `{"model":"m","stream":true,"messages":[{"role":"user","content":"Hi"}]}`

// silentKinds names the events the Chat Completions encoder writes nothing for.
var silentKinds = map[exchange.Kind]string{exchange.Signature: "signature", exchange.RedactedReasoning: "redacted_reasoning"}

// drain reads a stream to its end and runs its events through the Chat
// Completions encoder, as an OpenAI client would get them: one line per
// chunk (the event's flags, then the chunk's JSON), one per event that
// gives no chunk (signatures, redacted reasoning), and the error that
// ended the stream.
func drain(t *testing.T, s provider.Stream) ([]string, error) {
	t.Helper()
	defer s.Close()
	enc := chat.Ingress{}.NewEncoder(&exchange.Request{Stream: true, WantsUsage: true})
	var lines []string
	for {
		ev, err := s.Next()
		if err != nil {
			return lines, err
		}
		frame := enc.Event(nil, &ev)
		if len(frame) == 0 {
			lines = append(lines, fmt.Sprintf("   event %s %q", silentKinds[ev.Kind], ev.Text))
			continue
		}
		data, ok := strings.CutPrefix(string(frame), "data: ")
		data, ok2 := strings.CutSuffix(data, "\n\n")
		if !ok || !ok2 || !json.Valid([]byte(data)) {
			t.Errorf("chunk is not one data frame of JSON: %q", frame)
		}
		ci := chatwire.InspectChunk([]byte(data))
		if ci.Content != ev.Commits() || ci.Finish != ev.Finishes() || ci.UsageOnly != ev.IsUsageOnly() {
			t.Errorf("event %+v disagrees with its chunk %s", ev, data)
		}
		flags := ""
		for _, fl := range []struct {
			on bool
			c  string
		}{{ev.Commits(), "C"}, {ev.Finishes(), "F"}, {ev.IsUsageOnly(), "U"}} {
			if fl.on {
				flags += fl.c
			}
		}
		if flags == "" {
			flags = "-"
		}
		lines = append(lines, fmt.Sprintf("%-2s %s", flags, data))
	}
}

func golden(t *testing.T, name, got string) {
	t.Helper()
	path := filepath.Join("testdata", name+".golden")
	if *update {
		if err := os.MkdirAll("testdata", 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run with -update to create it)", err)
	}
	if got != string(want) {
		t.Errorf("%s differs from the golden file\n--- got:\n%s\n--- want:\n%s", path, got, want)
	}
}

func category(err error) gwerr.Category {
	var ge *gwerr.Error
	if errors.As(err, &ge) {
		return ge.Category
	}
	return ""
}

// TestStreamGolden runs ConverseStream event scripts through the real SDK
// and the adapter and compares the chunks, frame by frame, with golden files.
func TestStreamGolden(t *testing.T) {
	bedrock.SetClock(t, time.Unix(1750000000, 0))
	cases := []struct {
		name   string
		events []event
	}{
		{"text", concat(textEvents("Hel", "lo ", "\"wörld\"\n"), stopEvents("end_turn", 12, 5))},
		{"tool_calls", toolEvents()},
		{"reasoning", concat([]event{
			ev("messageStart", `{"role":"assistant"}`),
			ev("contentBlockDelta", `{"contentBlockIndex":0,"delta":{"reasoningContent":{"text":"The user greets me."}}}`),
			ev("contentBlockDelta", `{"contentBlockIndex":0,"delta":{"reasoningContent":{"signature":"c2lnbmF0dXJl"}}}`),
			ev("contentBlockStop", `{"contentBlockIndex":0}`),
			ev("contentBlockDelta", `{"contentBlockIndex":1,"delta":{"text":"Hello!"}}`),
			ev("contentBlockStop", `{"contentBlockIndex":1}`),
		}, stopEvents("end_turn", 10, 8))},
		{"cache_usage", concat(textEvents("cached"), []event{
			ev("messageStop", `{"stopReason":"end_turn"}`),
			ev("metadata", `{"usage":{"inputTokens":7,"outputTokens":3,"totalTokens":160,"cacheReadInputTokens":100,"cacheWriteInputTokens":50},"metrics":{"latencyMs":80}}`),
		})},
		{"max_tokens", concat(textEvents("cut"), stopEvents("max_tokens", 4, 1))},
		{"stop_sequence", concat(textEvents("up to"), stopEvents("stop_sequence", 4, 2))},
		{"guardrail", concat(textEvents("no"), stopEvents("guardrail_intervened", 4, 1))},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			f := newFake(t, reply{events: c.events})
			s, err := newAdapter(t, f).Send(context.Background(), newCall(t, streamHi))
			if err != nil {
				t.Fatal(err)
			}
			lines, err := drain(t, s)
			if err != io.EOF {
				t.Fatalf("stream ended with %v, want io.EOF; frames:\n%s", err, strings.Join(lines, "\n"))
			}
			u := s.Usage()
			lines = append(lines, "EOF", fmt.Sprintf("usage %+v", u))
			golden(t, "stream_"+c.name, strings.Join(lines, "\n")+"\n")
		})
	}
}

// TestStreamRequest checks the ConverseStream call on the wire: the path
// carries the escaped model id and the body is the translated request.
func TestStreamRequest(t *testing.T) {
	f := newFake(t, reply{events: concat(textEvents("ok"), stopEvents("end_turn", 1, 1))})
	call := newCall(t, streamHi)
	call.Req.TraceParent = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"
	s, err := newAdapter(t, f).Send(context.Background(), call)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := drain(t, s); err != io.EOF {
		t.Fatal(err)
	}
	reqs := f.requests()
	if len(reqs) != 1 {
		t.Fatalf("%d requests, want 1", len(reqs))
	}
	if reqs[0].method != "POST" || reqs[0].path != streamPath(model) || streamPath(model) != "/model/anthropic.claude-3-5-haiku-20241022-v1%3A0/converse-stream" {
		t.Errorf("request %s %s, want POST %s", reqs[0].method, reqs[0].path, streamPath(model))
	}
	assertJSON(t, reqs[0].raw, `{"messages":[{"role":"user","content":[{"text":"Hi"}]}],"inferenceConfig":{"maxTokens":4096}}`)
	if got := reqs[0].header.Get("traceparent"); got != call.Req.TraceParent {
		t.Errorf("traceparent sent to bedrock = %q, want the request's", got)
	}
}

func assertJSON(t *testing.T, got []byte, want string) {
	t.Helper()
	var g, w any
	if err := json.Unmarshal(got, &g); err != nil {
		t.Fatalf("got invalid JSON %s: %v", got, err)
	}
	if err := json.Unmarshal([]byte(want), &w); err != nil {
		t.Fatalf("want invalid JSON %s: %v", want, err)
	}
	gb, _ := json.Marshal(g)
	wb, _ := json.Marshal(w)
	if string(gb) != string(wb) {
		t.Errorf("JSON differs\n got: %s\nwant: %s", gb, wb)
	}
}

// TestEndpointFromEnv points the SDK at the fake through
// AWS_ENDPOINT_URL_BEDROCK_RUNTIME only: the client must come from the
// default config chain.
func TestEndpointFromEnv(t *testing.T) {
	f := newFake(t, reply{events: concat(textEvents("env"), stopEvents("end_turn", 1, 1))})
	awsEnv(t)
	t.Setenv("AWS_ENDPOINT_URL_BEDROCK_RUNTIME", f.srv.URL)
	a, err := bedrock.New(context.Background(), "br", &config.Provider{Kind: "bedrock", Region: "eu-west-1"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	s, err := a.Send(context.Background(), newCall(t, streamHi))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := drain(t, s); err != io.EOF {
		t.Fatal(err)
	}
	reqs := f.requests()
	if len(reqs) != 1 || reqs[0].path != streamPath(model) {
		t.Fatalf("requests %+v, want one to %s", reqs, streamPath(model))
	}
	if auth := reqs[0].header.Get("Authorization"); !strings.Contains(auth, "/eu-west-1/bedrock/aws4_request") {
		t.Errorf("request not signed for the provider's region: %q", auth)
	}
}

// TestEndpointOverridesEnv: the provider's endpoint wins over the variable.
func TestEndpointOverridesEnv(t *testing.T) {
	wrong := newFake(t, reply{status: 500, errType: "InternalServerException", body: `{"message":"wrong endpoint"}`})
	f := newFake(t, reply{events: concat(textEvents("right"), stopEvents("end_turn", 1, 1))})
	awsEnv(t)
	t.Setenv("AWS_ENDPOINT_URL_BEDROCK_RUNTIME", wrong.srv.URL)
	a, err := bedrock.New(context.Background(), "br", &config.Provider{Kind: "bedrock", Region: "us-east-1", Endpoint: f.srv.URL}, nil)
	if err != nil {
		t.Fatal(err)
	}
	s, err := a.Send(context.Background(), newCall(t, streamHi))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := drain(t, s); err != io.EOF {
		t.Fatal(err)
	}
	if len(wrong.requests()) != 0 || len(f.requests()) != 1 {
		t.Errorf("requests: env endpoint %d, provider endpoint %d; want 0 and 1", len(wrong.requests()), len(f.requests()))
	}
}

// TestCABundle: the factory's client honours AWS_CA_BUNDLE (the SDK can
// only add a bundle to its own HTTP client type, so a plain *http.Client
// would fail to build here).
func TestCABundle(t *testing.T) {
	f := newFakeTLS(t, reply{events: concat(textEvents("tls"), stopEvents("end_turn", 1, 1))})
	awsEnv(t)
	bundle := filepath.Join(t.TempDir(), "ca.pem")
	pemCert := pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: f.srv.Certificate().Raw})
	if err := os.WriteFile(bundle, pemCert, 0o600); err != nil {
		t.Fatal(err)
	}
	t.Setenv("AWS_CA_BUNDLE", bundle)
	a, err := bedrock.New(context.Background(), "br", &config.Provider{Kind: "bedrock", Region: "us-east-1", Endpoint: f.srv.URL}, nil)
	if err != nil {
		t.Fatal(err)
	}
	s, err := a.Send(context.Background(), newCall(t, streamHi))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := drain(t, s); err != io.EOF {
		t.Fatal(err)
	}
}

// TestNewNeedsRegion: no region anywhere is a config error at build time.
func TestNewNeedsRegion(t *testing.T) {
	awsEnv(t)
	if _, err := bedrock.New(context.Background(), "br", &config.Provider{Kind: "bedrock"}, nil); err == nil || !strings.Contains(err.Error(), "region") {
		t.Fatalf("err = %v, want a region error", err)
	}
	if _, err := bedrock.New(context.Background(), "br", &config.Provider{Kind: "bedrock", Region: "us-east-1", Endpoint: "ftp://x"}, nil); err == nil {
		t.Fatal("a non-http endpoint was accepted")
	}
}

// TestCallErrors maps the exceptions of the Converse and ConverseStream
// calls themselves, decoded by the SDK from real error responses, and
// checks the SDK made exactly one attempt (the gateway owns retries).
func TestCallErrors(t *testing.T) {
	cases := []struct {
		status  int
		errType string
		want    gwerr.Category
		code    string
	}{
		{429, "ThrottlingException", gwerr.RateLimited, ""},
		{429, "ServiceQuotaExceededException", gwerr.RateLimited, ""},
		{503, "ServiceUnavailableException", gwerr.Unavailable, ""},
		{429, "ModelNotReadyException", gwerr.Unavailable, ""},
		{400, "ValidationException", gwerr.InvalidRequest, ""},
		{403, "AccessDeniedException", gwerr.Unavailable, provider.CodeProviderCredentials},
		{408, "ModelTimeoutException", gwerr.Timeout, ""},
		{424, "ModelErrorException", gwerr.Unavailable, ""},
		{500, "InternalServerException", gwerr.Unavailable, ""},
		{404, "ResourceNotFoundException", gwerr.NotFound, ""},
		{502, "SomethingNewException", gwerr.Unavailable, ""},
	}
	for _, streaming := range []bool{true, false} {
		for _, c := range cases {
			t.Run(fmt.Sprintf("%s/stream=%v", c.errType, streaming), func(t *testing.T) {
				f := newFake(t, reply{status: c.status, errType: c.errType,
					body: `{"message":"bad thing for key AKIAABCDEFGHIJKLMNOP"}`})
				body := streamHi
				if !streaming {
					body = `{"model":"m","messages":[{"role":"user","content":"Hi"}]}`
				}
				var seen int
				call := newCall(t, body)
				call.OnResponse = func(status int, _ http.Header) { seen = status }
				_, err := newAdapter(t, f).Send(context.Background(), call)
				var ge *gwerr.Error
				if !errors.As(err, &ge) {
					t.Fatalf("err = %v, want a *gwerr.Error", err)
				}
				if ge.Category != c.want || ge.Code != c.code {
					t.Errorf("category %s code %q, want %s %q (%v)", ge.Category, ge.Code, c.want, c.code, err)
				}
				if msg := gwerr.ClientMessage(ge); strings.Contains(msg, "AKIA") {
					t.Errorf("client message leaks a credential: %q", msg)
				}
				if c.want == gwerr.InvalidRequest && !strings.Contains(gwerr.ClientMessage(ge), "bad thing") {
					t.Errorf("validation detail missing from %q", gwerr.ClientMessage(ge))
				}
				if seen != c.status {
					t.Errorf("OnResponse saw status %d, want %d", seen, c.status)
				}
				if n := len(f.requests()); n != 1 {
					t.Errorf("%d requests: the SDK retried; want exactly 1", n)
				}
			})
		}
	}
}

// TestStreamExceptions: exceptions inside the event stream, after content.
func TestStreamExceptions(t *testing.T) {
	cases := []struct {
		exception string
		want      gwerr.Category
	}{
		{"modelStreamErrorException", gwerr.Interrupted},
		{"internalServerException", gwerr.Interrupted},
		{"throttlingException", gwerr.RateLimited},
		{"serviceUnavailableException", gwerr.Unavailable},
		{"validationException", gwerr.InvalidRequest},
	}
	for _, c := range cases {
		t.Run(c.exception, func(t *testing.T) {
			f := newFake(t, reply{events: append(textEvents("partial"), exc(c.exception, "it broke"))})
			s, err := newAdapter(t, f).Send(context.Background(), newCall(t, streamHi))
			if err != nil {
				t.Fatal(err)
			}
			lines, err := drain(t, s)
			if len(lines) != 2 {
				t.Errorf("frames before the error: %q, want role and text", lines)
			}
			if err == io.EOF || category(err) != c.want {
				t.Fatalf("stream ended with %v (category %q), want %s", err, category(err), c.want)
			}
			if c.want.ProviderFault() != (c.want != gwerr.InvalidRequest) {
				t.Errorf("category %s: provider fault %v", c.want, c.want.ProviderFault())
			}
		})
	}
}

// TestStreamEndsEarly: an event stream that ends without messageStop and
// metadata is interrupted, never a clean io.EOF.
func TestStreamEndsEarly(t *testing.T) {
	cases := []struct {
		name   string
		events []event
		frames int
	}{
		{"no_message_stop", textEvents("trunc"), 2},
		{"no_metadata", append(textEvents("trunc"), ev("messageStop", `{"stopReason":"end_turn"}`)), 3},
		{"nothing", nil, 0},
		{"corrupt_frame", textEvents("trunc"), 2},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			rp := reply{events: c.events}
			if c.name == "corrupt_frame" {
				rp.garbage = []byte("\x00\x00\x00\x40\x00\x00\x00\x10not-a-valid-crc-and-not-a-frame-at-all........................")
			}
			f := newFake(t, rp)
			s, err := newAdapter(t, f).Send(context.Background(), newCall(t, streamHi))
			if err != nil {
				t.Fatal(err)
			}
			lines, err := drain(t, s)
			if len(lines) != c.frames {
				t.Errorf("frames %q, want %d", lines, c.frames)
			}
			if err == io.EOF || category(err) != gwerr.Interrupted {
				t.Fatalf("stream ended with %v, want interrupted", err)
			}
			if u := s.Usage(); !u.Estimated {
				t.Errorf("usage %+v: without metadata it must be an estimate", u)
			}
		})
	}
}
