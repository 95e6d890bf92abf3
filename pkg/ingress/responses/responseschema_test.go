package responses_test

import (
	"encoding/json"
	"reflect"
	"strconv"
	"strings"
	"testing"

	"github.com/openai/openai-go/v3/packages/respjson"
	oresp "github.com/openai/openai-go/v3/responses"
	"github.com/tidwall/gjson"

	"github.com/llmgw/llmgw/pkg/exchange"
	"github.com/llmgw/llmgw/pkg/ingress/responses"
)

// openResponsesRequired is the required list of the Open Responses
// specification's ResponseResource (schema/components/schemas/
// ResponseResource.json), which its compliance tests check every response
// object against.
var openResponsesRequired = []string{
	"id", "object", "created_at", "completed_at", "status", "incomplete_details", "model", "previous_response_id",
	"instructions", "output", "error", "tools", "tool_choice", "truncation", "parallel_tool_calls", "text", "top_p",
	"presence_penalty", "frequency_penalty", "top_logprobs", "temperature", "reasoning", "user", "usage",
	"max_output_tokens", "max_tool_calls", "store", "background", "service_tier", "metadata", "safety_identifier",
	"prompt_cache_key",
}

// sdkRequired lists the members the official SDK's type marks required
// (api:"required") or nullable (present, possibly null: api:"nullable").
func sdkRequired(t reflect.Type) (required, nullable []string) {
	for i := 0; i < t.NumField(); i++ {
		f := t.Field(i)
		name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
		switch f.Tag.Get("api") {
		case "required":
			required = append(required, name)
		case "nullable":
			nullable = append(nullable, name)
		}
	}
	return required, nullable
}

// checkResponseObject checks one response object field by field against
// the Open Responses required list and the SDK's own type.
func checkResponseObject(t *testing.T, where, obj string) {
	t.Helper()
	for _, k := range openResponsesRequired {
		if !gjson.Get(obj, k).Exists() {
			t.Errorf("%s: the schema's required %q is missing", where, k)
		}
	}
	var r oresp.Response
	if err := json.Unmarshal([]byte(obj), &r); err != nil {
		t.Fatalf("%s: the SDK does not parse it: %v", where, err)
	}
	req, nul := sdkRequired(reflect.TypeOf(r))
	meta := reflect.ValueOf(r.JSON)
	field := func(json string) respjson.Field {
		for i := 0; i < meta.NumField(); i++ {
			f := meta.Type().Field(i)
			if strings.EqualFold(strings.ReplaceAll(json, "_", ""), f.Name) {
				return meta.Field(i).Interface().(respjson.Field)
			}
		}
		t.Fatalf("the SDK has no metadata for %q", json)
		return respjson.Field{}
	}
	for _, k := range req {
		if f := field(k); !f.Valid() && !(f.Raw() == respjson.Null && gjson.Get(obj, k).Exists()) {
			t.Errorf("%s: the SDK's required %q is %q (absent or of the wrong type)", where, k, f.Raw())
		}
	}
	for _, k := range nul {
		if k == "conversation" || k == "prompt" || k == "moderation" || k == "prompt_cache_retention" {
			continue // not in the schema's required list: present only when the request used them
		}
		if f := field(k); f.Raw() == respjson.Omitted {
			t.Errorf("%s: %q is omitted", where, k)
		} else if f.Raw() != respjson.Null && !f.Valid() {
			t.Errorf("%s: %q = %s does not parse as the SDK's type", where, k, f.Raw())
		}
	}
	freq, _ := sdkRequired(reflect.TypeOf(oresp.FunctionTool{}))
	for i, tool := range r.Tools {
		if tool.Type != "function" {
			continue
		}
		for _, k := range freq {
			if !gjson.Get(obj, "tools."+strconv.Itoa(i)+"."+k).Exists() {
				t.Errorf("%s: tools[%d] lacks the required %q: %s", where, i, k, gjson.Get(obj, "tools").Raw)
			}
		}
	}
}

// TestResponseObjectHasEveryRequiredField: every response object a
// translated path writes - the streamed created, in_progress, completed,
// incomplete and failed events' and the whole body - carries every member
// the published schema and the SDK require, echoes what the request set
// (penalties, tiers, identifiers, strict) and keeps sequence_number on
// every event.
func TestResponseObjectHasEveryRequiredField(t *testing.T) {
	body := `{"model":"route-m","input":"hi","presence_penalty":0.5,"frequency_penalty":0.25,"top_logprobs":2,"max_tool_calls":3,` +
		`"service_tier":"flex","safety_identifier":"u-1","prompt_cache_key":"ck","tools":[{"type":"function","name":"a","strict":true,"parameters":{"type":"object"}},` +
		`{"type":"function","name":"b"},{"type":"function","name":"c","description":"d"}]}`
	run := func(stream bool, evs []exchange.Event) string {
		req := &exchange.Request{ID: "req_abc", Route: "route-m", Stream: stream, Body: []byte(body)}
		enc := responses.Ingress{}.NewEncoder(req)
		var out []byte
		for i := range evs {
			out = enc.Event(out, &evs[i])
		}
		return string(enc.End(out, exchange.TokenUsage{Input: 3, Output: 2}))
	}
	evs := []exchange.Event{start, text("Hi"), finish("stop")}
	whole := run(false, evs)
	checkResponseObject(t, "body", whole)
	want := map[string]string{"presence_penalty": "0.5", "frequency_penalty": "0.25", "top_logprobs": "2", "max_tool_calls": "3",
		"service_tier": `"flex"`, "safety_identifier": `"u-1"`, "prompt_cache_key": `"ck"`, "store": "false", "background": "false",
		"tools.0.strict": "true", "tools.1.strict": "false", "tools.1.parameters": "null", "tools.2.description": `"d"`}
	for k, v := range want {
		if got := gjson.Get(whole, k).Raw; got != v {
			t.Errorf("%s = %s, want %s", k, got, v)
		}
	}
	if c := gjson.Get(whole, "completed_at"); c.Int() < gjson.Get(whole, "created_at").Int() || c.Type != gjson.Number {
		t.Errorf("completed_at = %s for a completed response", c.Raw)
	}

	_, fs := checkStream(t, run(true, evs))
	n := 0
	for _, f := range fs {
		switch f.event {
		case "response.created", "response.in_progress", "response.completed":
			n++
			r := gjson.Get(f.data, "response").Raw
			checkResponseObject(t, f.event, r)
			if f.event != "response.completed" && gjson.Get(r, "completed_at").Type != gjson.Null {
				t.Errorf("%s: completed_at set before completion", f.event)
			}
		}
	}
	if n != 3 {
		t.Errorf("%d response events, want created, in_progress, completed", n)
	}
	_, fs = checkStream(t, run(true, []exchange.Event{start, text("Once"), finish("length")}))
	checkResponseObject(t, "incomplete", gjson.Get(fs[len(fs)-1].data, "response").Raw)

	// A request with no optional member still gets every required one.
	req := &exchange.Request{ID: "req_abc", Route: "m", Body: []byte(`{"model":"m","input":"hi"}`)}
	enc := responses.Ingress{}.NewEncoder(req)
	var out []byte
	for i := range evs {
		out = enc.Event(out, &evs[i])
	}
	bare := string(enc.End(out, exchange.TokenUsage{}))
	checkResponseObject(t, "bare", bare)
	if gjson.Get(bare, "service_tier").Str != "default" || gjson.Get(bare, "tools").Raw != "[]" {
		t.Errorf("bare defaults: %s", bare)
	}
}
