package anthropic

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/llmgw/llmgw/pkg/config"
	"github.com/llmgw/llmgw/pkg/exchange"
	"github.com/llmgw/llmgw/pkg/gwerr"
	"github.com/llmgw/llmgw/pkg/provider"
	"github.com/llmgw/llmgw/pkg/wire/chatwire"
)

const testSecret = "sk-ant-api03-TESTKEYtestkey0123456789"

// received is one request the fake upstream got.
type received struct {
	method, path string
	header       http.Header
	body         []byte
}

// fakeAnthropic is a loopback Anthropic upstream: it records every request
// and answers with the handler.
type fakeAnthropic struct {
	*httptest.Server
	mu   sync.Mutex
	reqs []received
}

func newFakeAnthropic(t *testing.T, h func(w http.ResponseWriter, r *http.Request)) *fakeAnthropic {
	t.Helper()
	f := &fakeAnthropic{}
	f.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		f.mu.Lock()
		f.reqs = append(f.reqs, received{r.Method, r.URL.Path, r.Header.Clone(), body})
		f.mu.Unlock()
		h(w, r)
	}))
	t.Cleanup(f.Close)
	return f
}

func (f *fakeAnthropic) requests() []received {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]received(nil), f.reqs...)
}

// sseReply writes a real-format Anthropic event stream, byte for byte.
func sseReply(body []byte) func(w http.ResponseWriter, r *http.Request) {
	return func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream; charset=utf-8")
		w.Header().Set("anthropic-ratelimit-requests-remaining", "49")
		w.WriteHeader(http.StatusOK)
		w.Write(body)
	}
}

func jsonReply(status int, body string, hdr ...string) func(w http.ResponseWriter, r *http.Request) {
	return func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		for i := 0; i+1 < len(hdr); i += 2 {
			w.Header().Set(hdr[i], hdr[i+1])
		}
		w.WriteHeader(status)
		io.WriteString(w, body)
	}
}

func newAdapter(t *testing.T, p config.Provider) *Adapter {
	t.Helper()
	a, err := New("anth", &p, &http.Client{})
	if err != nil {
		t.Fatal(err)
	}
	return a
}

// newCall parses an OpenAI request body into a Call for model claude-x,
// whose default max_tokens is 1024.
func newCall(t *testing.T, body string, key exchange.Key) *provider.Call {
	t.Helper()
	call, err := promptCall(t, body)
	if err != nil {
		t.Fatal(err)
	}
	call.Key = key
	return call
}

func TestSendStreamingRequestHeadersAndTranslatedBody(t *testing.T) {
	up := newFakeAnthropic(t, sseReply(readFixture(t, "tool_use.sse")))
	a := newAdapter(t, config.Provider{Kind: "anthropic", BaseURL: up.URL})
	call := newCall(t, `{"model":"m","stream":true,"messages":[{"role":"system","content":"be brief"},{"role":"user","content":"weather?"}],
		"tools":[{"type":"function","function":{"name":"get_weather","parameters":{"type":"object","properties":{"location":{"type":"string"}}}}}],
		"tool_choice":"auto","temperature":0.2}`, exchange.NewKey(testSecret, 0))
	call.Req.TraceParent = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"
	var statuses []int
	var seen http.Header
	call.OnResponse = func(status int, h http.Header) { statuses = append(statuses, status); seen = h }
	s, err := a.Send(context.Background(), call)
	if err != nil {
		t.Fatal(err)
	}
	evs, err := collect(t, s)
	s.Close()
	if err != io.EOF {
		t.Fatalf("end = %v", err)
	}
	if n := len(chatData(t, evs)); len(evs) != 9 || n != 9 {
		t.Errorf("got %d events, %d chunks; want 9 (start, text, 2 tool starts, 3 argument fragments, finish, usage)", len(evs), n)
	}
	if len(statuses) != 1 || statuses[0] != 200 || seen.Get("anthropic-ratelimit-requests-remaining") != "49" {
		t.Errorf("OnResponse saw %v %v", statuses, seen)
	}
	reqs := up.requests()
	if len(reqs) != 1 {
		t.Fatalf("upstream got %d requests", len(reqs))
	}
	r := reqs[0]
	if r.method != http.MethodPost || r.path != "/v1/messages" {
		t.Errorf("request line %s %s, want POST /v1/messages", r.method, r.path)
	}
	for k, want := range map[string]string{"X-Api-Key": testSecret, "Anthropic-Version": "2023-06-01", "Content-Type": "application/json", "Accept": "text/event-stream",
		"Traceparent": call.Req.TraceParent} {
		if got := r.header.Get(k); got != want {
			t.Errorf("header %s = %q, want %q", k, got, want)
		}
	}
	if r.header.Get("Authorization") != "" {
		t.Error("the key was also sent as Authorization")
	}
	want := `{"model":"claude-x","max_tokens":1024,"stream":true,"system":[{"type":"text","text":"be brief"}],
		"messages":[{"role":"user","content":[{"type":"text","text":"weather?"}]}],"temperature":0.2,
		"tools":[{"name":"get_weather","input_schema":{"type":"object","properties":{"location":{"type":"string"}}}}]}`
	if !reflect.DeepEqual(canon(t, r.body), canon(t, []byte(want))) {
		t.Errorf("upstream body\n got %s\nwant %s", r.body, compact(t, want))
	}
}

