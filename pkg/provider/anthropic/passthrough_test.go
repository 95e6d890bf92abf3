package anthropic

import (
	"context"
	"errors"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/llmgw/llmgw/pkg/config"
	"github.com/llmgw/llmgw/pkg/exchange"
	"github.com/llmgw/llmgw/pkg/gwerr"
	"github.com/llmgw/llmgw/pkg/provider"
)

// A Messages body as Claude Code sends it: fields the gateway does not
// know, odd spacing, and a max_tokens to lower.
const messagesBody = `{"model":"claude-route","max_tokens":32000, "stream":true,
  "messages":[{"role":"user","content":[{"type":"text","text":"hi","cache_control":{"type":"ephemeral"}}]}],
  "tools":[{"name":"Read","input_schema":{"type":"object"},"defer_loading":true}],
  "thinking":{"type":"enabled","budget_tokens":2048},"context_management":{"edits":[{"type":"clear_tool_uses_20250919"}]},
  "metadata":{"user_id":"user_abc"}}`

func sseFixture(t *testing.T, name string) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", name))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func messagesCall(body string, stream bool, outputCap int, hdr http.Header) *provider.Call {
	return &provider.Call{
		Req:  &exchange.Request{API: exchange.Messages, Stream: stream, Body: []byte(body), Header: hdr, OutputCap: outputCap},
		Step: config.Step{ID: "anth/claude-up", Provider: "anth", Model: "claude-up"},
		Key:  exchange.Key{Secret: testSecret},
	}
}

// drainRaw reads a passthrough stream to its end.
func drainRaw(t *testing.T, s provider.Stream) ([]exchange.Event, string, error) {
	t.Helper()
	var evs []exchange.Event
	var relayed strings.Builder
	for {
		ev, err := s.Next()
		if err != nil {
			if err == io.EOF {
				err = nil
			}
			return evs, relayed.String(), err
		}
		if ev.Kind != exchange.Raw || ev.RawAPI != exchange.Messages {
			t.Fatalf("passthrough gave a %v event", ev.Kind)
		}
		relayed.Write(ev.Raw)
		evs = append(evs, ev.Clone())
	}
}

func TestPassthroughBodyAndHeaders(t *testing.T) {
	up := newFakeAnthropic(t, sseReply(sseFixture(t, "thinking.sse")))
	a := newAdapter(t, config.Provider{BaseURL: up.URL, Headers: map[string]string{"X-Team": "core"}})
	hdr := http.Header{"Anthropic-Version": {"2023-06-01"}, "Anthropic-Beta": {"claude-code-20250219,interleaved-thinking-2025-05-14", "context-management-2025-06-27"}}
	s, err := a.Send(context.Background(), messagesCall(messagesBody, true, 0, hdr))
	if err != nil {
		t.Fatal(err)
	}
	_, relayed, err := drainRaw(t, s)
	if err != nil {
		t.Fatal(err)
	}
	if relayed != string(sseFixture(t, "thinking.sse")) {
		t.Errorf("the stream was not relayed byte for byte:\n%s", relayed)
	}
	got := up.requests()[0]
	want := strings.Replace(messagesBody, `"claude-route"`, `"claude-up"`, 1)
	if string(got.body) != want {
		t.Errorf("upstream body\n got %s\nwant %s", got.body, want)
	}
	if got.path != "/v1/messages" || got.header.Get("x-api-key") != testSecret || got.header.Get("Authorization") != "" {
		t.Errorf("path %s, x-api-key %q, authorization %q", got.path, got.header.Get("x-api-key"), got.header.Get("Authorization"))
	}
	if b := got.header.Values("anthropic-beta"); len(b) != 2 || b[0] != hdr["Anthropic-Beta"][0] || b[1] != hdr["Anthropic-Beta"][1] {
		t.Errorf("anthropic-beta = %q", b)
	}
	if got.header.Get("anthropic-version") != "2023-06-01" || got.header.Get("X-Team") != "core" || got.header.Get("Accept") != "text/event-stream" {
		t.Errorf("headers = %v", got.header)
	}
	// Without client headers the configured version is sent.
	a2 := newAdapter(t, config.Provider{BaseURL: up.URL, Options: map[string]string{"anthropic_version": "2025-01-01"}})
	if s, err := a2.Send(context.Background(), messagesCall(messagesBody, true, 0, nil)); err == nil {
		s.Close()
	}
	if v := up.requests()[1].header.Get("anthropic-version"); v != "2025-01-01" {
		t.Errorf("anthropic-version without a client header = %q", v)
	}
}

func TestPassthroughLowersMaxTokensToTheAdmittedCap(t *testing.T) {
	for _, c := range []struct {
		cap  int
		want string
	}{{0, `"max_tokens":32000`}, {4096, `"max_tokens":4096`}, {64000, `"max_tokens":32000`}} {
		got, err := passthroughBody([]byte(messagesBody), "claude-up", c.cap, nil)
		if err != nil {
			t.Fatal(err)
		}
		want := strings.Replace(strings.Replace(messagesBody, `"claude-route"`, `"claude-up"`, 1), `"max_tokens":32000`, c.want, 1)
		if string(got) != want {
			t.Errorf("cap %d: %s", c.cap, got)
		}
	}
}

