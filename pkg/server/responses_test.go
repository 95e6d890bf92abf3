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
	"github.com/openai/openai-go/v3/option"
	"github.com/openai/openai-go/v3/packages/ssestream"
	"github.com/openai/openai-go/v3/responses"
	"github.com/tidwall/gjson"

	"github.com/llmgw/llmgw/pkg/exchange"
)

// Tests of POST /v1/responses through the official openai-go Responses
// client: translation to chat-only upstreams, the golden event lifecycle,
// a function tool round trip, a cut stream, failover.

// respEvents reads a Responses stream to its end: the events, and the
// stream's error.
func respEvents(s *ssestream.Stream[responses.ResponseStreamEventUnion]) ([]responses.ResponseStreamEventUnion, error) {
	var evs []responses.ResponseStreamEventUnion
	for s.Next() {
		evs = append(evs, s.Current())
	}
	return evs, s.Err()
}

// seqTypes lists "sequence_number type" of each event.
func seqTypes(evs []responses.ResponseStreamEventUnion) []string {
	out := make([]string, len(evs))
	for i, ev := range evs {
		out[i] = fmt.Sprintf("%d %s", ev.SequenceNumber, ev.Type)
	}
	return out
}

// numbered turns a space-separated list of event types into "i type".
func numbered(types string) []string {
	var out []string
	for i, typ := range strings.Fields(types) {
		out = append(out, fmt.Sprintf("%d %s", i, typ))
	}
	return out
}

func sameList(t *testing.T, what string, got, want []string) {
	t.Helper()
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("%s\n got: %s\nwant: %s", what, strings.Join(got, ", "), strings.Join(want, ", "))
	}
}

const goldenText = "response.created response.in_progress response.output_item.added response.content_part.added " +
	"response.output_text.delta response.output_text.delta response.output_text.done response.content_part.done " +
	"response.output_item.done response.completed"

const goldenToolCall = "response.created response.in_progress response.output_item.added " +
	"response.function_call_arguments.delta response.function_call_arguments.delta response.function_call_arguments.done " +
	"response.output_item.done response.completed"

func weatherTool() responses.ToolUnionParam {
	return responses.ToolUnionParam{OfFunction: &responses.FunctionToolParam{Name: "get_weather",
		Parameters: map[string]any{"type": "object", "properties": map[string]any{"city": map[string]any{"type": "string"}}}}}
}

// TestResponsesSDKStreamingTranslatedToChat: a Responses client served by
// a chat-only upstream gets the exact event lifecycle, its text and the
// upstream's usage; the upstream gets a chat request.
func TestResponsesSDKStreamingTranslatedToChat(t *testing.T) {
	up := newUpstream(t, okHandler)
	g := newGateway(t, oneRoute("", up.URL))
	client := g.sdk()
	var raw *http.Response
	s := client.Responses.NewStreaming(context.Background(), responses.ResponseNewParams{
		Model:        "m",
		Instructions: openai.String("Be brief."),
		Input:        responses.ResponseNewParamsInputUnion{OfString: openai.String("hi")},
	}, option.WithResponseInto(&raw))
	evs, err := respEvents(s)
	if err != nil {
		t.Fatalf("stream error: %v", err)
	}
	sameList(t, "events", seqTypes(evs), numbered(goldenText))
	last := evs[len(evs)-1].AsResponseCompleted().Response
	if last.OutputText() != "Hello world" || last.Status != "completed" || last.Usage.InputTokens != 11 || last.Usage.OutputTokens != 2 ||
		last.Usage.InputTokensDetails.CachedTokens != 3 || last.Instructions.OfString != "Be brief." {
		t.Errorf("completed response: %s", evs[len(evs)-1].RawJSON())
	}
	if ct := raw.Header.Get("Content-Type"); !strings.HasPrefix(ct, "text/event-stream") || raw.Header.Get("x-gateway-provider") != "p0" {
		t.Errorf("headers: %v", raw.Header)
	}
	sent := up.body(0)
	if gjson.GetBytes(sent, "model").Str != "up-model-0" || gjson.GetBytes(sent, "messages.0.role").Str != "system" ||
		gjson.GetBytes(sent, "messages.1.content").Str != "hi" || !gjson.GetBytes(sent, "stream_options.include_usage").Bool() ||
		gjson.GetBytes(sent, "input").Exists() {
		t.Errorf("upstream chat request: %s", sent)
	}
	recs := g.waitRecs(t, 1)
	if recs[0].API != exchange.Responses || recs[0].InputTokens != 11 || recs[0].OutputTokens != 2 || recs[0].Outcome != "ok" {
		t.Errorf("record = %+v", recs[0])
	}
}

