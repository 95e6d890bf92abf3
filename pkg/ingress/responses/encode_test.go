package responses_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	oresp "github.com/openai/openai-go/v3/responses"
	"github.com/tidwall/gjson"

	"github.com/llmgw/llmgw/pkg/exchange"
	"github.com/llmgw/llmgw/pkg/gwerr"
	"github.com/llmgw/llmgw/pkg/ingress/responses"
)

// frame is one SSE frame of an encoded stream.
type frame struct{ event, data string }

func parseFrames(t *testing.T, out string) []frame {
	t.Helper()
	if !strings.HasSuffix(out, "\n\n") {
		t.Fatalf("stream does not end with a blank line: %q", out)
	}
	var fs []frame
	for _, block := range strings.Split(strings.TrimSuffix(out, "\n\n"), "\n\n") {
		var f frame
		for _, line := range strings.Split(block, "\n") {
			switch {
			case strings.HasPrefix(line, "event: "):
				f.event = strings.TrimPrefix(line, "event: ")
			case strings.HasPrefix(line, "data: "):
				f.data = strings.TrimPrefix(line, "data: ")
			default:
				t.Fatalf("unexpected line %q", line)
			}
		}
		fs = append(fs, f)
	}
	return fs
}

// checkStream asserts the invariants every encoded stream must hold: each
// frame has an event line equal to its data's type, sequence numbers count
// from 0 without gaps, every event parses as the official SDK's
// ResponseStreamEventUnion, each done event repeats exactly the deltas
// before it, and it returns "seq type" lines.
func checkStream(t *testing.T, out string) ([]string, []frame) {
	t.Helper()
	fs := parseFrames(t, out)
	var got []string
	deltas := map[string]string{}
	for i, f := range fs {
		if !json.Valid([]byte(f.data)) {
			t.Fatalf("frame %d: invalid JSON %s", i, f.data)
		}
		typ := gjson.Get(f.data, "type").Str
		if f.event != typ {
			t.Errorf("frame %d: event line %q, data type %q", i, f.event, typ)
		}
		if n := gjson.Get(f.data, "sequence_number"); !n.Exists() || n.Int() != int64(i) {
			t.Errorf("frame %d (%s): sequence_number %s, want %d", i, typ, n.Raw, i)
		}
		var ev oresp.ResponseStreamEventUnion
		if err := json.Unmarshal([]byte(f.data), &ev); err != nil || ev.Type != typ {
			t.Errorf("frame %d: the SDK does not parse it: %v", i, err)
		}
		key := gjson.Get(f.data, "item_id").Str
		switch typ {
		case "response.output_text.delta", "response.function_call_arguments.delta", "response.reasoning_summary_text.delta":
			deltas[key] += gjson.Get(f.data, "delta").Str
		case "response.output_text.done", "response.reasoning_summary_text.done":
			if d := gjson.Get(f.data, "text").Str; d != deltas[key] {
				t.Errorf("frame %d: %s text %q, deltas %q", i, typ, d, deltas[key])
			}
		case "response.function_call_arguments.done":
			if d := gjson.Get(f.data, "arguments").Str; d != deltas[key] && !(d == "{}" && deltas[key] == "") {
				t.Errorf("frame %d: arguments %q, deltas %q", i, d, deltas[key])
			}
		}
		got = append(got, fmt.Sprintf("%d %s", i, typ))
	}
	return got, fs
}

// encode runs events through a streaming (or not) encoder and returns what
// it wrote, End or Fail included.
func encode(stream bool, evs []exchange.Event, fail *gwerr.Error) string {
	req := &exchange.Request{ID: "req_abc", Route: "route-m", Stream: stream,
		Body: []byte(`{"model":"route-m","input":"hi","instructions":"Be brief.","tools":[{"type":"function","name":"get_weather"}],"metadata":{"tag":"t"}}`)}
	enc := responses.Ingress{}.NewEncoder(req)
	var out, buf []byte
	for i := range evs {
		buf = enc.Event(buf[:0], &evs[i])
		out = append(out, buf...)
	}
	u := exchange.TokenUsage{Input: 11, Output: 7, CacheRead: 3, Reasoning: 2}
	if fail != nil {
		return string(enc.Fail(out, fail, req.ID, u))
	}
	return string(enc.End(out, u))
}

var (
	start = exchange.Event{Kind: exchange.Start, ID: "chatcmpl-1", Name: "up-model", Created: 1741569952}
	usage = exchange.Event{Kind: exchange.Usage, Usage: exchange.TokenUsage{Input: 11, Output: 7}}
)