func TestPassthroughStreamFlags(t *testing.T) {
	up := newFakeAnthropic(t, sseReply(sseFixture(t, "tool_use.sse")))
	s, err := newAdapter(t, config.Provider{BaseURL: up.URL}).Send(context.Background(), messagesCall(messagesBody, true, 0, nil))
	if err != nil {
		t.Fatal(err)
	}
	evs, _, err := drainRaw(t, s)
	if err != nil {
		t.Fatal(err)
	}
	var flags []string
	for _, ev := range evs {
		name, _, _ := strings.Cut(strings.TrimPrefix(string(ev.Raw), "event: "), "\n")
		f := name
		if ev.Flags&exchange.HasContent != 0 {
			f += "+content"
		}
		if ev.Flags&exchange.HasFinish != 0 {
			f += "+finish:" + ev.Finish + "/" + ev.Stop
		}
		flags = append(flags, f)
	}
	want := "message_start content_block_start ping content_block_delta+content content_block_stop content_block_start+content " +
		"content_block_delta content_block_delta+content content_block_delta+content content_block_stop content_block_start+content " +
		"content_block_delta+content content_block_stop message_delta+finish:tool_calls/tool_use message_stop"
	if got := strings.Join(flags, " "); got != want {
		t.Errorf("flags\n got %s\nwant %s", got, want)
	}
	u := s.Usage()
	if u.Input != 472 || u.Output != 89 || u.Estimated {
		t.Errorf("usage = %+v", u)
	}
}

func TestPassthroughStreamFailures(t *testing.T) {
	const start = "event: message_start\ndata: {\"type\":\"message_start\",\"message\":{\"id\":\"msg_1\",\"usage\":{\"input_tokens\":10,\"cache_read_input_tokens\":5,\"output_tokens\":1}}}\n\n"
	const delta = "event: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"index\":0,\"delta\":{\"type\":\"text_delta\",\"text\":\"Hello\"}}\n\n"
	const stop = "event: message_delta\ndata: {\"type\":\"message_delta\",\"delta\":{\"stop_reason\":\"end_turn\"},\"usage\":{\"output_tokens\":3}}\n\nevent: message_stop\ndata: {\"type\":\"message_stop\"}\n\n"
	cases := map[string]struct {
		stream    string
		category  gwerr.Category
		malformed int
		relayed   string
	}{
		"cut before message_stop":            {start + delta, gwerr.Interrupted, 0, start + delta},
		"in-band overloaded":                 {start + delta + "event: error\ndata: {\"type\":\"error\",\"error\":{\"type\":\"overloaded_error\",\"message\":\"Overloaded\"}}\n\n", gwerr.Overloaded, 0, start + delta},
		"message_stop without a stop_reason": {start + delta + "event: message_stop\ndata: {\"type\":\"message_stop\"}\n\n", gwerr.Interrupted, 0, start + delta},
		"multi-line data rebuilt line by line": {start + "event: ping\ndata: {\"type\":\ndata: \"ping\"}\n\n" + delta + stop, "", 0,
			start + "event: ping\ndata: {\"type\":\ndata: \"ping\"}\n\n" + delta + stop},
		"malformed frame skipped": {start + "event: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"delta\":{\"text\n\n" + delta + stop, "", 1, start + delta + stop},
	}
	for name, c := range cases {
		t.Run(name, func(t *testing.T) {
			up := newFakeAnthropic(t, sseReply([]byte(c.stream)))
			call := messagesCall(messagesBody, true, 0, nil)
			s, err := newAdapter(t, config.Provider{BaseURL: up.URL}).Send(context.Background(), call)
			if err != nil {
				t.Fatal(err)
			}
			_, relayed, err := drainRaw(t, s)
			var ge *gwerr.Error
			switch {
			case c.category == "" && err != nil:
				t.Fatalf("err = %v", err)
			case c.category != "" && (!errors.As(err, &ge) || ge.Category != c.category):
				t.Fatalf("err = %v, want %s", err, c.category)
			}
			if relayed != c.relayed {
				t.Errorf("relayed\n%s", relayed)
			}
			if call.Req.Trace.MalformedFrames != c.malformed {
				t.Errorf("malformed frames = %d", call.Req.Trace.MalformedFrames)
			}
			if u := s.Usage(); u.Input != 15 || u.CacheRead != 5 || (c.category != "" && !u.Estimated) {
				t.Errorf("usage = %+v", u)
			}
		})
	}
}

