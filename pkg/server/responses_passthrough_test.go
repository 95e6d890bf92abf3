package server_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/packages/ssestream"
	"github.com/openai/openai-go/v3/responses"
	"github.com/tidwall/gjson"
)

// A Responses stream as OpenAI sends it, with fields the gateway does not
// know (obfuscation, a vendor extension) that must reach the client as
// they are.
var nativeFrames = []string{
	`{"type":"response.created","sequence_number":0,"response":{"id":"resp_up1","object":"response","created_at":1741290958,"status":"in_progress","model":"gpt-5-2025-08-07","output":[],"x_vendor":{"a":1}}}`,
	`{"type":"response.in_progress","sequence_number":1,"response":{"id":"resp_up1","object":"response","created_at":1741290958,"status":"in_progress","model":"gpt-5-2025-08-07","output":[]}}`,
	`{"type":"response.output_item.added","sequence_number":2,"output_index":0,"item":{"id":"msg_up1","type":"message","status":"in_progress","content":[],"role":"assistant"}}`,
	`{"type":"response.content_part.added","sequence_number":3,"item_id":"msg_up1","output_index":0,"content_index":0,"part":{"type":"output_text","annotations":[],"logprobs":[],"text":""}}`,
	`{"type":"response.output_text.delta","sequence_number":4,"item_id":"msg_up1","output_index":0,"content_index":0,"delta":"Native","logprobs":[],"obfuscation":"Zx9"}`,
	`{"type":"response.output_text.done","sequence_number":5,"item_id":"msg_up1","output_index":0,"content_index":0,"text":"Native","logprobs":[]}`,
	`{"type":"response.content_part.done","sequence_number":6,"item_id":"msg_up1","output_index":0,"content_index":0,"part":{"type":"output_text","annotations":[],"logprobs":[],"text":"Native"}}`,
	`{"type":"response.output_item.done","sequence_number":7,"output_index":0,"item":{"id":"msg_up1","type":"message","status":"completed","content":[{"type":"output_text","annotations":[],"logprobs":[],"text":"Native"}],"role":"assistant"}}`,
	`{"type":"response.completed","sequence_number":8,"response":{"id":"resp_up1","object":"response","created_at":1741290958,"status":"completed","model":"gpt-5-2025-08-07","output":[{"id":"msg_up1","type":"message","status":"completed","content":[{"type":"output_text","annotations":[],"logprobs":[],"text":"Native"}],"role":"assistant"}],"usage":{"input_tokens":31,"input_tokens_details":{"cached_tokens":8},"output_tokens":5,"output_tokens_details":{"reasoning_tokens":2},"total_tokens":36}}}`,
}

func nativeSSE(frames []string) string {
	var b strings.Builder
	for _, f := range frames {
		fmt.Fprintf(&b, "event: %s\ndata: %s\n\n", gjson.Get(f, "type").Str, f)
	}
	return b.String()
}

const nativeBody = `{"id":"resp_up2","object":"response","created_at":1741290958,"status":"completed","model":"gpt-5-2025-08-07","output":[{"id":"msg_up2","type":"message","status":"completed","content":[{"type":"output_text","annotations":[],"text":"Native whole"}],"role":"assistant"}],"usage":{"input_tokens":12,"input_tokens_details":{"cached_tokens":0},"output_tokens":3,"output_tokens_details":{"reasoning_tokens":0},"total_tokens":15},"x_vendor":true}`

// nativeHandler is an OpenAI Responses upstream: SSE for streams, the
// whole response object otherwise; other paths are 404.
func nativeHandler(frames []string) func(http.ResponseWriter, *http.Request, []byte, int) {
	return func(w http.ResponseWriter, r *http.Request, body []byte, _ int) {
		if r.URL.Path != "/v1/responses" {
			w.WriteHeader(404)
			return
		}
		if gjson.GetBytes(body, "stream").Bool() {
			w.Header().Set("Content-Type", "text/event-stream; charset=utf-8")
			io.WriteString(w, nativeSSE(frames))
			return
		}
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, nativeBody)
	}
}

// responsesRoute is a config with route m over a Responses-native
// provider and/or a chat-only one, in the order given ("native", "chat").
func responsesRoute(targets ...[2]string) string {
	var b strings.Builder
	// Built-in tools are served unpriced: these tests are about the
	// passthrough (fees_test.go prices them).
	b.WriteString(fastPolicy + "server: {allow_unpriced_tools: true}\nproviders:\n")
	for i, tg := range targets {
		apis := ""
		if tg[0] == "native" {
			apis = ", apis: [chat, responses]"
		}
		fmt.Fprintf(&b, "  p%d: {kind: openai, base_url: %q%s}\n", i, tg[1]+"/v1", apis)
	}
	b.WriteString("routes:\n  m:\n    attempts: 1\n    targets:\n")
	for i := range targets {
		fmt.Fprintf(&b, "      - {provider: p%d, model: up-model-%d}\n", i, i)
	}
	return b.String()
}

