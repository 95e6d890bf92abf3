package server_test

import (
	"context"
	"fmt"
	"io"
	"math"
	"net/http"
	"strings"
	"sync"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"
	"github.com/openai/openai-go/v3/responses"
	"github.com/tidwall/gjson"

	"github.com/llmgw/llmgw/pkg/provider/bedrock/bedrocktest"
	"github.com/llmgw/llmgw/pkg/server"
	"github.com/llmgw/llmgw/pkg/usage"
)

// OpenAI's models on Bedrock served natively: Chat Completions at
// bedrock-runtime's /openai/v1 (SigV4 service "bedrock") and the
// Responses API at bedrock-mantle's /v1 (SigV4 service "bedrock-mantle"),
// passed through as to OpenAI itself, so a route fails over between
// OpenAI and Bedrock with no translation. The fake Bedrock speaks
// OpenAI's wire format at Bedrock's paths and checks every request's
// signature the way AWS does (bedrocktest.CheckSigV4).

// bedrockOAICreds are the static credentials the gateway signs with.
var bedrockOAICreds = aws.Credentials{AccessKeyID: "AKIDBEDROCKOAI", SecretAccessKey: "bedrock-oai-secret"}

// bedrockOAI is a fake Bedrock with OpenAI-compatible endpoints.
type bedrockOAI struct {
	*upstream
	t *testing.T
	// bearer, when set, is the Bedrock API key every request must carry
	// instead of a signature.
	bearer string
	// answer, when set, answers instead of the OpenAI fakes (after the
	// authentication check).
	answer func(w http.ResponseWriter, r *http.Request, body []byte) bool
	mu     sync.Mutex
	seen   []string // "METHOD path service"
}

func newBedrockOAI(t *testing.T, bearer string) *bedrockOAI {
	b := &bedrockOAI{t: t, bearer: bearer}
	b.upstream = newUpstream(t, b.serve)
	return b
}

func (b *bedrockOAI) serve(w http.ResponseWriter, r *http.Request, body []byte, _ int) {
	service := "bedrock"
	if !strings.HasPrefix(r.URL.Path, "/openai/v1/") {
		service = "bedrock-mantle"
	}
	b.mu.Lock()
	b.seen = append(b.seen, r.Method+" "+r.URL.Path+" "+service)
	b.mu.Unlock()
	var authErr error
	if b.bearer != "" {
		if got := r.Header.Get("Authorization"); got != "Bearer "+b.bearer || r.Header.Get("X-Amz-Date") != "" {
			authErr = fmt.Errorf("authorization %q, x-amz-date %q", got, r.Header.Get("X-Amz-Date"))
		}
	} else {
		authErr = bedrocktest.CheckSigV4(r, body, service, "us-east-1", bedrockOAICreds)
	}
	if authErr != nil {
		b.t.Errorf("%s %s: %v", r.Method, r.URL.Path, authErr)
		w.Header().Set("Content-Type", "application/json")
		w.Header().Set("x-amzn-ErrorType", "UnrecognizedClientException:http://internal.amazon.com/coral/com.amazon.coral.service/")
		w.WriteHeader(403)
		io.WriteString(w, `{"message":"The request signature we calculated does not match the signature you provided."}`)
		return
	}
	if b.answer != nil && b.answer(w, r, body) {
		return
	}
	switch r.URL.Path {
	case "/openai/v1/chat/completions", "/v1/chat/completions":
		okStream(w, r, body)
	case "/v1/responses":
		nativeHandler(nativeFrames)(w, r, body, 0)
	default:
		if id, ok := strings.CutPrefix(r.URL.Path, "/v1/responses/"); ok && r.Method == http.MethodGet {
			w.Header().Set("Content-Type", "application/json")
			io.WriteString(w, `{"id":"`+id+`","object":"response","status":"completed","output":[],"x_from":"bedrock"}`)
			return
		}
		w.WriteHeader(404)
		io.WriteString(w, `{"error":{"message":"no route","type":"invalid_request_error"}}`)
	}
}