func text(s string) exchange.Event      { return exchange.Event{Kind: exchange.Text, Text: s} }
func reasoning(s string) exchange.Event { return exchange.Event{Kind: exchange.Reasoning, Text: s} }
func finish(r string) exchange.Event    { return exchange.Event{Kind: exchange.Finish, Finish: r} }
func call(i int, id, name string) exchange.Event {
	return exchange.Event{Kind: exchange.ToolCall, Index: i, ID: id, Name: name}
}
func args(i int, s string) exchange.Event {
	return exchange.Event{Kind: exchange.ToolArgs, Index: i, Text: s}
}

// TestStreamGolden pins the exact ordered event lifecycle of each kind of
// translated response.
func TestStreamGolden(t *testing.T) {
	for _, tc := range []struct {
		name string
		evs  []exchange.Event
		fail *gwerr.Error
		want string
	}{
		{"text", []exchange.Event{start, text("Hel"), text("lo"), finish("stop"), usage}, nil,
			"response.created response.in_progress response.output_item.added response.content_part.added " +
				"response.output_text.delta response.output_text.delta response.output_text.done response.content_part.done " +
				"response.output_item.done response.completed"},
		{"tool_calls", []exchange.Event{start, call(0, "call_A", "get_weather"), args(0, `{"city":`), args(0, `"Paris"}`),
			call(1, "call_B", "get_time"), args(1, `{}`), finish("tool_calls"), usage}, nil,
			"response.created response.in_progress response.output_item.added response.function_call_arguments.delta " +
				"response.function_call_arguments.delta response.function_call_arguments.done response.output_item.done " +
				"response.output_item.added response.function_call_arguments.delta response.function_call_arguments.done " +
				"response.output_item.done response.completed"},
		{"reasoning_then_text", []exchange.Event{start, reasoning("think"), reasoning("ing"), text("Hi"), finish("stop")}, nil,
			"response.created response.in_progress response.output_item.added response.reasoning_summary_part.added " +
				"response.reasoning_summary_text.delta response.reasoning_summary_text.delta response.reasoning_summary_text.done " +
				"response.reasoning_summary_part.done response.output_item.done response.output_item.added response.content_part.added " +
				"response.output_text.delta response.output_text.done response.content_part.done response.output_item.done response.completed"},
		{"text_then_tool", []exchange.Event{start, text("Let me check."), call(0, "", "get_weather"), finish("tool_calls")}, nil,
			"response.created response.in_progress response.output_item.added response.content_part.added " +
				"response.output_text.delta response.output_text.done response.content_part.done response.output_item.done " +
				"response.output_item.added response.function_call_arguments.done response.output_item.done response.completed"},
		{"length_is_incomplete", []exchange.Event{start, text("Once upon"), finish("length")}, nil,
			"response.created response.in_progress response.output_item.added response.content_part.added " +
				"response.output_text.delta response.output_text.done response.content_part.done response.output_item.done " +
				"response.incomplete"},
		{"failure_mid_text", []exchange.Event{start, text("Once"), text(" upon")},
			&gwerr.Error{Category: gwerr.Interrupted, Message: "provider stream was interrupted", Provider: "p0"},
			"response.created response.in_progress response.output_item.added response.content_part.added " +
				"response.output_text.delta response.output_text.delta response.failed"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			out := encode(true, tc.evs, tc.fail)
			got, fs := checkStream(t, out)
			var want []string
			for i, typ := range strings.Fields(tc.want) {
				want = append(want, fmt.Sprintf("%d %s", i, typ))
			}
			if strings.Join(got, "\n") != strings.Join(want, "\n") {
				t.Fatalf("events\n got %s\nwant %s", strings.Join(got, ", "), strings.Join(want, ", "))
			}
			last := fs[len(fs)-1].data
			resp := gjson.Get(last, "response")
			if resp.Get("id").Str != "resp_abc" || resp.Get("model").Str != "up-model" || resp.Get("instructions").Str != "Be brief." ||
				resp.Get("tools.0.name").Str != "get_weather" || resp.Get("metadata.tag").Str != "t" || resp.Get("created_at").Int() != 1741569952 {
				t.Errorf("final response object: %s", resp.Raw)
			}
			if u := resp.Get("usage"); u.Get("input_tokens").Int() != 11 || u.Get("output_tokens").Int() != 7 || u.Get("total_tokens").Int() != 18 ||
				u.Get("input_tokens_details.cached_tokens").Int() != 3 || u.Get("output_tokens_details.reasoning_tokens").Int() != 2 {
				t.Errorf("usage = %s", u.Raw)
			}
		})
	}
}