func TestSendNoKeyMeansNoKeyHeader(t *testing.T) {
	up := newFakeAnthropic(t, sseReply(readFixture(t, "text.sse")))
	a := newAdapter(t, config.Provider{Kind: "anthropic", BaseURL: up.URL})
	s, err := a.Send(context.Background(), newCall(t, `{"model":"m","stream":true,"messages":[{"role":"user","content":"hi"}]}`, exchange.Key{}))
	if err != nil {
		t.Fatal(err)
	}
	s.Close()
	h := up.requests()[0].header
	if _, ok := h["X-Api-Key"]; ok {
		t.Errorf("an x-api-key header was sent without a key: %q", h["X-Api-Key"])
	}
	if _, ok := h["Authorization"]; ok {
		t.Error("an Authorization header was sent without a key")
	}
}

func TestSendVersionOptionAuthHeaderAndBaseURLWithV1(t *testing.T) {
	up := newFakeAnthropic(t, sseReply(readFixture(t, "text.sse")))
	a := newAdapter(t, config.Provider{Kind: "anthropic", BaseURL: up.URL + "/v1/", AuthHeader: "authorization",
		Options: map[string]string{"anthropic_version": "2099-01-01"}, Headers: map[string]string{"anthropic-beta": "prompt-caching-2024-07-31"}})
	s, err := a.Send(context.Background(), newCall(t, `{"model":"m","stream":true,"messages":[{"role":"user","content":"hi"}]}`, exchange.NewKey(testSecret, 0)))
	if err != nil {
		t.Fatal(err)
	}
	s.Close()
	r := up.requests()[0]
	if r.path != "/v1/messages" || r.header.Get("Anthropic-Version") != "2099-01-01" ||
		r.header.Get("Authorization") != "Bearer "+testSecret || r.header.Get("Anthropic-Beta") != "prompt-caching-2024-07-31" {
		t.Errorf("path %s headers %v", r.path, r.header)
	}
}

func TestSendNonStreaming(t *testing.T) {
	up := newFakeAnthropic(t, jsonReply(200, `{"id":"msg_1","type":"message","role":"assistant","model":"claude-x-20250101","content":[{"type":"text","text":"Hi!"}],"stop_reason":"end_turn","stop_sequence":null,"usage":{"input_tokens":9,"cache_read_input_tokens":4,"output_tokens":2}}`))
	a := newAdapter(t, config.Provider{Kind: "anthropic", BaseURL: up.URL})
	s, err := a.Send(context.Background(), newCall(t, `{"model":"m","messages":[{"role":"user","content":"hi"}],"max_tokens":30}`, exchange.NewKey(testSecret, 0)))
	if err != nil {
		t.Fatal(err)
	}
	evs, err := collect(t, s)
	if err != io.EOF {
		t.Fatalf("end %v", err)
	}
	kinds := ""
	for _, ev := range evs {
		kinds += kindName(ev.Kind) + " "
	}
	if kinds != "start text finish usage " || evs[0].ID != "msg_1" || evs[2].Stop != "end_turn" {
		t.Errorf("events %+v", evs)
	}
	body := chatCompletion(t, evs, s.Usage())
	var c struct {
		ID      string `json:"id"`
		Object  string `json:"object"`
		Model   string `json:"model"`
		Choices []struct {
			Message      struct{ Content string } `json:"message"`
			FinishReason string                   `json:"finish_reason"`
		} `json:"choices"`
		Usage chatwire.Usage `json:"usage"`
	}
	if err := json.Unmarshal(body, &c); err != nil {
		t.Fatal(err)
	}
	if c.ID != "chatcmpl-msg_1" || c.Object != "chat.completion" || c.Model != "claude-x-20250101" || c.Choices[0].Message.Content != "Hi!" ||
		c.Choices[0].FinishReason != "stop" || c.Usage.PromptTokens != 13 || c.Usage.PromptTokensDetails.CachedTokens != 4 {
		t.Errorf("completion = %s", body)
	}
	if u := s.Usage(); u != (exchange.TokenUsage{Input: 13, Output: 2, CacheRead: 4}) {
		t.Errorf("Usage() = %+v", u)
	}
	r := up.requests()[0]
	if r.header.Get("Accept") != "application/json" || strings.Contains(string(r.body), `"stream"`) || !strings.Contains(string(r.body), `"max_tokens":30`) {
		t.Errorf("non-streaming request: %v %s", r.header, r.body)
	}
}