// TestResponsesPassthroughIsByteIdentical: to an upstream that speaks the
// Responses API the client's body goes byte for byte except the model
// (Codex's fields and unknown ones included), and the upstream's events
// come back byte for byte.
func TestResponsesPassthroughIsByteIdentical(t *testing.T) {
	up := newUpstream(t, nativeHandler(nativeFrames))
	g := newGateway(t, responsesRoute([2]string{"native", up.URL}))
	body := `{"model":"m","stream":true,"instructions":null,"input":[{"type":"message","role":"developer","content":[{"type":"input_text","text":"rules"}],"id":"m0"},` +
		`{"type":"message","role":"user","content":[{"type":"input_text","text":"hi"}]},{"type":"reasoning","id":"rs_0","summary":[],"encrypted_content":"gAAA"}],` +
		`"tools":[{"type":"function","name":"shell","parameters":{"type":"object"},"strict":false},{"type":"custom","name":"apply_patch","format":{"type":"grammar"}},{"type":"web_search"},{"type":"tool_search"}],` +
		`"tool_choice":"auto","parallel_tool_calls":false,"reasoning":{"effort":"medium","summary":"auto"},"store":false,"include":["reasoning.encrypted_content"],` +
		`"prompt_cache_key":"k-1","client_metadata":{"x":"y"},"text":{"verbosity":"low"},"x_future_field":[1,{"b":null}]}`
	resp := postTo(t, g.URL+"/v1/responses", body, "Authorization", "Bearer sk-client-secret", "Accept", "text/event-stream")
	got := readAll(t, resp.Body)
	if resp.StatusCode != 200 || got != nativeSSE(nativeFrames) {
		t.Errorf("client got %d:\n%s\nwant the upstream's bytes:\n%s", resp.StatusCode, got, nativeSSE(nativeFrames))
	}
	if want := strings.Replace(body, `"model":"m"`, `"model":"up-model-0"`, 1); string(up.body(0)) != want {
		t.Errorf("upstream body:\n%s\nwant\n%s", up.body(0), want)
	}
	if h := up.header(0).Get("Authorization"); strings.Contains(h, "sk-client-secret") {
		t.Errorf("the client's key reached the upstream: %q", h)
	}
	recs := g.waitRecs(t, 1)
	if recs[0].InputTokens != 31 || recs[0].OutputTokens != 5 || recs[0].CachedTokens != 8 || recs[0].Outcome != "ok" {
		t.Errorf("record = %+v", recs[0])
	}

	// The SDK reads the relayed stream, and the non-streaming body is the
	// upstream's own.
	client := g.sdk()
	evs, err := respEvents(client.Responses.NewStreaming(context.Background(), responses.ResponseNewParams{
		Model: "m", Input: responses.ResponseNewParamsInputUnion{OfString: openai.String("hi")}}))
	if err != nil || evs[len(evs)-1].AsResponseCompleted().Response.OutputText() != "Native" {
		t.Errorf("SDK stream: %v %v", err, seqTypes(evs))
	}
	r := postTo(t, g.URL+"/v1/responses", `{"model":"m","input":"hi","x_unknown":1}`)
	if got := readAll(t, r.Body); got != nativeBody {
		t.Errorf("non-streaming passthrough body = %s", got)
	}
}

// TestResponsesPassthroughMidStreamFailure: an upstream's response.failed
// after the first token is not relayed as a clean end: the client gets
// the gateway's response.failed, numbered after the upstream's events.
func TestResponsesPassthroughMidStreamFailure(t *testing.T) {
	frames := append(nativeFrames[:5:5], `{"type":"response.failed","sequence_number":5,"response":{"id":"resp_up1","status":"failed","error":{"code":"server_error","message":"The model crashed"}}}`)
	up := newUpstream(t, nativeHandler(frames))
	g := newGateway(t, responsesRoute([2]string{"native", up.URL}))
	client := g.sdk()
	evs, err := respEvents(client.Responses.NewStreaming(context.Background(), responses.ResponseNewParams{
		Model: "m", Input: responses.ResponseNewParamsInputUnion{OfString: openai.String("hi")}}))
	var se *ssestream.StreamError
	if !errors.As(err, &se) || len(evs) != 5 {
		t.Fatalf("err %v after %v", err, seqTypes(evs))
	}
	d := string(se.Event.Data)
	if gjson.Get(d, "type").Str != "response.failed" || gjson.Get(d, "sequence_number").Int() != 5 || gjson.Get(d, "response.id").Str != "resp_up1" ||
		gjson.Get(d, "response.error.category").Str != "interrupted" || gjson.Get(d, "response.error.provider").Str != "p0" ||
		strings.Contains(d, "The model crashed") {
		t.Errorf("failure event: %s", d)
	}
}

