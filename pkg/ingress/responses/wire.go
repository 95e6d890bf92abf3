package responses

import (
	"bytes"
	"strconv"
	"strings"
	"unsafe"

	"github.com/tidwall/gjson"

	"github.com/llmgw/llmgw/pkg/exchange"
	"github.com/llmgw/llmgw/pkg/wire/chatwire"
	"github.com/llmgw/llmgw/pkg/wire/jsonb"
)

// This file appends the Responses API's JSON: events, the response object,
// output items and usage. Every appender writes into the caller's buffer;
// strings go through jsonb.AppendString.

var str = jsonb.AppendString

// begin opens an SSE frame for an event of type typ: its `event:` line and
// the data object up to its sequence_number, which it takes from e.seq.
func (e *encoder) begin(dst []byte, typ string) []byte {
	dst = append(dst, "event: "...)
	dst = append(dst, typ...)
	dst = append(dst, "\ndata: {\"type\":\""...)
	dst = append(dst, typ...)
	dst = append(dst, `","sequence_number":`...)
	dst = strconv.AppendInt(dst, e.seq, 10)
	e.seq++
	return dst
}

// end closes the frame begin opened.
func end(dst []byte) []byte { return append(dst, "}\n\n"...) }

// itemRef appends ,"item_id":ID,"output_index":N.
func itemRef(dst []byte, it *item, index int) []byte {
	dst = append(dst, `,"item_id":`...)
	dst = str(dst, it.id)
	dst = append(dst, `,"output_index":`...)
	return strconv.AppendInt(dst, int64(index), 10)
}

// outputText appends an output_text content part.
func outputText(dst []byte, text string) []byte {
	dst = append(dst, `{"type":"output_text","annotations":[],"logprobs":[],"text":`...)
	dst = str(dst, text)
	return append(dst, '}')
}

// summaryText appends a summary_text part.
func summaryText(dst []byte, text string) []byte {
	dst = append(dst, `{"type":"summary_text","text":`...)
	dst = str(dst, text)
	return append(dst, '}')
}

// appendItem appends an output item. A just-added item has no content yet
// (and a function call no arguments): the real API's added events.
func appendItem(dst []byte, it *item, added bool) []byte {
	status := it.status
	if added {
		status = statusInProgress
	}
	text := bytesString(it.text)
	switch it.kind {
	case itemMessage:
		dst = append(dst, `{"id":`...)
		dst = str(dst, it.id)
		dst = append(dst, `,"type":"message","status":"`...)
		dst = append(dst, status...)
		dst = append(dst, `","content":[`...)
		if !added {
			dst = outputText(dst, text)
		}
		return append(dst, `],"role":"assistant"}`...)
	case itemCall:
		dst = append(dst, `{"id":`...)
		dst = str(dst, it.id)
		dst = append(dst, `,"type":"function_call","status":"`...)
		dst = append(dst, status...)
		dst = append(dst, `","arguments":`...)
		if added {
			dst = append(dst, `""`...)
		} else {
			dst = str(dst, it.arguments())
		}
		dst = append(dst, `,"call_id":`...)
		dst = str(dst, it.callID)
		dst = append(dst, `,"name":`...)
		dst = str(dst, it.name)
		if it.namespace != "" {
			dst = append(dst, `,"namespace":`...)
			dst = str(dst, it.namespace)
		}
		return append(dst, '}')
	default: // itemReasoning
		dst = append(dst, `{"id":`...)
		dst = str(dst, it.id)
		dst = append(dst, `,"type":"reasoning","summary":[`...)
		if !added {
			dst = summaryText(dst, text)
		}
		return append(dst, "]}"...)
	}
}

// appendUsage appends the Responses usage object. input_tokens counts
// every prompt token, cached or not; cache_write_tokens (the prompt-cache
// writes some providers bill apart) is written when there are any.
func appendUsage(dst []byte, u exchange.TokenUsage) []byte {
	dst = append(dst, `{"input_tokens":`...)
	dst = strconv.AppendInt(dst, int64(u.Input), 10)
	dst = append(dst, `,"input_tokens_details":{"cached_tokens":`...)
	dst = strconv.AppendInt(dst, int64(u.CacheRead), 10)
	if u.CacheWrite > 0 {
		dst = append(dst, `,"cache_write_tokens":`...)
		dst = strconv.AppendInt(dst, int64(u.CacheWrite), 10)
	}
	dst = append(dst, `},"output_tokens":`...)
	dst = strconv.AppendInt(dst, int64(u.Output), 10)
	dst = append(dst, `,"output_tokens_details":{"reasoning_tokens":`...)
	dst = strconv.AppendInt(dst, int64(u.Reasoning), 10)
	dst = append(dst, `},"total_tokens":`...)
	dst = strconv.AppendInt(dst, int64(u.Input+u.Output), 10)
	return append(dst, '}')
}

