// Package fakellm is a deterministic, scripted OpenAI-compatible model. It
// backs the `fake` provider kind (as an http.RoundTripper, so the fake runs
// through the real openai adapter, SSE parser and all) and the benchmark's
// mock upstream (as an http.Handler). A script says what the model replies,
// how fast, and how it fails: an error status, a connection reset, a stall,
// a stream cut after N chunks, or an empty success.
package fakellm

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/tidwall/gjson"

	"github.com/llmgw/llmgw/pkg/config"
	"github.com/llmgw/llmgw/pkg/wire/jsonb"
)

// DefaultReply is what a script without a reply says.
const DefaultReply = "Hello from the fake provider."

// Script is a fake model's behaviour (the fake provider's config block).
type Script = config.FakeScript

// request is what the fake reads from a chat completion body.
type request struct {
	model        string
	stream       bool
	includeUsage bool
	promptTokens int
}

func parseRequest(body []byte) request {
	r := gjson.ParseBytes(body)
	return request{
		model:        r.Get("model").String(),
		stream:       r.Get("stream").Bool(),
		includeUsage: r.Get("stream_options.include_usage").Bool(),
		promptTokens: (len(body) + 3) / 4,
	}
}

// chunks returns the reply split into word chunks (each keeps its leading space).
func chunks(s *Script) []string {
	reply := s.Reply
	if reply == "" {
		reply = DefaultReply
	}
	var out []string
	start := 0
	for i := 1; i < len(reply); i++ {
		if reply[i] == ' ' {
			out = append(out, reply[start:i])
			start = i
		}
	}
	return append(out, reply[start:])
}

// eachChunk sends the reply's chunks (chunks) through emit, each as a JSON
// string, ChunkDelay apart, and fails as a reset connection after
// AfterChunks of them when the script says "after_chunks": the one paced
// loop of every API's stream.
func eachChunk(ctx context.Context, s *Script, emit func(quoted string) error) error {
	for i, c := range chunks(s) {
		if s.Fail == "after_chunks" && i >= s.AfterChunks {
			return errReset
		}
		if i > 0 {
			if err := sleep(ctx, s.ChunkDelay.D()); err != nil {
				return err
			}
		}
		q, _ := json.Marshal(c)
		if err := emit(string(q)); err != nil {
			return err
		}
	}
	return nil
}

// sleep waits d or until ctx ends.
func sleep(ctx context.Context, d time.Duration) error {
	if d <= 0 {
		return ctx.Err()
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// errReset is what a reset connection looks like to a client.
var errReset = &net.OpError{Op: "read", Net: "tcp", Err: syscall.ECONNRESET}

const id = "chatcmpl-fake"

// writeStream writes the SSE reply. It returns errReset when the script
// cuts the stream (the caller turns that into a broken connection).
func writeStream(ctx context.Context, s *Script, rq request, w io.Writer, flush func()) error {
	created := strconv.FormatInt(time.Now().Unix(), 10)
	model := string(jsonb.AppendString(nil, rq.model))
	head := `{"id":"` + id + `","object":"chat.completion.chunk","created":` + created + `,"model":` + model + `,"system_fingerprint":"fp_fake","choices":`
	tail := `}`
	if rq.includeUsage {
		tail = `,"usage":null}`
	}
	emit := func(choices string) error {
		if _, err := io.WriteString(w, "data: "+head+choices+tail+"\n\n"); err != nil {
			return err
		}
		flush()
		return nil
	}
	if err := sleep(ctx, s.FirstTokenDelay.D()); err != nil {
		return err
	}
	if err := emit(`[{"index":0,"delta":{"role":"assistant","content":""},"logprobs":null,"finish_reason":null}]`); err != nil {
		return err
	}
	finish := "stop"
	out := 0
	switch {
	case s.Fail == "empty":
	case s.ToolCall != nil:
		finish = "tool_calls"
		first := fmt.Sprintf(`[{"index":0,"delta":{"tool_calls":[{"index":0,"id":"call_fake_1","type":"function","function":{"name":%q,"arguments":""}}]},"logprobs":null,"finish_reason":null}]`, s.ToolCall.Name)
		if err := emit(first); err != nil {
			return err
		}
		args := s.ToolCall.Arguments
		for i := 0; i < len(args); i += 8 {
			part := args[i:min(i+8, len(args))]
			q, _ := json.Marshal(part)
			if err := emit(`[{"index":0,"delta":{"tool_calls":[{"index":0,"function":{"arguments":` + string(q) + `}}]},"logprobs":null,"finish_reason":null}]`); err != nil {
				return err
			}
			out++
		}
	default:
		if err := eachChunk(ctx, s, func(q string) error {
			out++
			return emit(`[{"index":0,"delta":{"content":` + q + `},"logprobs":null,"finish_reason":null}]`)
		}); err != nil {
			return err
		}
	}
	if err := emit(`[{"index":0,"delta":{},"logprobs":null,"finish_reason":"` + finish + `"}]`); err != nil {
		return err
	}
	if rq.includeUsage {
		u := fmt.Sprintf(`{"id":"%s","object":"chat.completion.chunk","created":%s,"model":%s,"system_fingerprint":"fp_fake","choices":[],"usage":{"prompt_tokens":%d,"completion_tokens":%d,"total_tokens":%d}}`,
			id, created, model, rq.promptTokens, out, rq.promptTokens+out)
		if _, err := io.WriteString(w, "data: "+u+"\n\n"); err != nil {
			return err
		}
	}
	_, err := io.WriteString(w, "data: [DONE]\n\n")
	flush()
	return err
}

// completion returns the non-streaming reply body.
func completion(s *Script, rq request) []byte {
	type fn struct {
		Name      string `json:"name"`
		Arguments string `json:"arguments"`
	}
	type call struct {
		ID       string `json:"id"`
		Type     string `json:"type"`
		Function fn     `json:"function"`
	}
	msg := map[string]any{"role": "assistant", "content": nil, "refusal": nil}
	finish, out := "stop", 0
	switch {
	case s.Fail == "empty":
		msg["content"] = ""
	case s.ToolCall != nil:
		finish = "tool_calls"
		msg["tool_calls"] = []call{{ID: "call_fake_1", Type: "function", Function: fn{s.ToolCall.Name, s.ToolCall.Arguments}}}
		out = (len(s.ToolCall.Arguments) + 7) / 8
	default:
		cs := chunks(s)
		msg["content"] = strings.Join(cs, "")
		out = len(cs)
	}
	body, _ := json.Marshal(map[string]any{
		"id": id, "object": "chat.completion", "created": time.Now().Unix(), "model": rq.model,
		"system_fingerprint": "fp_fake",
		"choices":            []any{map[string]any{"index": 0, "message": msg, "logprobs": nil, "finish_reason": finish}},
		"usage":              map[string]int{"prompt_tokens": rq.promptTokens, "completion_tokens": out, "total_tokens": rq.promptTokens + out},
	})
	return body
}

func errorBody(status int) []byte {
	typ := "server_error"
	switch status {
	case 429:
		typ = "rate_limit_error"
	case 503, 529:
		typ = "overloaded_error"
	}
	b, _ := json.Marshal(map[string]any{"error": map[string]any{
		"message": fmt.Sprintf("fake provider failure (status %d)", status), "type": typ, "param": nil, "code": nil}})
	return b
}
