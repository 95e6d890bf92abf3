package fakellm

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"time"
)

// The fake's OpenAI Responses side: on a .../responses path the fake
// answers in the Responses wire format (an object "response", or the
// typed event stream with event names and sequence numbers, as OpenAI
// sends it), with the same script as its Chat Completions side. It
// answers text replies; a script's tool_call is a function_call item.

const (
	responseID = "resp_fake"
	itemID     = "msg_fake"
)

// isResponses reports whether a request path is the Responses API's.
func isResponses(path string) bool { return strings.HasSuffix(path, "/responses") }

// responsesUsage is the usage object of a response.
func responsesUsage(in, out int) string {
	return fmt.Sprintf(`{"input_tokens":%d,"input_tokens_details":{"cached_tokens":0},"output_tokens":%d,"output_tokens_details":{"reasoning_tokens":0},"total_tokens":%d}`, in, out, in+out)
}

// responsesObject is a response object: status, output items, usage (null
// while in progress).
func responsesObject(model string, created int64, status, output, usage string) string {
	return fmt.Sprintf(`{"id":%q,"object":"response","created_at":%d,"status":%q,"model":%s,"output":[%s],"usage":%s}`,
		responseID, created, status, model, output, usage)
}

// responsesOutput returns the finished output item and the output token
// count for a script.
func responsesOutput(s *Script) (item string, out int) {
	switch {
	case s.Fail == "empty":
		return "", 0
	case s.ToolCall != nil:
		args, _ := json.Marshal(s.ToolCall.Arguments)
		name, _ := json.Marshal(s.ToolCall.Name)
		return `{"id":"fc_fake_1","type":"function_call","status":"completed","call_id":"call_fake_1","name":` + string(name) + `,"arguments":` + string(args) + `}`,
			(len(s.ToolCall.Arguments) + 7) / 8
	default:
		cs := chunks(s)
		text, _ := json.Marshal(strings.Join(cs, ""))
		return `{"id":"` + itemID + `","type":"message","status":"completed","role":"assistant","content":[{"type":"output_text","annotations":[],"logprobs":[],"text":` + string(text) + `}]}`, len(cs)
	}
}

// writeResponsesStream writes the scripted reply as a Responses event
// stream. It returns errReset when the script cuts the stream.
func writeResponsesStream(ctx context.Context, s *Script, rq request, w io.Writer, flush func()) error {
	model, _ := json.Marshal(rq.model)
	created := time.Now().Unix()
	seq := 0
	emit := func(typ, rest string) error {
		data := fmt.Sprintf(`{"type":%q,"sequence_number":%d%s}`, typ, seq, rest)
		seq++
		if _, err := io.WriteString(w, "event: "+typ+"\ndata: "+data+"\n\n"); err != nil {
			return err
		}
		flush()
		return nil
	}
	if err := sleep(ctx, s.FirstTokenDelay.D()); err != nil {
		return err
	}
	inProgress := responsesObject(string(model), created, "in_progress", "", "null")
	if err := emit("response.created", `,"response":`+inProgress); err != nil {
		return err
	}
	if err := emit("response.in_progress", `,"response":`+inProgress); err != nil {
		return err
	}
	item, out := responsesOutput(s)
	switch {
	case s.Fail == "empty":
	case s.ToolCall != nil:
		name, _ := json.Marshal(s.ToolCall.Name)
		if err := emit("response.output_item.added", `,"output_index":0,"item":{"id":"fc_fake_1","type":"function_call","status":"in_progress","call_id":"call_fake_1","name":`+string(name)+`,"arguments":""}`); err != nil {
			return err
		}
		args := s.ToolCall.Arguments
		for i := 0; i < len(args); i += 8 {
			q, _ := json.Marshal(args[i:min(i+8, len(args))])
			if err := emit("response.function_call_arguments.delta", `,"item_id":"fc_fake_1","output_index":0,"delta":`+string(q)); err != nil {
				return err
			}
		}
		q, _ := json.Marshal(args)
		if err := emit("response.function_call_arguments.done", `,"item_id":"fc_fake_1","output_index":0,"arguments":`+string(q)); err != nil {
			return err
		}
		if err := emit("response.output_item.done", `,"output_index":0,"item":`+item); err != nil {
			return err
		}
	default:
		ids := `,"item_id":"` + itemID + `","output_index":0,"content_index":0`
		if err := emit("response.output_item.added", `,"output_index":0,"item":{"id":"`+itemID+`","type":"message","status":"in_progress","role":"assistant","content":[]}`); err != nil {
			return err
		}
		if err := emit("response.content_part.added", ids+`,"part":{"type":"output_text","annotations":[],"logprobs":[],"text":""}`); err != nil {
			return err
		}
		if err := eachChunk(ctx, s, func(q string) error {
			return emit("response.output_text.delta", ids+`,"delta":`+q+`,"logprobs":[]`)
		}); err != nil {
			return err
		}
		text, _ := json.Marshal(strings.Join(chunks(s), ""))
		if err := emit("response.output_text.done", ids+`,"text":`+string(text)+`,"logprobs":[]`); err != nil {
			return err
		}
		if err := emit("response.content_part.done", ids+`,"part":{"type":"output_text","annotations":[],"logprobs":[],"text":`+string(text)+`}`); err != nil {
			return err
		}
		if err := emit("response.output_item.done", `,"output_index":0,"item":`+item); err != nil {
			return err
		}
	}
	done := responsesObject(string(model), created, "completed", item, responsesUsage(rq.promptTokens, out))
	return emit("response.completed", `,"response":`+done)
}

// responsesCompletion returns the non-streaming Responses reply body.
func responsesCompletion(s *Script, rq request) []byte {
	model, _ := json.Marshal(rq.model)
	item, out := responsesOutput(s)
	return []byte(responsesObject(string(model), time.Now().Unix(), "completed", item, responsesUsage(rq.promptTokens, out)))
}