// echo holds the request parameters a response object repeats, as the
// client's own JSON (sub-slices of the request body).
type echo struct {
	instructions, maxOutput, parallel, reasoning, temperature, text []byte
	toolChoice, tools, topP, truncation, user, metadata             []byte
	presence, frequency, topLogprobs, maxToolCalls, serviceTier     []byte
	safetyID, cacheKey, cacheRetention                              []byte
}

// readEcho collects the echoed parameters in one pass over the body.
func readEcho(body []byte) echo {
	var ec echo
	chatwire.Members(body, func(k string, v []byte) bool {
		switch k {
		case "instructions":
			ec.instructions = v
		case "max_output_tokens":
			ec.maxOutput = v
		case "parallel_tool_calls":
			ec.parallel = v
		case "reasoning":
			ec.reasoning = v
		case "temperature":
			ec.temperature = v
		case "text":
			ec.text = v
		case "tool_choice":
			ec.toolChoice = v
		case "tools":
			ec.tools = v
		case "top_p":
			ec.topP = v
		case "truncation":
			ec.truncation = v
		case "user":
			ec.user = v
		case "metadata":
			ec.metadata = v
		case "presence_penalty":
			ec.presence = v
		case "frequency_penalty":
			ec.frequency = v
		case "top_logprobs":
			ec.topLogprobs = v
		case "max_tool_calls":
			ec.maxToolCalls = v
		case "service_tier":
			ec.serviceTier = v
		case "safety_identifier":
			ec.safetyID = v
		case "prompt_cache_key":
			ec.cacheKey = v
		case "prompt_cache_retention":
			ec.cacheRetention = v
		}
		return true
	})
	return ec
}

// namespaced maps the flat chat name of each function of the request's
// namespace tools to its namespace and name (nil when there are none).
func namespaced(body []byte) map[string][2]string {
	if !bytes.Contains(body, []byte(`"namespace"`)) {
		return nil
	}
	var m map[string][2]string
	gjson.GetBytes(body, "tools").ForEach(func(_, t gjson.Result) bool {
		if t.Get("type").Str != "namespace" {
			return true
		}
		ns := t.Get("name").Str
		t.Get("tools").ForEach(func(_, f gjson.Result) bool {
			if m == nil {
				m = map[string][2]string{}
			}
			m[ns+NamespaceSep+f.Get("name").Str] = [2]string{ns, f.Get("name").Str}
			return true
		})
		return true
	})
	return m
}

// or appends v, or def when the client gave none.
func or(dst, v []byte, def string) []byte {
	if len(v) == 0 {
		return append(dst, def...)
	}
	return append(dst, v...)
}

// response is what a response object says besides the echoed parameters.
type response struct {
	status     string
	incomplete string // incomplete_details.reason
	err        []byte // the error object, for a failed response
	output     bool   // write the output items (false: the empty output of a response just created)
	usage      *exchange.TokenUsage
}

