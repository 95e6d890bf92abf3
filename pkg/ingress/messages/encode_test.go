package messages

import (
	"bytes"
	"encoding/json"
	"errors"
	"flag"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	anthropic "github.com/anthropics/anthropic-sdk-go/v2"
	"github.com/anthropics/anthropic-sdk-go/v2/packages/ssestream"

	"github.com/llmgw/llmgw/pkg/exchange"
	"github.com/llmgw/llmgw/pkg/gwerr"
)

var update = flag.Bool("update", false, "rewrite the golden files")

// golden compares got with testdata/name (or writes it with -update).
func golden(t *testing.T, name, got string) {
	t.Helper()
	p := filepath.Join("testdata", name)
	if *update {
		os.MkdirAll("testdata", 0o755)
		if err := os.WriteFile(p, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(p)
	if err != nil {
		t.Fatalf("%v (run with -update to create it)", err)
	}
	if got != string(want) {
		t.Errorf("%s differs:\n got:\n%s\nwant:\n%s", name, got, want)
	}
}

// stream encodes events as the front does (one reused buffer), then End
// with u, or Fail with fail.
func stream(evs []exchange.Event, u exchange.TokenUsage, fail *gwerr.Error) string {
	enc := Ingress{}.NewEncoder(&exchange.Request{Stream: true, Route: "route-m"})
	var out, buf []byte
	for i := range evs {
		buf = enc.Event(buf[:0], &evs[i])
		out = append(out, buf...)
	}
	if fail != nil {
		return string(append(out, enc.Fail(buf[:0], fail, "req_test", u)...))
	}
	return string(append(out, enc.End(buf[:0], u)...))
}

// sdkRead parses a stream with the official SDK's decoder and accumulator.
func sdkRead(t *testing.T, sse string) (anthropic.Message, error) {
	t.Helper()
	resp := &http.Response{StatusCode: 200, Header: http.Header{"Content-Type": {"text/event-stream"}},
		Body: io.NopCloser(strings.NewReader(sse)), Request: &http.Request{Method: "POST"}}
	s := ssestream.NewStream[anthropic.MessageStreamEventUnion](ssestream.NewDecoder(resp), nil)
	var m anthropic.Message
	for s.Next() {
		if err := m.Accumulate(s.Current()); err != nil {
			t.Fatalf("accumulate: %v", err)
		}
	}
	return m, s.Err()
}

var finalUsage = exchange.TokenUsage{Input: 45, Output: 12, CacheRead: 10, CacheWrite: 5}

func TestStreamGolden(t *testing.T) {
	cases := map[string][]exchange.Event{
		"text": {{Kind: exchange.Start, ID: "chatcmpl-B9M", Name: "gpt-4.1"}, {Kind: exchange.Text, Text: "Hel"},
			{Kind: exchange.Text, Text: "lo \"world\"\n"}, {Kind: exchange.Finish, Finish: "stop", Stop: "stop"}, {Kind: exchange.Usage, Usage: finalUsage}},
		"thinking": {{Kind: exchange.Start, ID: "msg_01", Name: "claude-x"}, {Kind: exchange.Reasoning, Text: "Let me"},
			{Kind: exchange.Reasoning, Text: " think."}, {Kind: exchange.Signature, Text: "EqQBCkYIBxgC"}, {Kind: exchange.Reasoning, Text: "Again."},
			{Kind: exchange.Text, Text: "42"}, {Kind: exchange.Finish, Finish: "stop", Stop: "end_turn"}},
		"redacted_and_bare_signature": {{Kind: exchange.RedactedReasoning, Text: "EmwKAhgBEgy3va3pzix"}, {Kind: exchange.Signature, Text: "sig-only"},
			{Kind: exchange.Text, Text: "ok"}, {Kind: exchange.Finish, Finish: "length"}},
		"tools": {{Kind: exchange.Start, ID: "", Name: "us.anthropic.claude"}, {Kind: exchange.Text, Text: "Checking."},
			{Kind: exchange.ToolCall, Index: 0, ID: "call_1", Name: "get_weather"}, {Kind: exchange.ToolArgs, Index: 0, Text: `{"city":`},
			{Kind: exchange.ToolCall, Index: 1, ID: "call_2", Name: "get_time"}, {Kind: exchange.ToolArgs, Index: 1, Text: `{"tz":"CET"}`},
			{Kind: exchange.ToolArgs, Index: 0, Text: `"Paris"}`}, {Kind: exchange.Finish, Finish: "tool_calls", Stop: "tool_use"}},
		"stop_sequence": {{Kind: exchange.Start, ID: "x"}, {Kind: exchange.Text, Text: "1 2 3"},
			{Kind: exchange.Finish, Finish: "stop", StopSequence: "END"}},
	}
	for name, evs := range cases {
		t.Run(name, func(t *testing.T) {
			got := stream(evs, finalUsage, nil)
			if name == "redacted_and_bare_signature" || name == "tools" {
				// the id is random when the upstream gave none
				got = stripIDs(got)
			}
			golden(t, "stream_"+name+".golden", got)
			for _, fr := range strings.SplitAfter(strings.TrimSuffix(got, "\n\n"), "\n\n") {
				if !strings.HasPrefix(fr, "event: ") {
					t.Errorf("frame without an event line: %q", fr)
				}
			}
			m, err := sdkRead(t, got)
			if err != nil {
				t.Fatalf("SDK: %v", err)
			}
			if m.Usage.InputTokens != 30 || m.Usage.CacheReadInputTokens != 10 || m.Usage.CacheCreationInputTokens != 5 || m.Usage.OutputTokens != 12 {
				t.Errorf("SDK usage = %+v", m.Usage)
			}
			switch name {
			case "thinking":
				if len(m.Content) != 3 || m.Content[0].Thinking != "Let me think." || m.Content[0].Signature != "EqQBCkYIBxgC" ||
					m.Content[1].Type != "thinking" || m.Content[2].Text != "42" || m.StopReason != "end_turn" {
					t.Errorf("SDK message = %+v", m.Content)
				}
			case "tools":
				if len(m.Content) != 3 || string(m.Content[1].Input) != `{"city":"Paris"}` || m.Content[2].Name != "get_time" || m.StopReason != "tool_use" {
					t.Errorf("SDK message = %s", m.RawJSON())
				}
			case "stop_sequence":
				if m.StopReason != "stop_sequence" || m.StopSequence != "END" {
					t.Errorf("stop = %q %q", m.StopReason, m.StopSequence)
				}
			case "redacted_and_bare_signature":
				if m.Content[0].Type != "redacted_thinking" || m.Content[0].Data != "EmwKAhgBEgy3va3pzix" || m.Content[1].Signature != "sig-only" || m.StopReason != "max_tokens" {
					t.Errorf("SDK message = %s", m.RawJSON())
				}
			}
		})
	}
}

// stripIDs replaces the random parts of generated ids.
func stripIDs(s string) string {
	for _, p := range []string{`"msg_gw`, `"toolu_gw`} {
		for i := strings.Index(s, p); i >= 0; i = strings.Index(s, p) {
			s = s[:i] + `"GENERATED` + s[i+len(p)+24:]
		}
	}
	return s
}

func TestStopReasonMapping(t *testing.T) {
	cases := []struct{ finish, native, seq, stop, wantSeq string }{
		{"stop", "", "", "end_turn", ""},
		{"stop", "stop", "END", "stop_sequence", "END"},
		{"length", "", "", "max_tokens", ""},
		{"length", "model_context_window_exceeded", "", "model_context_window_exceeded", ""},
		{"tool_calls", "", "", "tool_use", ""},
		{"content_filter", "", "", "refusal", ""},
		{"content_filter", "guardrail_intervened", "", "refusal", ""},
		{"stop", "pause_turn", "", "pause_turn", ""},
		{"", "", "", "end_turn", ""},
	}
	for _, c := range cases {
		if stop, seq := stopReason(c.finish, c.native, c.seq); stop != c.stop || seq != c.wantSeq {
			t.Errorf("stopReason(%q, %q, %q) = %q %q, want %q %q", c.finish, c.native, c.seq, stop, seq, c.stop, c.wantSeq)
		}
	}
}

func TestFailEndsWithOneErrorFrameAndNothingElse(t *testing.T) {
	cause := &gwerr.Error{Category: gwerr.Overloaded, Provider: "oai"}
	fail := &gwerr.Error{Category: gwerr.Interrupted, Message: "provider stream was interrupted (overloaded)", Provider: "oai", Cause: cause}
	got := stream([]exchange.Event{{Kind: exchange.Start, ID: "x", Name: "m"}, {Kind: exchange.Text, Text: "partial"}},
		exchange.TokenUsage{Input: 7, Output: 2}, fail)
	golden(t, "stream_fail.golden", got)
	frames := strings.Split(strings.TrimSuffix(got, "\n\n"), "\n\n")
	if last := frames[len(frames)-1]; !strings.HasPrefix(last, "event: error\ndata: ") {
		t.Fatalf("last frame = %q", last)
	}
	for _, f := range frames {
		for _, bad := range []string{"content_block_stop", "message_delta", "message_stop"} {
			if strings.HasPrefix(f, "event: "+bad) {
				t.Errorf("invented %s after a failure", bad)
			}
		}
	}
	_, err := sdkRead(t, got)
	var ae *anthropic.Error
	if !errors.As(err, &ae) || ae.Type() != "overloaded_error" {
		t.Fatalf("SDK error = %v", err)
	}
	var body struct {
		Error struct {
			Category  string `json:"category"`
			Retryable bool   `json:"retryable"`
			Provider  string `json:"provider"`
			RequestID string `json:"request_id"`
		} `json:"error"`
	}
	json.Unmarshal([]byte(ae.RawJSON()), &body)
	if body.Error.Category != "interrupted" || !body.Error.Retryable || body.Error.Provider != "oai" || body.Error.RequestID != "req_test" {
		t.Errorf("gateway fields = %+v in %s", body.Error, ae.RawJSON())
	}
}

func TestRawFramesAreRelayedUntouched(t *testing.T) {
	frames := []string{
		"event: message_start\ndata: {\"type\":\"message_start\",\"message\":{\"id\":\"msg_1\",\"type\":\"message\",\"role\":\"assistant\",\"content\":[],\"model\":\"claude\",\"stop_reason\":null,\"stop_sequence\":null,\"usage\":{\"input_tokens\":3,\"output_tokens\":1}}}\n\n",
		"event: ping\ndata: {\"type\": \"ping\"}\n\n",
		"event: content_block_start\ndata: {\"type\":\"content_block_start\",\"index\":0,\"content_block\":{\"type\":\"text\",\"text\":\"\"}}\n\n",
		"event: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"index\":0,\"delta\":{\"type\":\"text_delta\",\"text\":\"hi\"}}\n\n",
		"event: content_block_stop\ndata: {\"type\":\"content_block_stop\",\"index\":0}\n\n",
		"event: message_delta\ndata: {\"type\":\"message_delta\",\"delta\":{\"stop_reason\":\"end_turn\",\"stop_sequence\":null},\"usage\":{\"output_tokens\":1}}\n\n",
		"event: message_stop\ndata: {\"type\":\"message_stop\"}\n\n",
	}
	var evs []exchange.Event
	for _, f := range frames {
		evs = append(evs, exchange.Event{Kind: exchange.Raw, RawAPI: exchange.Messages, Raw: []byte(f)})
	}
	if got := stream(evs, finalUsage, nil); got != strings.Join(frames, "") {
		t.Errorf("passthrough changed the stream:\n%s", got)
	}
	cut := stream(evs[:4], finalUsage, gwerr.New(gwerr.Interrupted, "provider stream was interrupted"))
	if !strings.HasPrefix(cut, strings.Join(frames[:4], "")) || !strings.HasSuffix(cut, "\n\n") ||
		strings.Count(cut, "event: error\n") != 1 || strings.Contains(cut, "message_stop") {
		t.Errorf("cut passthrough:\n%s", cut)
	}
}

// body encodes a non-streaming response.
func body(evs []exchange.Event, u exchange.TokenUsage) string {
	enc := Ingress{}.NewEncoder(&exchange.Request{Route: "route-m"})
	for i := range evs {
		enc.Event(nil, &evs[i])
	}
	return string(enc.End(nil, u))
}

func TestBodyAggregatesBlocksInOrder(t *testing.T) {
	got := body([]exchange.Event{{Kind: exchange.Start, ID: "chatcmpl-9", Name: "gpt-4.1"},
		{Kind: exchange.Reasoning, Text: "Think"}, {Kind: exchange.Signature, Text: "sig"}, {Kind: exchange.RedactedReasoning, Text: "RED"},
		{Kind: exchange.Text, Text: "Let me "}, {Kind: exchange.Text, Text: "check."},
		{Kind: exchange.ToolCall, Index: 0, ID: "call_1", Name: "get_weather"}, {Kind: exchange.ToolArgs, Index: 0, Text: `{"city": "Paris"}`},
		{Kind: exchange.ToolCall, Index: 1, ID: "call_2", Name: "broken"}, {Kind: exchange.ToolArgs, Index: 1, Text: `{"a":`},
		{Kind: exchange.ToolCall, Index: 2, ID: "call_3", Name: "noargs"},
		{Kind: exchange.Finish, Finish: "tool_calls"}, {Kind: exchange.Usage, Usage: finalUsage}}, exchange.TokenUsage{})
	golden(t, "body_blocks.golden", got)
	var m anthropic.Message
	if err := json.Unmarshal([]byte(got), &m); err != nil {
		t.Fatal(err)
	}
	if m.ID != "msg_chatcmpl-9" || len(m.Content) != 6 || m.Content[0].Signature != "sig" || m.Content[2].Text != "Let me check." ||
		string(m.Content[3].Input) != `{"city":"Paris"}` || string(m.Content[4].Input) != `"{\"a\":"` || string(m.Content[5].Input) != `{}` ||
		m.StopReason != "tool_use" || m.Usage.InputTokens != 30 || m.Usage.CacheReadInputTokens != 10 {
		t.Errorf("SDK message = %+v", m)
	}
	raw := `{"id":"msg_1","type":"message","content":[{"type":"text","text":"x"}],"unknown_field":1}`
	if got := body([]exchange.Event{{Kind: exchange.Raw, RawAPI: exchange.Messages, Raw: []byte(raw), Flags: exchange.Whole}}, finalUsage); got != raw {
		t.Errorf("passthrough body = %s", got)
	}
}

func TestErrorTypesAndStatuses(t *testing.T) {
	cases := []struct {
		e      *gwerr.Error
		status int
		typ    string
	}{
		{gwerr.New(gwerr.InvalidRequest, "x"), 400, "invalid_request_error"},
		{gwerr.New(gwerr.InvalidRequest, "x").WithCode("body_too_large"), 413, "request_too_large"},
		{gwerr.New(gwerr.InvalidRequest, "x").WithCode("method_not_allowed"), 405, "invalid_request_error"},
		{gwerr.New(gwerr.Authentication, "x"), 401, "authentication_error"},
		{gwerr.New(gwerr.Permission, "x"), 403, "permission_error"},
		{gwerr.New(gwerr.NotFound, "x"), 404, "not_found_error"},
		{gwerr.New(gwerr.RateLimited, "x"), 429, "rate_limit_error"},
		{gwerr.New(gwerr.BudgetExceeded, "x"), 429, "rate_limit_error"},
		{gwerr.New(gwerr.ContentPolicy, "x"), 400, "invalid_request_error"},
		{gwerr.New(gwerr.ContextLength, "x"), 400, "invalid_request_error"},
		{gwerr.New(gwerr.Timeout, "x"), 504, "timeout_error"},
		{gwerr.New(gwerr.Overloaded, "x"), 529, "overloaded_error"},
		{gwerr.New(gwerr.Unavailable, "x"), 502, "api_error"},
		{gwerr.New(gwerr.Internal, "x"), 500, "api_error"},
	}
	for _, c := range cases {
		if s, typ := Status(c.e), ErrorType(c.e); s != c.status || typ != c.typ {
			t.Errorf("%s/%s: %d %s, want %d %s", c.e.Category, c.e.Code, s, typ, c.status, c.typ)
		}
	}
	b := errorBody(gwerr.New(gwerr.ContextLength, "the request does not fit the model's context window"), "req_1", nil)
	if !bytes.Contains(b, []byte(`"message":"prompt is too long: the request does not fit`)) {
		t.Errorf("context length body = %s", b)
	}
}