func TestResponsesSDKNonStreaming(t *testing.T) {
	up := newUpstream(t, okHandler)
	g := newGateway(t, oneRoute("", up.URL))
	client := g.sdk()
	resp, err := client.Responses.New(context.Background(), responses.ResponseNewParams{
		Model: "m",
		Input: responses.ResponseNewParamsInputUnion{OfInputItemList: responses.ResponseInputParam{
			responses.ResponseInputItemParamOfMessage("hi", responses.EasyInputMessageRoleDeveloper),
			responses.ResponseInputItemParamOfMessage("hello", responses.EasyInputMessageRoleUser),
		}},
		MaxOutputTokens: openai.Int(100),
	})
	if err != nil {
		t.Fatalf("SDK error: %v", err)
	}
	if resp.OutputText() != "Hello world" || resp.Status != "completed" || resp.Usage.InputTokens != 1117 || resp.Usage.OutputTokens != 46 ||
		resp.Object != "response" || !strings.HasPrefix(resp.ID, "resp_") || resp.MaxOutputTokens != 100 {
		t.Errorf("response = %s", resp.RawJSON())
	}
	sent := up.body(0)
	if gjson.GetBytes(sent, "messages.0.role").Str != "system" || gjson.GetBytes(sent, "max_tokens").Int() != 100 || gjson.GetBytes(sent, "stream").Bool() {
		t.Errorf("upstream chat request: %s", sent)
	}
}

// TestResponsesSDKFunctionToolRoundTrip: the model calls a function (an
// output item with the full arguments), the client sends the call and its
// output back as items, and the upstream sees an assistant tool call and a
// tool message.
func TestResponsesSDKFunctionToolRoundTrip(t *testing.T) {
	up := newUpstream(t, func(w http.ResponseWriter, r *http.Request, body []byte, n int) {
		if n == 1 {
			openaiToolCall(w)
			return
		}
		streamReply(w, []string{"18C", " in Paris"}, true)
	})
	g := newGateway(t, oneRoute("", up.URL))
	client := g.sdk()
	params := responses.ResponseNewParams{
		Model: "m",
		Input: responses.ResponseNewParamsInputUnion{OfInputItemList: responses.ResponseInputParam{
			responses.ResponseInputItemParamOfMessage("weather in Paris?", responses.EasyInputMessageRoleUser)}},
		Tools: []responses.ToolUnionParam{weatherTool()},
	}
	evs, err := respEvents(client.Responses.NewStreaming(context.Background(), params))
	if err != nil {
		t.Fatalf("stream error: %v", err)
	}
	sameList(t, "events", seqTypes(evs), numbered(goldenToolCall))
	var call responses.ResponseFunctionToolCall
	for _, ev := range evs {
		if ev.Type == "response.output_item.done" {
			call = ev.AsResponseOutputItemDone().Item.AsFunctionCall()
		}
	}
	if call.Name != "get_weather" || call.CallID != "call_DdmO9pD3xa9XTPNJ32zg2hcA" || call.Arguments != `{"city": "Paris"}` {
		t.Fatalf("function call item = %+v", call)
	}
	out := responses.ResponseInputItemParamOfFunctionCallOutput("18C")
	out.OfFunctionCallOutput.CallID = openai.String(call.CallID)
	params.Input.OfInputItemList = append(params.Input.OfInputItemList,
		responses.ResponseInputItemParamOfFunctionCall(call.Arguments, call.CallID, call.Name), out)
	evs, err = respEvents(client.Responses.NewStreaming(context.Background(), params))
	if err != nil {
		t.Fatalf("second stream error: %v", err)
	}
	if got := evs[len(evs)-1].AsResponseCompleted().Response.OutputText(); got != "18C in Paris" {
		t.Errorf("answer = %q", got)
	}
	sent := up.body(1)
	msgs := gjson.GetBytes(sent, "messages")
	if msgs.Get("#").Int() != 3 || msgs.Get("1.role").Str != "assistant" || msgs.Get("1.tool_calls.0.id").Str != call.CallID ||
		msgs.Get("1.tool_calls.0.function.arguments").Str != `{"city": "Paris"}` || msgs.Get("2.role").Str != "tool" ||
		msgs.Get("2.tool_call_id").Str != call.CallID || msgs.Get("2.content").Str != "18C" {
		t.Errorf("second upstream request: %s", sent)
	}
}