func (b *bedrockOAI) calls() []string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return append([]string(nil), b.seen...)
}

// bedrockOAIConfig is routes over an OpenAI target (at oa, apis chat and
// responses) and Bedrock targets of OpenAI's gpt-oss-120b (at br): chat
// on bedrock-runtime (the default endpoint), Responses on bedrock-mantle.
func bedrockOAIConfig(t *testing.T, oa, br string) string {
	t.Setenv("AWS_ACCESS_KEY_ID", bedrockOAICreds.AccessKeyID)
	t.Setenv("AWS_SECRET_ACCESS_KEY", bedrockOAICreds.SecretAccessKey)
	t.Setenv("AWS_SESSION_TOKEN", "")
	t.Setenv("AWS_REGION", "us-east-1")
	t.Setenv("AWS_PROFILE", "")
	t.Setenv("AWS_CONFIG_FILE", "/nonexistent/aws-config")
	t.Setenv("AWS_SHARED_CREDENTIALS_FILE", "/nonexistent/aws-credentials")
	t.Setenv("AWS_EC2_METADATA_DISABLED", "true")
	t.Setenv("AWS_ENDPOINT_URL", "")
	t.Setenv("AWS_ENDPOINT_URL_BEDROCK_RUNTIME", "")
	t.Setenv("OA_TEST_KEY", "sk-openai-test-key-000000")
	return fmt.Sprintf(`defaults: {attempts: 1, backoff_base: 1ms, backoff_max: 2ms}
server: {allow_unpriced_tools: true}
providers:
  oa: {kind: openai, base_url: %q, apis: [chat, responses], keys: [{env: OA_TEST_KEY}]}
  br: {kind: bedrock, region: us-east-1, endpoint: %q}
routes:
  gpt:
    targets:
      - {provider: oa, model: gpt-5}
      - {provider: br, model: "openai.gpt-oss-120b-1:0"}
  gpt-responses:
    targets:
      - {provider: oa, model: gpt-5}
      - {provider: br, model: openai.gpt-oss-120b, options: {openai_endpoint: mantle}}
  bedrock-first:
    targets:
      - {provider: br, model: openai.gpt-oss-120b, options: {openai_endpoint: mantle}}
      - {provider: oa, model: gpt-5}
prices:
  "openai.gpt-oss-120b-1:0": {input: 0.15, output: 0.6}
  openai.gpt-oss-120b: {input: 0.15, output: 0.6}
  gpt-5: {input: 1.25, output: 10}
`, oa+"/v1", br)
}

// deadOpenAI answers every request with a 503 before any token.
func deadOpenAI(w http.ResponseWriter, _ *http.Request, _ []byte, _ int) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(503)
	io.WriteString(w, `{"error":{"message":"overloaded","type":"server_error"}}`)
}