// TestResponsesNativeOnlyFeaturesNeedANativeTarget: built-in tools and
// stored state skip chat-only targets (no call to them) for one that speaks
// the Responses API; with none, the client gets a 400 naming the feature
// and the target, and no upstream is called.
func TestResponsesNativeOnlyFeaturesNeedANativeTarget(t *testing.T) {
	chatOnly := newUpstream(t, okHandler)
	native := newUpstream(t, nativeHandler(nativeFrames))
	g := newGateway(t, responsesRoute([2]string{"chat", chatOnly.URL}, [2]string{"native", native.URL}))
	for _, body := range []string{
		`{"model":"m","input":"hi","tools":[{"type":"web_search"}]}`,
		`{"model":"m","input":"hi","previous_response_id":"resp_prev"}`,
	} {
		r := postTo(t, g.URL+"/v1/responses", body)
		if got := readAll(t, r.Body); r.StatusCode != 200 || got != nativeBody || r.Header.Get("x-gateway-provider") != "p1" {
			t.Errorf("%s: %d %s", body, r.StatusCode, got)
		}
	}
	if chatOnly.hits.Load() != 0 || native.hits.Load() != 2 {
		t.Errorf("hits: chat-only %d, native %d", chatOnly.hits.Load(), native.hits.Load())
	}

	only := newGateway(t, responsesRoute([2]string{"chat", chatOnly.URL}))
	for _, tc := range []struct{ body, param, says string }{
		{`{"model":"m","input":"hi","tools":[{"type":"web_search"}]}`, "tools[0]", "the web_search tool is not supported by target p0/up-model-0"},
		{`{"model":"m","input":"hi","tools":[{"type":"custom","name":"apply_patch"}]}`, "tools[0]", "the custom tool"},
		{`{"model":"m","previous_response_id":"resp_prev","input":"hi"}`, "previous_response_id", "the gateway does not store conversations"},
		{`{"model":"m","conversation":"conv_1","input":"hi"}`, "conversation", "the gateway does not store conversations"},
	} {
		r := postTo(t, only.URL+"/v1/responses", tc.body)
		got := readAll(t, r.Body)
		if r.StatusCode != 400 || gjson.Get(got, "error.code").Str != "unsupported_feature" || gjson.Get(got, "error.param").Str != tc.param ||
			!strings.Contains(gjson.Get(got, "error.message").Str, tc.says) {
			t.Errorf("%s: %d %s", tc.body, r.StatusCode, got)
		}
	}
	if chatOnly.hits.Load() != 0 {
		t.Errorf("a chat-only upstream was called %d times for a native-only request", chatOnly.hits.Load())
	}
}

// TestResponsesNativeFailsOverToTranslation: a chain may mix a native
// Responses upstream and a chat-only one; the fallback translates.
func TestResponsesNativeFailsOverToTranslation(t *testing.T) {
	native := newUpstream(t, statusHandler(500, `{"error":{"message":"boom","type":"server_error"}}`))
	chatOnly := newUpstream(t, okHandler)
	g := newGateway(t, responsesRoute([2]string{"native", native.URL}, [2]string{"chat", chatOnly.URL}))
	client := g.sdk()
	evs, err := respEvents(client.Responses.NewStreaming(context.Background(), responses.ResponseNewParams{
		Model: "m", Input: responses.ResponseNewParamsInputUnion{OfString: openai.String("hi")}}))
	if err != nil {
		t.Fatal(err)
	}
	sameList(t, "events", seqTypes(evs), numbered(goldenText))
	if native.hits.Load() != 1 || !strings.Contains(string(chatOnly.body(0)), `"messages"`) {
		t.Errorf("native hits %d, chat body %s", native.hits.Load(), chatOnly.body(0))
	}
}

// TestResponsesInBandFailureBeforeContentFailsOver: a native upstream that
// announces the response, then fails before any output, is failed over;
// the client never sees its response.created.
func TestResponsesInBandFailureBeforeContentFailsOver(t *testing.T) {
	native := newUpstream(t, nativeHandler([]string{nativeFrames[0], nativeFrames[1],
		`{"type":"response.failed","sequence_number":2,"response":{"id":"resp_up1","status":"failed","error":{"code":"server_error","message":"boom"}}}`}))
	chatOnly := newUpstream(t, okHandler)
	g := newGateway(t, responsesRoute([2]string{"native", native.URL}, [2]string{"chat", chatOnly.URL}))
	client := g.sdk()
	evs, err := respEvents(client.Responses.NewStreaming(context.Background(), responses.ResponseNewParams{
		Model: "m", Input: responses.ResponseNewParamsInputUnion{OfString: openai.String("hi")}}))
	if err != nil {
		t.Fatal(err)
	}
	sameList(t, "events", seqTypes(evs), numbered(goldenText))
	if id := evs[0].AsResponseCreated().Response.ID; id == "resp_up1" {
		t.Errorf("the failed attempt's response.created reached the client")
	}
	if native.hits.Load() != 1 || chatOnly.hits.Load() != 1 {
		t.Errorf("hits: native %d, chat %d", native.hits.Load(), chatOnly.hits.Load())
	}
}