func TestSendNonStreamingEmptyIsEmptyResponse(t *testing.T) {
	up := newFakeAnthropic(t, jsonReply(200, `{"id":"msg_1","type":"message","role":"assistant","model":"m","content":[],"stop_reason":"end_turn","usage":{"input_tokens":9,"output_tokens":0}}`))
	a := newAdapter(t, config.Provider{Kind: "anthropic", BaseURL: up.URL})
	_, err := a.Send(context.Background(), newCall(t, `{"model":"m","messages":[{"role":"user","content":"hi"}]}`, exchange.Key{}))
	if ge := gwerr.As(err); ge == nil || ge.Code != "empty_response" || ge.Category != gwerr.Unavailable {
		t.Errorf("err = %v, want empty_response", err)
	}
}

func TestSendStatusErrors(t *testing.T) {
	errBody := func(typ, msg string) string {
		return `{"type":"error","error":{"type":"` + typ + `","message":"` + msg + `"},"request_id":"req_011CSHoEeqs5C35K2UUqR7Fy"}`
	}
	cases := []struct {
		name       string
		status     int
		body       string
		hdr        []string
		category   gwerr.Category
		retryAfter time.Duration
		code       string
	}{
		{"529_overloaded", 529, errBody("overloaded_error", "Overloaded"), nil, gwerr.Overloaded, 0, ""},
		{"overloaded_type_on_other_status", 500, errBody("overloaded_error", "Overloaded"), nil, gwerr.Overloaded, 0, ""},
		{"429_rate_limited_with_retry_after", 429, errBody("rate_limit_error", "Number of request tokens has exceeded your per-minute rate limit"),
			[]string{"retry-after", "7", "anthropic-ratelimit-tokens-remaining", "0"}, gwerr.RateLimited, 7 * time.Second, ""},
		{"401_credentials", 401, errBody("authentication_error", "invalid x-api-key"), nil, gwerr.Unavailable, 0, provider.CodeProviderCredentials},
		{"403_credentials", 403, errBody("permission_error", "Your API key does not have permission to use the specified resource."), nil, gwerr.Unavailable, 0, provider.CodeProviderCredentials},
		{"404_not_found", 404, errBody("not_found_error", "model: claude-x"), nil, gwerr.NotFound, 0, ""},
		{"500_api_error", 500, errBody("api_error", "Internal server error"), nil, gwerr.Unavailable, 0, ""},
		{"413_request_too_large", 413, errBody("request_too_large", "Request exceeds the maximum allowed number of bytes."), nil, gwerr.InvalidRequest, 0, ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			up := newFakeAnthropic(t, jsonReply(c.status, c.body, c.hdr...))
			a := newAdapter(t, config.Provider{Kind: "anthropic", BaseURL: up.URL})
			call := newCall(t, `{"model":"m","stream":true,"messages":[{"role":"user","content":"hi"}]}`, exchange.NewKey(testSecret, 0))
			var got []int
			var gotHdr http.Header
			call.OnResponse = func(status int, h http.Header) { got = append(got, status); gotHdr = h }
			_, err := a.Send(context.Background(), call)
			var ge *gwerr.Error
			if !errors.As(err, &ge) {
				t.Fatalf("err = %v", err)
			}
			if ge.Category != c.category || ge.RetryAfter != c.retryAfter || ge.Code != c.code || ge.Status != c.status || ge.Provider != "anth" {
				t.Errorf("got %+v, want category %s retry-after %v code %q", ge, c.category, c.retryAfter, c.code)
			}
			if len(got) != 1 || got[0] != c.status {
				t.Errorf("OnResponse calls %v, want one with %d", got, c.status)
			}
			for i := 0; i+1 < len(c.hdr); i += 2 {
				if gotHdr.Get(c.hdr[i]) != c.hdr[i+1] {
					t.Errorf("OnResponse header %s = %q", c.hdr[i], gotHdr.Get(c.hdr[i]))
				}
			}
		})
	}
}