// TestOpenAISDKFailsOverToOpenAIOnBedrock: OpenAI down, the official SDK's
// chat (streamed and not) and Responses (streamed and not) requests are
// served by OpenAI's model on Bedrock, signed for the endpoint's service,
// the client's body passed through with only the model rewritten, nothing
// dropped, usage read from the answer and priced.
func TestOpenAISDKFailsOverToOpenAIOnBedrock(t *testing.T) {
	oa := newUpstream(t, deadOpenAI)
	br := newBedrockOAI(t, "")
	g := newGateway(t, bedrockOAIConfig(t, oa.URL, br.URL), func(o *server.Options) { o.Cost = usage.Cost })
	client := g.sdk()
	ctx := context.Background()

	var raw *http.Response
	chat, err := client.Chat.Completions.New(ctx, openai.ChatCompletionNewParams{Model: "gpt",
		Messages: []openai.ChatCompletionMessageParamUnion{openai.UserMessage("hi")}}, option.WithResponseInto(&raw))
	if err != nil || chat.Choices[0].Message.Content != "Hello world" {
		t.Fatalf("chat: %v %+v", err, chat)
	}
	hdr := raw.Header
	if hdr.Get("x-gateway-provider") != "br" || hdr.Get("x-gateway-dropped-features") != "" {
		t.Errorf("chat served by %q, dropped %q", hdr.Get("x-gateway-provider"), hdr.Get("x-gateway-dropped-features"))
	}
	stream := client.Chat.Completions.NewStreaming(ctx, openai.ChatCompletionNewParams{Model: "gpt",
		Messages: []openai.ChatCompletionMessageParamUnion{openai.UserMessage("hi")}})
	var text strings.Builder
	for stream.Next() {
		if c := stream.Current(); len(c.Choices) > 0 {
			text.WriteString(c.Choices[0].Delta.Content)
		}
	}
	if stream.Err() != nil || text.String() != "Hello world" {
		t.Fatalf("chat stream: %v %q", stream.Err(), text.String())
	}

	whole, err := client.Responses.New(ctx, responses.ResponseNewParams{Model: "gpt-responses",
		Input: responses.ResponseNewParamsInputUnion{OfString: openai.String("hi")}}, option.WithResponseInto(&raw))
	hdr = raw.Header
	if err != nil || whole.OutputText() != "Native whole" || hdr.Get("x-gateway-provider") != "br" || hdr.Get("x-gateway-dropped-features") != "" {
		t.Fatalf("responses: %v %+v %v", err, whole, hdr)
	}
	evs, err := respEvents(client.Responses.NewStreaming(ctx, responses.ResponseNewParams{Model: "gpt-responses",
		Input: responses.ResponseNewParamsInputUnion{OfString: openai.String("hi")}}))
	if err != nil || evs[len(evs)-1].AsResponseCompleted().Response.OutputText() != "Native" {
		t.Fatalf("responses stream: %v %v", err, seqTypes(evs))
	}

	want := []string{"POST /openai/v1/chat/completions bedrock", "POST /openai/v1/chat/completions bedrock",
		"POST /v1/responses bedrock-mantle", "POST /v1/responses bedrock-mantle"}
	if got := br.calls(); strings.Join(got, "|") != strings.Join(want, "|") {
		t.Errorf("bedrock calls\n got %q\nwant %q", got, want)
	}
	for i, m := range []string{"openai.gpt-oss-120b-1:0", "openai.gpt-oss-120b-1:0", "openai.gpt-oss-120b", "openai.gpt-oss-120b"} {
		if got := gjson.GetBytes(br.body(i), "model").Str; got != m {
			t.Errorf("bedrock request %d model %q, want %q", i, got, m)
		}
		if h := br.header(i).Get("Authorization"); strings.Contains(h, "sk-") {
			t.Errorf("a key other than AWS's reached bedrock: %q", h)
		}
	}
	recs := g.waitRecs(t, 4)
	for i, r := range recs {
		if r.Provider != "br" || r.Outcome != "ok" || r.CostUSD <= 0 || len(r.DroppedFeatures) != 0 {
			t.Errorf("record %d = %+v", i, r)
		}
	}
	if want := (1117*0.15 + 46*0.6) / 1e6; math.Abs(recs[0].CostUSD-want) > 1e-12 {
		t.Errorf("chat cost %g, want %g (the price of openai.gpt-oss-120b-1:0)", recs[0].CostUSD, want)
	}
	if r := recs[1]; r.InputTokens != 11 || r.OutputTokens != 2 || r.CachedTokens != 3 {
		t.Errorf("streamed chat usage from the stream: %+v", r)
	}
	if r := recs[3]; r.InputTokens != 31 || r.OutputTokens != 5 || r.CachedTokens != 8 {
		t.Errorf("streamed responses usage from the stream: %+v", r)
	}
}