func TestStreamFinalObjects(t *testing.T) {
	out := encode(true, []exchange.Event{start, text("Let me check."), call(0, "call_A", "get_weather"), args(0, `{"city":"Paris"}`), finish("tool_calls")}, nil)
	_, fs := checkStream(t, out)
	var done []string
	for _, f := range fs {
		if f.event == "response.output_item.done" {
			done = append(done, gjson.Get(f.data, "item").Raw)
		}
	}
	wantMsg := `{"id":"msg_abc_0","type":"message","status":"completed","content":[{"type":"output_text","annotations":[],"logprobs":[],"text":"Let me check."}],"role":"assistant"}`
	wantCall := `{"id":"fc_abc_1","type":"function_call","status":"completed","arguments":"{\"city\":\"Paris\"}","call_id":"call_A","name":"get_weather"}`
	if len(done) != 2 || done[0] != wantMsg || done[1] != wantCall {
		t.Errorf("output_item.done items:\n%s\nwant\n%s\n%s", strings.Join(done, "\n"), wantMsg, wantCall)
	}
	completed := gjson.Get(fs[len(fs)-1].data, "response")
	if completed.Get("status").Str != "completed" || completed.Get("output").Raw != "["+wantMsg+","+wantCall+"]" {
		t.Errorf("completed response: %s", completed.Raw)
	}
	created := gjson.Get(fs[0].data, "response")
	if created.Get("status").Str != "in_progress" || created.Get("output").Raw != "[]" || created.Get("usage").Type != gjson.Null {
		t.Errorf("created response: %s", created.Raw)
	}
}

func TestStreamIncompleteAndFailedObjects(t *testing.T) {
	_, fs := checkStream(t, encode(true, []exchange.Event{start, text("Once"), finish("length")}, nil))
	r := gjson.Get(fs[len(fs)-1].data, "response")
	if r.Get("status").Str != "incomplete" || r.Get("incomplete_details.reason").Str != "max_output_tokens" || r.Get("output.0.status").Str != "incomplete" {
		t.Errorf("incomplete response: %s", r.Raw)
	}

	ge := &gwerr.Error{Category: gwerr.Interrupted, Message: "provider stream was interrupted", Provider: "p0"}
	_, fs = checkStream(t, encode(true, []exchange.Event{start, text("Once")}, ge))
	last := fs[len(fs)-1].data
	r = gjson.Get(last, "response")
	e := r.Get("error")
	if r.Get("status").Str != "failed" || e.Get("code").Str != "interrupted" || e.Get("category").Str != "interrupted" ||
		!e.Get("retryable").Bool() || e.Get("provider").Str != "p0" || e.Get("request_id").Str != "req_abc" ||
		r.Get("output.0.status").Str != "incomplete" || r.Get("output.0.content.0.text").Str != "Once" || r.Get("usage.output_tokens").Int() != 7 {
		t.Errorf("failed response: %s", r.Raw)
	}
	if top := gjson.Get(last, "error"); top.Raw != e.Raw {
		t.Errorf("top-level error %s, want the response's %s (the SDKs raise on it)", top.Raw, e.Raw)
	}
	if out := encode(true, []exchange.Event{start, text("Once")}, ge); strings.Contains(out, "response.completed") || strings.Contains(out, `"completed"`) ||
		!strings.Contains(out, `"completed_at":null`) {
		t.Error("a failed stream mentions completed")
	}
}

// TestPassthroughRelaysUpstreamEventsUntouched: a native upstream's events
// go out as they came, each with its event line; a failure after them is a
// response.failed continuing the upstream's own numbering and id.
func TestPassthroughRelaysUpstreamEventsUntouched(t *testing.T) {
	up := []string{
		`{"type":"response.created","sequence_number":0,"response":{"id":"resp_up","object":"response","created_at":1,"status":"in_progress","model":"gpt-5","output":[],"x_vendor":1}}`,
		`{"type":"response.in_progress","sequence_number":1,"response":{"id":"resp_up","object":"response","created_at":1,"status":"in_progress","model":"gpt-5","output":[]}}`,
		`{"type":"response.output_item.added","sequence_number":2,"output_index":0,"item":{"id":"msg_up","type":"message","status":"in_progress","content":[],"role":"assistant"}}`,
		`{"type":"response.output_text.delta","sequence_number":3,"item_id":"msg_up","output_index":0,"content_index":0,"delta":"Hi","logprobs":[],"obfuscation":"abc"}`,
	}
	var evs []exchange.Event
	var want strings.Builder
	for _, d := range up {
		evs = append(evs, exchange.Event{Kind: exchange.Raw, Raw: []byte(d), RawAPI: exchange.Responses})
		fmt.Fprintf(&want, "event: %s\ndata: %s\n\n", gjson.Get(d, "type").Str, d)
	}
	ge := &gwerr.Error{Category: gwerr.Interrupted, Message: "provider stream was interrupted", Provider: "oa"}
	out := encode(true, evs, ge)
	if !strings.HasPrefix(out, want.String()) {
		t.Fatalf("relayed bytes differ:\n%s\nwant prefix\n%s", out, want.String())
	}
	got, fs := checkStream(t, out)
	if len(got) != 5 || got[4] != "4 response.failed" || gjson.Get(fs[4].data, "response.id").Str != "resp_up" {
		t.Errorf("after the relay: %v %s", got, fs[len(fs)-1].data)
	}
	if out := encode(true, evs[:1], nil); out != want.String()[:len(out)] || strings.Count(out, "event:") != 1 {
		t.Errorf("a clean passthrough end adds bytes: %q", out)
	}

	whole := `{"id":"resp_up","object":"response","status":"completed","output":[],"unknown":{"kept":true}}`
	if got := encode(false, []exchange.Event{{Kind: exchange.Raw, Raw: []byte(whole), RawAPI: exchange.Responses, Flags: exchange.Whole}}, nil); got != whole {
		t.Errorf("non-streaming passthrough body = %s", got)
	}
}

