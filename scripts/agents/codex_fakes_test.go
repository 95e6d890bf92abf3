package agents

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
)

// The fake upstreams Codex is served by, each speaking a real wire format:
// an OpenAI Chat Completions upstream (Codex's requests are translated to
// it) and an OpenAI Responses upstream (passthrough).

// The markers prompts carry so that the fake chat model knows what to do.
const (
	markPlain = "ZQX-PLAIN"
	markTool  = "ZQX-TOOL"
	markCut   = "ZQX-CUT"
)

// chatRequest is the part of a chat completion request the fake reads.
type chatRequest struct {
	Stream   bool `json:"stream"`
	Messages []struct {
		Role    string          `json:"role"`
		Content json.RawMessage `json:"content"`
	} `json:"messages"`
	Tools []struct {
		Function struct {
			Name string `json:"name"`
		} `json:"function"`
	} `json:"tools"`
}

func (c *chatRequest) text(i int) string {
	var s string
	if json.Unmarshal(c.Messages[i].Content, &s) == nil {
		return s
	}
	return string(c.Messages[i].Content)
}

// lastUser returns the text of the last user message.
func (c *chatRequest) lastUser() string {
	for i := len(c.Messages) - 1; i >= 0; i-- {
		if c.Messages[i].Role == "user" {
			return c.text(i)
		}
	}
	return ""
}

// toolOutput returns the content of the last tool message, if any.
func (c *chatRequest) toolOutput() (string, bool) {
	for i := len(c.Messages) - 1; i >= 0; i-- {
		if c.Messages[i].Role == "tool" {
			return c.text(i), true
		}
	}
	return "", false
}

func (c *chatRequest) hasTool(name string) bool {
	for _, t := range c.Tools {
		if t.Function.Name == name {
			return true
		}
	}
	return false
}

func chunk(delta string, finish string) string {
	f := "null"
	if finish != "" {
		f = `"` + finish + `"`
	}
	return `data: {"id":"chatcmpl-fake","object":"chat.completion.chunk","created":1741569952,"model":"fake-chat","choices":[{"index":0,"delta":` + delta + `,"finish_reason":` + f + `}]}` + "\n\n"
}

func textChunks(w io.Writer, words ...string) {
	io.WriteString(w, chunk(`{"role":"assistant","content":""}`, ""))
	for _, s := range words {
		b, _ := json.Marshal(s)
		io.WriteString(w, chunk(`{"content":`+string(b)+`}`, ""))
	}
}

func finishChunks(w io.Writer, reason string) {
	io.WriteString(w, chunk(`{}`, reason))
	io.WriteString(w, `data: {"id":"chatcmpl-fake","object":"chat.completion.chunk","created":1741569952,"model":"fake-chat","choices":[],"usage":{"prompt_tokens":1200,"completion_tokens":9,"total_tokens":1209}}`+"\n\n")
	io.WriteString(w, "data: [DONE]\n\n")
}

// fakeChat is a chat model scripted by the markers: a plain answer; a
// shell tool call, then an answer quoting the tool's output; or a stream
// cut after its first words.
func fakeChat(w http.ResponseWriter, body []byte, _ int) {
	var req chatRequest
	if err := json.Unmarshal(body, &req); err != nil || len(req.Messages) == 0 {
		w.WriteHeader(400)
		io.WriteString(w, `{"error":{"message":"bad request","type":"invalid_request_error"}}`)
		return
	}
	prompt := req.lastUser()
	if !req.Stream {
		text := "PLAIN-OK"
		if out, ok := req.toolOutput(); ok && strings.Contains(out, "tool-42") {
			text = "TOOL-RESULT: tool-42"
		}
		b, _ := json.Marshal(text)
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, `{"id":"chatcmpl-fake","object":"chat.completion","created":1741569952,"model":"fake-chat","choices":[{"index":0,"message":{"role":"assistant","content":`+
			string(b)+`},"finish_reason":"stop"}],"usage":{"prompt_tokens":1200,"completion_tokens":9,"total_tokens":1209}}`)
		return
	}
	w.Header().Set("Content-Type", "text/event-stream")
	if out, ok := req.toolOutput(); ok {
		result := "missing"
		if strings.Contains(out, "tool-42") {
			result = "tool-42"
		}
		textChunks(w, "TOOL-RESULT: ", result)
		finishChunks(w, "stop")
		return
	}
	switch {
	case strings.Contains(prompt, markTool):
		name, args := shellCall(&req)
		a, _ := json.Marshal(args)
		io.WriteString(w, chunk(`{"role":"assistant","content":null}`, ""))
		io.WriteString(w, chunk(fmt.Sprintf(`{"tool_calls":[{"index":0,"id":"call_fake_1","type":"function","function":{"name":%q,"arguments":""}}]}`, name), ""))
		io.WriteString(w, chunk(fmt.Sprintf(`{"tool_calls":[{"index":0,"function":{"arguments":%s}}]}`, a), ""))
		finishChunks(w, "tool_calls")
	case strings.Contains(prompt, markCut):
		textChunks(w, "PARTIAL-", "FRAGMENT")
		// The connection ends here: no finish_reason, no [DONE].
	default:
		textChunks(w, "PLAIN-", "OK")
		finishChunks(w, "stop")
	}
}