// TestBedrockOpenAIBodyPassesThrough: the client's bytes reach Bedrock as
// they reach OpenAI, but for the model, and Bedrock's events reach the
// client byte for byte; the reverse route (Bedrock throttled) sends the
// same bytes on to OpenAI.
func TestBedrockOpenAIBodyPassesThrough(t *testing.T) {
	oa := newUpstream(t, nativeHandler(nativeFrames))
	br := newBedrockOAI(t, "")
	g := newGateway(t, bedrockOAIConfig(t, oa.URL, br.URL))
	body := `{"model":"bedrock-first","stream":true,"input":[{"type":"message","role":"user","content":[{"type":"input_text","text":"hi"}]},{"type":"reasoning","id":"rs_0","summary":[],"encrypted_content":"gAAA"}],` +
		`"tools":[{"type":"function","name":"shell","parameters":{"type":"object"},"strict":false},{"type":"custom","name":"apply_patch","format":{"type":"grammar"}}],` +
		`"reasoning":{"effort":"medium","summary":"auto"},"include":["reasoning.encrypted_content"],"prompt_cache_key":"k-1","x_future_field":[1,{"b":null}]}`
	resp := postTo(t, g.URL+"/v1/responses", body, "Accept", "text/event-stream")
	got := readAll(t, resp.Body)
	if resp.StatusCode != 200 || got != nativeSSE(nativeFrames) || resp.Header.Get("x-gateway-provider") != "br" {
		t.Fatalf("client got %d from %q:\n%s", resp.StatusCode, resp.Header.Get("x-gateway-provider"), got)
	}
	if want := strings.Replace(body, `"model":"bedrock-first"`, `"model":"openai.gpt-oss-120b"`, 1); string(br.body(0)) != want {
		t.Errorf("bedrock body:\n%s\nwant\n%s", br.body(0), want)
	}

	// Bedrock throttled before the first token: OpenAI serves the very
	// same bytes, untranslated.
	br.answer = func(w http.ResponseWriter, _ *http.Request, _ []byte) bool {
		w.Header().Set("Content-Type", "application/json")
		w.Header().Set("x-amzn-ErrorType", "ThrottlingException:http://internal.amazon.com/coral/com.amazon.bedrock/")
		w.WriteHeader(429)
		io.WriteString(w, `{"message":"Too many tokens, please wait before trying again."}`)
		return true
	}
	resp = postTo(t, g.URL+"/v1/responses", body, "Accept", "text/event-stream")
	got = readAll(t, resp.Body)
	if resp.StatusCode != 200 || got != nativeSSE(nativeFrames) || resp.Header.Get("x-gateway-provider") != "oa" || resp.Header.Get("x-gateway-dropped-features") != "" {
		t.Fatalf("after a throttle: %d from %q:\n%s", resp.StatusCode, resp.Header.Get("x-gateway-provider"), got)
	}
	if want := strings.Replace(body, `"model":"bedrock-first"`, `"model":"gpt-5"`, 1); string(oa.body(0)) != want {
		t.Errorf("openai body:\n%s\nwant\n%s", oa.body(0), want)
	}
	recs := g.waitRecs(t, 2)
	if recs[1].Provider != "oa" || len(recs[1].Attempts) < 2 || recs[1].Attempts[0].Category != "rate_limited" {
		t.Errorf("failover record = %+v", recs[1])
	}
}