// TestResponsesSDKSurfacesCutStreamAsError: an upstream that dies after
// the first tokens ends the client's stream with response.failed, which
// openai-go raises as an error; response.completed never comes.
func TestResponsesSDKSurfacesCutStreamAsError(t *testing.T) {
	up := newUpstream(t, func(w http.ResponseWriter, r *http.Request, body []byte, n int) {
		w.Header().Set("Content-Type", "text/event-stream")
		io.WriteString(w, roleChunk(true)+contentChunk("Once", true)+contentChunk(" upon", true))
	})
	g := newGateway(t, oneRoute("", up.URL))
	client := g.sdk()
	evs, err := respEvents(client.Responses.NewStreaming(context.Background(), responses.ResponseNewParams{
		Model: "m", Input: responses.ResponseNewParamsInputUnion{OfString: openai.String("story")}}))
	var se *ssestream.StreamError
	if !errors.As(err, &se) {
		t.Fatalf("stream error = %v, want the SDK's StreamError", err)
	}
	sameList(t, "events before the error", seqTypes(evs), numbered("response.created response.in_progress "+
		"response.output_item.added response.content_part.added response.output_text.delta response.output_text.delta"))
	failed := string(se.Event.Data)
	if se.Event.Type != "response.failed" || gjson.Get(failed, "sequence_number").Int() != 6 ||
		gjson.Get(failed, "response.status").Str != "failed" || gjson.Get(failed, "response.error.category").Str != "interrupted" ||
		!gjson.Get(failed, "response.error.retryable").Bool() || gjson.Get(failed, "response.error.provider").Str != "p0" ||
		gjson.Get(failed, "response.output.0.content.0.text").Str != "Once upon" {
		t.Errorf("failure event %s: %s", se.Event.Type, failed)
	}
	recs := g.waitRecs(t, 1)
	if recs[0].Outcome != "interrupted" {
		t.Errorf("record outcome %q", recs[0].Outcome)
	}
}

// TestResponsesFailoverBeforeFirstTokenIsInvisible: the first target
// fails, the second serves; the client sees one clean lifecycle numbered
// from 0.
func TestResponsesFailoverBeforeFirstTokenIsInvisible(t *testing.T) {
	bad := newUpstream(t, statusHandler(503, `{"error":{"message":"overloaded","type":"server_error"}}`))
	good := newUpstream(t, okHandler)
	g := newGateway(t, oneRoute("    attempts: 1\n", bad.URL, good.URL))
	var raw *http.Response
	client := g.sdk()
	evs, err := respEvents(client.Responses.NewStreaming(context.Background(), responses.ResponseNewParams{
		Model: "m", Input: responses.ResponseNewParamsInputUnion{OfString: openai.String("hi")}}, option.WithResponseInto(&raw)))
	if err != nil {
		t.Fatalf("stream error: %v", err)
	}
	sameList(t, "events", seqTypes(evs), numbered(goldenText))
	if raw.Header.Get("x-gateway-attempts") != "2" || raw.Header.Get("x-gateway-fallback-depth") != "1" || raw.Header.Get("x-gateway-provider") != "p1" {
		t.Errorf("headers: %v", raw.Header)
	}
	if bad.hits.Load() != 1 || good.hits.Load() != 1 {
		t.Errorf("hits: %d, %d", bad.hits.Load(), good.hits.Load())
	}
}

// TestResponsesBadInputIs400WithoutUpstreamCall: invalid input gets the
// OpenAI error shape, naming the field.
func TestResponsesBadInputIs400WithoutUpstreamCall(t *testing.T) {
	up := newUpstream(t, okHandler)
	g := newGateway(t, oneRoute("", up.URL))
	for _, tc := range []struct{ body, param string }{
		{`{"model":"m","input":[{"role":"robot","content":"x"}]}`, "input[0].role"},
		{`{"model":"m","input":"x","tools":[{"type":"function"}]}`, "tools[0].name"},
		{`{"model":"m","input":"x","max_output_tokens":-1}`, "max_output_tokens"},
		{`{"input":"x"}`, "model"},
	} {
		resp := postTo(t, g.URL+"/v1/responses", tc.body)
		body := readAll(t, resp.Body)
		if resp.StatusCode != 400 || gjson.Get(body, "error.type").Str != "invalid_request" || gjson.Get(body, "error.param").Str != tc.param ||
			gjson.Get(body, "error.message").Str == "" || !gjson.Get(body, "error.code").Exists() {
			t.Errorf("%s: %d %s", tc.body, resp.StatusCode, body)
		}
	}
	if up.hits.Load() != 0 {
		t.Errorf("bad input reached the upstream %d times", up.hits.Load())
	}
}

// postTo sends a raw JSON body to a gateway path.
func postTo(t *testing.T, url, body string, hdr ...string) *http.Response {
	t.Helper()
	req, _ := http.NewRequest(http.MethodPost, url, strings.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	for i := 0; i+1 < len(hdr); i += 2 {
		req.Header.Set(hdr[i], hdr[i+1])
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("post: %v", err)
	}
	t.Cleanup(func() { resp.Body.Close() })
	return resp
}