// TestBodyIsOneResponseObject: a non-streaming response is the response
// object the SDK decodes, aggregated from the events.
func TestBodyIsOneResponseObject(t *testing.T) {
	out := encode(false, []exchange.Event{start, reasoning("hmm"), text("Hello"), text(" world"), call(0, "call_A", "get_weather"),
		args(0, `{"city":"Paris"}`), finish("tool_calls"), usage}, nil)
	var r oresp.Response
	if err := json.Unmarshal([]byte(out), &r); err != nil {
		t.Fatalf("SDK cannot decode %s: %v", out, err)
	}
	if r.ID != "resp_abc" || r.Status != "completed" || r.OutputText() != "Hello world" || len(r.Output) != 3 ||
		r.Output[0].Type != "reasoning" || r.Output[0].Summary[0].Text != "hmm" ||
		r.Output[2].Type != "function_call" || r.Output[2].Arguments.OfString != `{"city":"Paris"}` || r.Output[2].CallID != "call_A" {
		t.Errorf("response = %s", out)
	}
	if r.Usage.InputTokens != 11 || r.Usage.OutputTokens != 7 || r.Usage.TotalTokens != 18 || r.Usage.InputTokensDetails.CachedTokens != 3 {
		t.Errorf("usage = %+v", r.Usage)
	}
	if bytes.Contains([]byte(out), []byte("event:")) {
		t.Error("a non-streaming body holds SSE frames")
	}
}

// TestNamespacedCallIsSplitBack: a call of a flattened namespace function
// comes back as a function_call item with its namespace and name.
func TestNamespacedCallIsSplitBack(t *testing.T) {
	req := &exchange.Request{ID: "req_abc", Route: "m", Stream: true,
		Body: []byte(`{"model":"m","input":"x","tools":[{"type":"namespace","name":"multi_agent_v1","tools":[{"type":"function","name":"spawn_agent"}]},{"type":"function","name":"a__b"}]}`)}
	enc := responses.Ingress{}.NewEncoder(req)
	var out []byte
	for _, ev := range []exchange.Event{start, call(0, "c1", "multi_agent_v1__spawn_agent"), args(0, "{}"), call(1, "c2", "a__b"), finish("tool_calls")} {
		out = enc.Event(out, &ev)
	}
	_, fs := checkStream(t, string(enc.End(out, exchange.TokenUsage{})))
	var items []string
	for _, f := range fs {
		if f.event == "response.output_item.done" {
			items = append(items, gjson.Get(f.data, "item.namespace").Str+"|"+gjson.Get(f.data, "item.name").Str)
		}
	}
	if strings.Join(items, ",") != "multi_agent_v1|spawn_agent,|a__b" {
		t.Errorf("items = %v", items)
	}
}

// TestStreamEncoderAllocationFree: once a response has started, a text
// delta (translated) and a relayed upstream event (passthrough) are
// written into the caller's reused buffer without allocating.
func TestStreamEncoderAllocationFree(t *testing.T) {
	req := &exchange.Request{ID: "req_abc", Route: "m", Stream: true, Body: []byte(`{"model":"m","input":"hi"}`)}
	enc := responses.Ingress{}.NewEncoder(req)
	buf := make([]byte, 0, 4096)
	for _, ev := range []exchange.Event{start, text("warm")} {
		buf = enc.Event(buf[:0], &ev)
	}
	delta := text("hello")
	if n := testing.AllocsPerRun(2000, func() { buf = enc.Event(buf[:0], &delta) }); n != 0 {
		t.Errorf("%v allocations per translated text delta", n)
	}
	pass := responses.Ingress{}.NewEncoder(req)
	raw := exchange.Event{Kind: exchange.Raw, RawAPI: exchange.Responses,
		Raw: []byte(`{"type":"response.output_text.delta","sequence_number":4,"item_id":"msg_1","output_index":0,"content_index":0,"delta":"Hi","logprobs":[]}`)}
	buf = pass.Event(buf[:0], &raw)
	if n := testing.AllocsPerRun(2000, func() { buf = pass.Event(buf[:0], &raw) }); n != 0 {
		t.Errorf("%v allocations per relayed event", n)
	}
}