// TestBedrockOpenAICutStreamIsATypedError: Bedrock's stream breaking off
// after its first token reaches the client as the typed error of its own
// API (never a clean end, never a second answer from OpenAI).
func TestBedrockOpenAICutStreamIsATypedError(t *testing.T) {
	oa := newUpstream(t, okHandler)
	br := newBedrockOAI(t, "")
	br.answer = func(w http.ResponseWriter, r *http.Request, _ []byte) bool {
		w.Header().Set("Content-Type", "text/event-stream")
		if r.URL.Path == "/v1/responses" {
			io.WriteString(w, nativeSSE(nativeFrames[:5]))
		} else {
			io.WriteString(w, roleChunk(true)+contentChunk("Hel", true))
		}
		return true
	}
	g := newGateway(t, bedrockOAIConfig(t, oa.URL, br.URL))
	client := g.sdk()
	evs, err := respEvents(client.Responses.NewStreaming(context.Background(), responses.ResponseNewParams{Model: "bedrock-first",
		Input: responses.ResponseNewParamsInputUnion{OfString: openai.String("hi")}}))
	if err == nil && (len(evs) == 0 || evs[len(evs)-1].Type != "response.failed") {
		t.Errorf("responses: a cut stream ended cleanly: %v", seqTypes(evs))
	}
	resp := postTo(t, g.URL+"/v1/chat/completions", `{"model":"bedrock-first","stream":true,"messages":[{"role":"user","content":"hi"}]}`)
	got := readAll(t, resp.Body)
	if !strings.Contains(got, `"Hel"`) || strings.Contains(got, "[DONE]") || !strings.Contains(got, `"error"`) {
		t.Errorf("chat: a cut stream is not an error event:\n%s", got)
	}
	if c := br.calls(); len(c) != 2 || c[1] != "POST /v1/chat/completions bedrock-mantle" {
		t.Errorf("bedrock calls %q", c)
	}
	if oa.hits.Load() != 0 {
		t.Errorf("openai hits %d: the cut Bedrock stream was answered again elsewhere", oa.hits.Load())
	}
}

// TestBedrockOpenAIAPIKeyAndResponsesState: with a Bedrock API key
// (AWS_BEARER_TOKEN_BEDROCK) the requests carry it as a Bearer token and
// no signature; a response Bedrock created is Bedrock's to continue: the
// follow-up naming it (previous_response_id) and its retrieval go to the
// Bedrock target, though the route puts a healthy OpenAI first.
func TestBedrockOpenAIAPIKeyAndResponsesState(t *testing.T) {
	oa := newUpstream(t, nativeHandler(nativeFrames))
	br := newBedrockOAI(t, "bedrock-api-key-test")
	cfg := bedrockOAIConfig(t, oa.URL, br.URL)
	t.Setenv("AWS_BEARER_TOKEN_BEDROCK", "bedrock-api-key-test")
	g := newGateway(t, cfg)

	code, out := doReq(t, "POST", g.URL+"/v1/responses", `{"model":"bedrock-first","input":"hello"}`)
	if id := gjson.Get(out, "id").Str; code != 200 || id != "resp_up2" {
		t.Fatalf("create: %d %s", code, out)
	}
	code, out = doReq(t, "POST", g.URL+"/v1/responses", `{"model":"gpt-responses","input":"more","previous_response_id":"resp_up2"}`)
	if code != 200 || gjson.Get(out, "id").Str != "resp_up2" {
		t.Errorf("follow-up: %d %s", code, out)
	}
	code, out = doReq(t, "GET", g.URL+"/v1/responses/resp_up2", "")
	if code != 200 || gjson.Get(out, "x_from").Str != "bedrock" {
		t.Errorf("retrieve: %d %s", code, out)
	}
	want := []string{"POST /v1/responses bedrock-mantle", "POST /v1/responses bedrock-mantle", "GET /v1/responses/resp_up2 bedrock-mantle"}
	if got := br.calls(); strings.Join(got, "|") != strings.Join(want, "|") {
		t.Errorf("bedrock calls\n got %q\nwant %q", got, want)
	}
	if gjson.GetBytes(br.body(1), "previous_response_id").Str != "resp_up2" {
		t.Errorf("follow-up body %s", br.body(1))
	}
	if n := oa.hits.Load(); n != 0 {
		t.Errorf("openai, which holds none of this state, got %d calls", n)
	}
}