// appendResponse appends the response object with every member the
// published schema requires (the Open Responses ResponseResource's required
// list, and the official SDKs' required fields; responseschema_test.go
// checks both): what the request set is echoed as the client sent it, the
// rest is the value the translated call ran with. A translated response is
// never stored (store false, previous_response_id null, background false:
// the gateway refuses what needs them on a translating target), its
// service tier is the client's (default for auto or none), and
// completed_at is set only once the response completed.
func (e *encoder) appendResponse(dst []byte, r response) []byte {
	dst = append(dst, `{"id":`...)
	dst = str(dst, e.id)
	dst = append(dst, `,"object":"response","created_at":`...)
	dst = strconv.AppendInt(dst, e.created, 10)
	dst = append(dst, `,"completed_at":`...)
	if r.status == statusCompleted && e.completed != 0 {
		dst = strconv.AppendInt(dst, e.completed, 10)
	} else {
		dst = append(dst, "null"...)
	}
	dst = append(dst, `,"status":"`...)
	dst = append(dst, r.status...)
	dst = append(dst, `","background":false,"error":`...)
	dst = or(dst, r.err, "null")
	dst = append(dst, `,"incomplete_details":`...)
	if r.incomplete != "" {
		dst = append(dst, `{"reason":"`...)
		dst = append(dst, r.incomplete...)
		dst = append(dst, `"}`...)
	} else {
		dst = append(dst, "null"...)
	}
	ec := &e.echo
	dst = append(dst, `,"instructions":`...)
	dst = or(dst, ec.instructions, "null")
	dst = append(dst, `,"max_output_tokens":`...)
	dst = or(dst, ec.maxOutput, "null")
	dst = append(dst, `,"max_tool_calls":`...)
	dst = or(dst, ec.maxToolCalls, "null")
	dst = append(dst, `,"model":`...)
	dst = str(dst, e.model)
	dst = append(dst, `,"output":[`...)
	if r.output {
		for i := range e.items {
			if i > 0 {
				dst = append(dst, ',')
			}
			dst = appendItem(dst, &e.items[i], false)
		}
	}
	dst = append(dst, `],"parallel_tool_calls":`...)
	dst = or(dst, ec.parallel, "true")
	dst = append(dst, `,"previous_response_id":null,"reasoning":`...)
	dst = or(dst, ec.reasoning, `{"effort":null,"summary":null}`)
	dst = append(dst, `,"store":false,"temperature":`...)
	dst = or(dst, ec.temperature, "1")
	dst = append(dst, `,"presence_penalty":`...)
	dst = or(dst, ec.presence, "0")
	dst = append(dst, `,"frequency_penalty":`...)
	dst = or(dst, ec.frequency, "0")
	dst = append(dst, `,"top_logprobs":`...)
	dst = or(dst, ec.topLogprobs, "0")
	dst = append(dst, `,"text":`...)
	dst = or(dst, ec.text, `{"format":{"type":"text"}}`)
	dst = append(dst, `,"tool_choice":`...)
	dst = or(dst, ec.toolChoice, `"auto"`)
	dst = append(dst, `,"tools":`...)
	dst = appendTools(dst, ec.tools)
	dst = append(dst, `,"top_p":`...)
	dst = or(dst, ec.topP, "1")
	dst = append(dst, `,"truncation":`...)
	dst = or(dst, ec.truncation, `"disabled"`)
	dst = append(dst, `,"service_tier":`...)
	if t := bytesString(ec.serviceTier); t == "" || t == "null" || t == `"auto"` {
		dst = append(dst, `"default"`...)
	} else {
		dst = append(dst, t...)
	}
	dst = append(dst, `,"safety_identifier":`...)
	dst = or(dst, ec.safetyID, "null")
	dst = append(dst, `,"prompt_cache_key":`...)
	dst = or(dst, ec.cacheKey, "null")
	if len(ec.cacheRetention) > 0 {
		dst = append(dst, `,"prompt_cache_retention":`...)
		dst = append(dst, ec.cacheRetention...)
	}
	dst = append(dst, `,"access_programs":{"cyber":"standard"},"usage":`...)
	if r.usage != nil {
		dst = appendUsage(dst, *r.usage)
	} else {
		dst = append(dst, "null"...)
	}
	dst = append(dst, `,"user":`...)
	dst = or(dst, ec.user, "null")
	dst = append(dst, `,"metadata":`...)
	dst = or(dst, ec.metadata, "{}")
	return append(dst, '}')
}

// appendTools appends the request's tools as a response echoes them: each
// function tool with the members the schema requires of it (name,
// parameters, strict, description; null parameters and description when
// the client sent none, and strict false, which is what a translated call
// ran with: the chat APIs' default), every other tool as the client sent
// it.
func appendTools(dst, tools []byte) []byte {
	if len(tools) == 0 || bytesString(tools) == "null" {
		return append(dst, "[]"...)
	}
	dst = append(dst, '[')
	n := 0
	gjson.ParseBytes(tools).ForEach(func(_, t gjson.Result) bool {
		if n > 0 {
			dst = append(dst, ',')
		}
		n++
		if t.Get("type").Str != "function" || !t.IsObject() {
			dst = append(dst, t.Raw...)
			return true
		}
		obj := strings.TrimSpace(t.Raw)
		dst = append(dst, obj[:len(obj)-1]...)
		empty := strings.TrimSpace(obj[1:len(obj)-1]) == ""
		for _, m := range [...][2]string{{"parameters", "null"}, {"strict", "false"}, {"description", "null"}} {
			if t.Get(m[0]).Exists() {
				continue
			}
			if !empty {
				dst = append(dst, ',')
			}
			empty = false
			dst = append(dst, '"')
			dst = append(dst, m[0]...)
			dst = append(dst, `":`...)
			dst = append(dst, m[1]...)
		}
		dst = append(dst, '}')
		return true
	})
	return append(dst, ']')
}

// bytesString views b as a string without copying; the string must not
// outlive b's contents.
func bytesString(b []byte) string {
	if len(b) == 0 {
		return ""
	}
	return unsafe.String(unsafe.SliceData(b), len(b))
}