func TestSend400InvalidRequestDetailIsRedacted(t *testing.T) {
	msg := "messages.1.content.0.tool_result: unexpected tool_use_id; key " + testSecret + " was used"
	up := newFakeAnthropic(t, jsonReply(400, `{"type":"error","error":{"type":"invalid_request_error","message":"`+msg+`"}}`))
	a := newAdapter(t, config.Provider{Kind: "anthropic", BaseURL: up.URL})
	_, err := a.Send(context.Background(), newCall(t, `{"model":"m","messages":[{"role":"user","content":"hi"}]}`, exchange.NewKey(testSecret, 0)))
	ge := gwerr.As(err)
	if ge.Category != gwerr.InvalidRequest || !strings.Contains(ge.Detail, "unexpected tool_use_id") {
		t.Fatalf("got %+v, want invalid_request with the upstream message as detail", ge)
	}
	if strings.Contains(ge.Detail, testSecret) || strings.Contains(gwerr.ClientMessage(ge), testSecret) {
		t.Errorf("the key leaked into the detail: %q", ge.Detail)
	}
}

func TestSendRejectsUnsupportedBeforeAnyNetworkCall(t *testing.T) {
	up := newFakeAnthropic(t, sseReply(readFixture(t, "text.sse")))
	a := newAdapter(t, config.Provider{Kind: "anthropic", BaseURL: up.URL})
	for _, c := range rejectCases {
		t.Run(c.name, func(t *testing.T) {
			call, err := promptCall(t, c.body)
			if err == nil {
				call.Key = exchange.NewKey(testSecret, 0)
				// the registry's guard, then the adapter
				if e := provider.RefuseUntranslated(call.Req, call.Step.ID, false); e != nil {
					err = e
				} else {
					_, err = a.Send(context.Background(), call)
				}
			}
			var ge *gwerr.Error
			if !errors.As(err, &ge) || ge.Category != gwerr.InvalidRequest || ge.Param != c.param {
				t.Fatalf("err = %v, want invalid_request param %q", err, c.param)
			}
		})
	}
	if n := len(up.requests()); n != 0 {
		t.Errorf("upstream was called %d times for requests that must be rejected locally", n)
	}
}

func TestSendStreamErrorEventAndCutConnection(t *testing.T) {
	t.Run("error_event_is_overloaded", func(t *testing.T) {
		up := newFakeAnthropic(t, sseReply(readFixture(t, "error_midstream.sse")))
		a := newAdapter(t, config.Provider{Kind: "anthropic", BaseURL: up.URL})
		s, err := a.Send(context.Background(), newCall(t, `{"model":"m","stream":true,"messages":[{"role":"user","content":"hi"}]}`, exchange.Key{}))
		if err != nil {
			t.Fatal(err)
		}
		defer s.Close()
		_, err = collect(t, s)
		if ge := gwerr.As(err); ge.Category != gwerr.Overloaded {
			t.Errorf("end = %v, want overloaded", err)
		}
	})
	t.Run("connection_cut_is_interrupted", func(t *testing.T) {
		body := readFixture(t, "text.sse")
		up := newFakeAnthropic(t, func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Type", "text/event-stream")
			w.WriteHeader(200)
			w.Write(body[:len(body)/2])
			w.(http.Flusher).Flush()
			conn, _, _ := http.NewResponseController(w).Hijack()
			conn.Close()
		})
		a := newAdapter(t, config.Provider{Kind: "anthropic", BaseURL: up.URL})
		s, err := a.Send(context.Background(), newCall(t, `{"model":"m","stream":true,"messages":[{"role":"user","content":"hi"}]}`, exchange.Key{}))
		if err != nil {
			t.Fatal(err)
		}
		defer s.Close()
		_, err = collect(t, s)
		if ge := gwerr.As(err); err == io.EOF || ge.Category != gwerr.Interrupted {
			t.Errorf("end = %v, want interrupted", err)
		}
	})
	t.Run("json_error_on_a_streaming_request", func(t *testing.T) {
		up := newFakeAnthropic(t, jsonReply(200, `{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}`))
		a := newAdapter(t, config.Provider{Kind: "anthropic", BaseURL: up.URL})
		_, err := a.Send(context.Background(), newCall(t, `{"model":"m","stream":true,"messages":[{"role":"user","content":"hi"}]}`, exchange.Key{}))
		if ge := gwerr.As(err); ge == nil || ge.Category != gwerr.Overloaded {
			t.Errorf("err = %v, want overloaded", err)
		}
	})
}