// shellCall picks Codex's shell tool from the request's tools and the
// arguments that make it run `echo tool-$((6*7))`.
func shellCall(req *chatRequest) (string, string) {
	const script = "echo tool-$((6*7))"
	switch {
	case req.hasTool("exec_command"):
		return "exec_command", `{"cmd":"` + script + `"}`
	case req.hasTool("shell_command"):
		return "shell_command", `{"command":"` + script + `"}`
	}
	return "shell", `{"command":["bash","-lc","` + script + `"]}`
}

// fakeResponses is an OpenAI Responses upstream answering PASSTHROUGH-OK.
func fakeResponses(w http.ResponseWriter, _ []byte, _ int) {
	w.Header().Set("Content-Type", "text/event-stream")
	writeResponseEvents(w, responseEvents("PASSTHROUGH-OK"))
}

// scriptedResponses is an OpenAI Responses upstream scripted by the
// markers, as fakeChat is: PLAIN-OK, streamed or whole, or a stream cut
// after its first words (no response.completed).
func scriptedResponses(w http.ResponseWriter, body []byte, _ int) {
	var req struct{ Stream bool }
	json.Unmarshal(body, &req)
	evs := responseEvents("PLAIN-OK")
	if !req.Stream {
		var last struct{ Response json.RawMessage }
		json.Unmarshal([]byte(evs[len(evs)-1]), &last)
		w.Header().Set("Content-Type", "application/json")
		w.Write(last.Response)
		return
	}
	w.Header().Set("Content-Type", "text/event-stream")
	if strings.Contains(string(body), markCut) {
		cut := responseEvents("PARTIAL-")
		writeResponseEvents(w, cut[:5]) // the connection ends after the first delta
		return
	}
	writeResponseEvents(w, evs)
}

// responseEvents is a Responses stream answering text, as OpenAI sends it.
func responseEvents(text string) []string {
	resp := `{"id":"resp_fake1","object":"response","created_at":1741290958,"status":"%s","model":"gpt-fake","output":%s,"usage":%s}`
	msg := `{"id":"msg_fake1","type":"message","status":"%s","content":%s,"role":"assistant"}`
	part := `{"type":"output_text","annotations":[],"logprobs":[],"text":"%s"}`
	done := fmt.Sprintf(msg, "completed", "["+fmt.Sprintf(part, text)+"]")
	return []string{
		`{"type":"response.created","sequence_number":0,"response":` + fmt.Sprintf(resp, "in_progress", "[]", "null") + `}`,
		`{"type":"response.in_progress","sequence_number":1,"response":` + fmt.Sprintf(resp, "in_progress", "[]", "null") + `}`,
		`{"type":"response.output_item.added","sequence_number":2,"output_index":0,"item":` + fmt.Sprintf(msg, "in_progress", "[]") + `}`,
		`{"type":"response.content_part.added","sequence_number":3,"item_id":"msg_fake1","output_index":0,"content_index":0,"part":` + fmt.Sprintf(part, "") + `}`,
		`{"type":"response.output_text.delta","sequence_number":4,"item_id":"msg_fake1","output_index":0,"content_index":0,"delta":"` + text + `","logprobs":[]}`,
		`{"type":"response.output_text.done","sequence_number":5,"item_id":"msg_fake1","output_index":0,"content_index":0,"text":"` + text + `","logprobs":[]}`,
		`{"type":"response.content_part.done","sequence_number":6,"item_id":"msg_fake1","output_index":0,"content_index":0,"part":` + fmt.Sprintf(part, text) + `}`,
		`{"type":"response.output_item.done","sequence_number":7,"output_index":0,"item":` + done + `}`,
		`{"type":"response.completed","sequence_number":8,"response":` + fmt.Sprintf(resp, "completed", "["+done+"]",
			`{"input_tokens":1200,"input_tokens_details":{"cached_tokens":0},"output_tokens":4,"output_tokens_details":{"reasoning_tokens":0},"total_tokens":1204}`) + `}`,
	}
}

// writeResponseEvents writes events as server-sent events.
func writeResponseEvents(w io.Writer, events []string) {
	for _, e := range events {
		var typ struct{ Type string }
		json.Unmarshal([]byte(e), &typ)
		fmt.Fprintf(w, "event: %s\ndata: %s\n\n", typ.Type, e)
	}
}