func TestPassthroughNonStreaming(t *testing.T) {
	const msg = `{"id":"msg_01","type":"message","role":"assistant","model":"claude-up","content":[{"type":"thinking","thinking":"hm","signature":"sig"},{"type":"text","text":"Hi"}],"stop_reason":"end_turn","stop_sequence":null,"usage":{"input_tokens":9,"cache_creation_input_tokens":4,"cache_read_input_tokens":2,"output_tokens":3},"container":null}`
	up := newFakeAnthropic(t, jsonReply(200, msg))
	body := strings.Replace(messagesBody, `"stream":true`, `"stream":false`, 1)
	s, err := newAdapter(t, config.Provider{BaseURL: up.URL}).Send(context.Background(), messagesCall(body, false, 0, nil))
	if err != nil {
		t.Fatal(err)
	}
	ev, _ := s.Next()
	if ev.Kind != exchange.Raw || string(ev.Raw) != msg || ev.Flags != exchange.Whole|exchange.HasContent|exchange.HasFinish || ev.Finish != "stop" {
		t.Errorf("event = %+v", ev)
	}
	if _, err := s.Next(); err != io.EOF {
		t.Errorf("second Next = %v", err)
	}
	if u := s.Usage(); u.Input != 15 || u.CacheWrite != 4 || u.CacheRead != 2 || u.Output != 3 {
		t.Errorf("usage = %+v", u)
	}
	for name, c := range map[string]struct {
		body string
		cat  gwerr.Category
		code string
	}{
		"empty":          {`{"id":"m","type":"message","content":[{"type":"text","text":""}],"stop_reason":"end_turn","usage":{"input_tokens":3,"output_tokens":0}}`, gwerr.Unavailable, "empty_response"},
		"error in a 200": {`{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}`, gwerr.Overloaded, ""},
		"not JSON":       {`{"id":`, gwerr.Unavailable, ""},
	} {
		up := newFakeAnthropic(t, jsonReply(200, c.body))
		_, err := newAdapter(t, config.Provider{BaseURL: up.URL}).Send(context.Background(), messagesCall(body, false, 0, nil))
		var ge *gwerr.Error
		if !errors.As(err, &ge) || ge.Category != c.cat || ge.Code != c.code {
			t.Errorf("%s: err = %v", name, err)
		}
	}
}

func TestCountTokensUpstream(t *testing.T) {
	up := newFakeAnthropic(t, jsonReply(200, `{"input_tokens":1234}`))
	a := newAdapter(t, config.Provider{BaseURL: up.URL + "/v1"})
	body := `{"model":"claude-route","messages":[{"role":"user","content":"hi"}],"unknown":true}`
	n, err := a.CountTokens(context.Background(), messagesCall(body, false, 0, http.Header{"Anthropic-Beta": {"token-counting-2024-11-01"}}))
	if err != nil || n != 1234 {
		t.Fatalf("count = %d, %v", n, err)
	}
	got := up.requests()[0]
	if got.path != "/v1/messages/count_tokens" || string(got.body) != strings.Replace(body, "claude-route", "claude-up", 1) ||
		got.header.Get("anthropic-beta") != "token-counting-2024-11-01" || got.header.Get("x-api-key") != testSecret {
		t.Errorf("request = %s %s %v", got.path, got.body, got.header)
	}
	chat := messagesCall(body, false, 0, nil)
	chat.Req.API = exchange.Chat
	if _, err := a.CountTokens(context.Background(), chat); !errors.Is(err, provider.ErrCannotCount) {
		t.Errorf("a Chat request was counted upstream: %v", err)
	}
	bad := newFakeAnthropic(t, jsonReply(529, `{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}`))
	if _, err := newAdapter(t, config.Provider{BaseURL: bad.URL}).CountTokens(context.Background(), messagesCall(body, false, 0, nil)); gwerr.As(err).Category != gwerr.Overloaded {
		t.Errorf("529 count = %v", err)
	}
}

// TestCountTokensAnswerIsBoundedLikeEveryBody: a count_tokens answer is
// read within server.max_upstream_body_bytes (the client's
// provider.LimitTransport), as every whole body is: one longer than the
// old 64 KiB cut but within the bound is read whole (its input_tokens
// comes last), and one over the bound is provider.BodyTooLarge
// (unavailable, upstream_body_too_large), never cut short silently.
func TestCountTokensAnswerIsBoundedLikeEveryBody(t *testing.T) {
	pad := strings.Repeat("x", 100<<10)
	up := newFakeAnthropic(t, jsonReply(200, `{"note":"`+pad+`","input_tokens":4321}`))
	body := `{"model":"claude-route","messages":[{"role":"user","content":"hi"}]}`
	for _, c := range []struct {
		limit int64
		want  int
		code  string
	}{
		{limit: 1 << 20, want: 4321},
		{limit: 64 << 10, code: provider.CodeUpstreamBodyTooLarge},
	} {
		a, err := New("anth", &config.Provider{BaseURL: up.URL}, &http.Client{Transport: provider.LimitTransport("anth", http.DefaultTransport, c.limit)})
		if err != nil {
			t.Fatal(err)
		}
		n, err := a.CountTokens(context.Background(), messagesCall(body, false, 0, nil))
		if c.code == "" {
			if err != nil || n != c.want {
				t.Errorf("limit %d: count = %d, %v; want %d", c.limit, n, err, c.want)
			}
			continue
		}
		var ge *gwerr.Error
		if !errors.As(err, &ge) || ge.Code != c.code || ge.Category != gwerr.Unavailable {
			t.Errorf("limit %d: err = %v; want unavailable %s", c.limit, err, c.code)
		}
	}
}