func TestSendCancelledContext(t *testing.T) {
	up := newFakeAnthropic(t, func(w http.ResponseWriter, r *http.Request) { <-r.Context().Done() })
	a := newAdapter(t, config.Provider{Kind: "anthropic", BaseURL: up.URL})
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	_, err := a.Send(ctx, newCall(t, `{"model":"m","stream":true,"messages":[{"role":"user","content":"hi"}]}`, exchange.Key{}))
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("err = %v, want the context's error", err)
	}
}

// TestSendMaxTokens: max_tokens is the client's when it gives one, else the
// target's default lowered to the admitted output cap.
func TestSendMaxTokens(t *testing.T) {
	up := newFakeAnthropic(t, sseReply(readFixture(t, "text.sse")))
	a := newAdapter(t, config.Provider{Kind: "anthropic", BaseURL: up.URL})
	for i, c := range []struct {
		body string
		cap  int
		want string
	}{
		{`{"model":"m","stream":true,"messages":[{"role":"user","content":"hi"}]}`, 0, `"max_tokens":1024`},
		{`{"model":"m","stream":true,"messages":[{"role":"user","content":"hi"}]}`, 300, `"max_tokens":300`},
		{`{"model":"m","stream":true,"messages":[{"role":"user","content":"hi"}]}`, 5000, `"max_tokens":1024`},
		{`{"model":"m","stream":true,"max_tokens":30,"messages":[{"role":"user","content":"hi"}]}`, 0, `"max_tokens":30`},
	} {
		call := newCall(t, c.body, exchange.Key{})
		call.Req.OutputCap = c.cap
		s, err := a.Send(context.Background(), call)
		if err != nil {
			t.Fatal(err)
		}
		s.Close()
		if got := up.requests()[i].body; !strings.Contains(string(got), c.want) {
			t.Errorf("output cap %d: upstream body %s, want %s", c.cap, got, c.want)
		}
	}
}

// TestVariantIsAppliedToTheTranslatedRequest: the target's prompt variant
// edits the canonical copy the Messages request is built from; the cap
// lowers the target's default output limit.
func TestVariantIsAppliedToTheTranslatedRequest(t *testing.T) {
	up := newFakeAnthropic(t, jsonReply(200, `{"id":"msg_v","type":"message","role":"assistant","model":"claude-x","content":[{"type":"text","text":"ok"}],"stop_reason":"end_turn","usage":{"input_tokens":3,"output_tokens":1}}`))
	a := newAdapter(t, config.Provider{Kind: "anthropic", BaseURL: up.URL})
	call := newCall(t, `{"model":"m","temperature":0.9,"messages":[{"role":"system","content":"be brief"},{"role":"user","content":"hi"}]}`, exchange.NewKey(testSecret, 0))
	temp := 0.3
	call.Step.Variant = &config.Variant{Name: "claude-v1", SystemPrefix: "You are Claude. ", Temperature: &temp, MaxTokensCap: 200}
	if _, err := a.Send(context.Background(), call); err != nil {
		t.Fatal(err)
	}
	want := `{"model":"claude-x","max_tokens":200,"system":[{"type":"text","text":"You are Claude. "},{"type":"text","text":"be brief"}],
		"messages":[{"role":"user","content":[{"type":"text","text":"hi"}]}],"temperature":0.3}`
	if got := up.requests()[0].body; !reflect.DeepEqual(canon(t, got), canon(t, []byte(want))) {
		t.Errorf("upstream body\n got %s\nwant %s", got, compact(t, want))
	}
	if p := call.Req.Prompt; *p.Sampling.Temperature != 0.9 || len(p.System) != 1 || p.System[0].Text != "be brief" {
		t.Error("the variant edited the request other targets see")
	}
}
