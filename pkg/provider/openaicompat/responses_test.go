package openaicompat_test

import (
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/llmgw/llmgw/pkg/config"
	"github.com/llmgw/llmgw/pkg/exchange"
	"github.com/llmgw/llmgw/pkg/gwerr"
	"github.com/llmgw/llmgw/pkg/provider"
	"github.com/llmgw/llmgw/pkg/provider/openaicompat"
)

// A Responses stream as OpenAI sends it (abridged objects).
var responsesFrames = []string{
	`{"type":"response.created","sequence_number":0,"response":{"id":"resp_1","object":"response","status":"in_progress","model":"gpt-5","output":[]}}`,
	`{"type":"response.in_progress","sequence_number":1,"response":{"id":"resp_1","object":"response","status":"in_progress","model":"gpt-5","output":[]}}`,
	`{"type":"response.output_item.added","sequence_number":2,"output_index":0,"item":{"id":"msg_1","type":"message","status":"in_progress","content":[],"role":"assistant"}}`,
	`{"type":"response.content_part.added","sequence_number":3,"item_id":"msg_1","output_index":0,"content_index":0,"part":{"type":"output_text","annotations":[],"text":""}}`,
	`{"type":"response.output_text.delta","sequence_number":4,"item_id":"msg_1","output_index":0,"content_index":0,"delta":"Hi \"you\"","logprobs":[]}`,
	`{"type":"response.output_text.done","sequence_number":5,"item_id":"msg_1","output_index":0,"content_index":0,"text":"Hi \"you\"","logprobs":[]}`,
	`{"type":"response.content_part.done","sequence_number":6,"item_id":"msg_1","output_index":0,"content_index":0,"part":{"type":"output_text","annotations":[],"text":"Hi \"you\""}}`,
	`{"type":"response.output_item.done","sequence_number":7,"output_index":0,"item":{"id":"msg_1","type":"message","status":"completed","content":[{"type":"output_text","annotations":[],"text":"Hi \"you\""}],"role":"assistant"}}`,
	`{"type":"response.completed","sequence_number":8,"response":{"id":"resp_1","object":"response","status":"completed","model":"gpt-5","output":[],"usage":{"input_tokens":20,"input_tokens_details":{"cached_tokens":4},"output_tokens":9,"output_tokens_details":{"reasoning_tokens":3},"total_tokens":29}}}`,
}

func sseOf(frames []string) string {
	var b strings.Builder
	for _, f := range frames {
		typ := f[len(`{"type":"`):]
		typ = typ[:strings.IndexByte(typ, '"')]
		b.WriteString("event: " + typ + "\ndata: " + f + "\n\n")
	}
	return b.String()
}

// responsesAdapter serves one canned answer at /v1/responses and records
// what it received.
func responsesAdapter(t *testing.T, apis []string, answer func(w http.ResponseWriter)) (*openaicompat.Adapter, *[]string, *[]string) {
	t.Helper()
	var paths, bodies []string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		paths, bodies = append(paths, r.URL.Path), append(bodies, string(b))
		answer(w)
	}))
	t.Cleanup(srv.Close)
	a, err := openaicompat.New("oa", &config.Provider{Kind: "openai", BaseURL: srv.URL + "/v1", APIs: apis}, srv.Client())
	if err != nil {
		t.Fatal(err)
	}
	return a, &paths, &bodies
}

func responsesCall(body string, stream bool, outputCap int) *provider.Call {
	rq := &exchange.Request{API: exchange.Responses, Stream: stream, Body: []byte(body), OutputCap: outputCap}
	return &provider.Call{Req: rq, Step: config.Step{ID: "oa/gpt-5", Provider: "oa", Model: "gpt-5"}}
}

func TestResponsesPassthroughBodyIsByteIdenticalExceptModel(t *testing.T) {
	a, paths, bodies := responsesAdapter(t, []string{"chat", "responses"}, func(w http.ResponseWriter) {
		w.Header().Set("Content-Type", "text/event-stream")
		io.WriteString(w, sseOf(responsesFrames))
	})
	in := `{ "model" : "route", "stream":true, "input":[{"type":"message","role":"developer","content":"x","id":"m1"}],` +
		`"tools":[{"type":"web_search"},{"type":"custom","name":"apply_patch"}], "store":false, "include":["reasoning.encrypted_content"], "x_future":{"a":[1,2]}}`
	s, err := a.Send(context.Background(), responsesCall(in, true, 0))
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	want := strings.Replace(in, `"route"`, `"gpt-5"`, 1)
	if (*paths)[0] != "/v1/responses" || (*bodies)[0] != want {
		t.Errorf("upstream got %s %s\nwant %s", (*paths)[0], (*bodies)[0], want)
	}
	var got []string
	var flags []exchange.Flags
	for {
		ev, err := s.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		if ev.Kind != exchange.Raw || ev.RawAPI != exchange.Responses {
			t.Fatalf("event %+v is not a Raw responses event", ev)
		}
		got, flags = append(got, string(ev.Raw)), append(flags, ev.Flags)
	}
	if strings.Join(got, "\n") != strings.Join(responsesFrames, "\n") {
		t.Errorf("relayed frames differ:\n%s", strings.Join(got, "\n"))
	}
	wantFlags := []exchange.Flags{0, 0, 0, 0, exchange.HasContent, 0, 0, exchange.HasContent, exchange.HasFinish}
	for i := range wantFlags {
		if flags[i] != wantFlags[i] {
			t.Errorf("frame %d flags %b, want %b", i, flags[i], wantFlags[i])
		}
	}
	if u := s.Usage(); u != (exchange.TokenUsage{Input: 20, Output: 9, CacheRead: 4, Reasoning: 3}) {
		t.Errorf("usage = %+v", u)
	}
}

func TestResponsesPassthroughAddsTheAdmittedCapOnlyWhenAbsent(t *testing.T) {
	a, _, bodies := responsesAdapter(t, []string{"responses"}, func(w http.ResponseWriter) {
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, `{"id":"resp_1","object":"response","status":"completed","error":null,"incomplete_details":null,"output":[{"type":"message","content":[{"type":"output_text","text":"ok"}]}],"usage":{"input_tokens":5,"output_tokens":1,"total_tokens":6}}`)
	})
	for _, tc := range []struct{ in, want string }{
		{`{"model":"r","input":"x"}`, `{"model":"gpt-5","input":"x","max_output_tokens":300}`},
		{`{"model":"r","input":"x","max_output_tokens":50}`, `{"model":"gpt-5","input":"x","max_output_tokens":50}`},
		{`{"model":"r","input":"x","max_tokens":50}`, `{"model":"gpt-5","input":"x","max_tokens":50,"max_output_tokens":300}`},
	} {
		s, err := a.Send(context.Background(), responsesCall(tc.in, false, 300))
		if err != nil {
			t.Fatal(err)
		}
		ev, _ := s.Next()
		if ev.Flags != exchange.HasContent|exchange.HasFinish|exchange.Whole || !strings.Contains(string(ev.Raw), `"text":"ok"`) {
			t.Errorf("whole body event = %+v", ev)
		}
		if got := (*bodies)[len(*bodies)-1]; got != tc.want {
			t.Errorf("upstream body %s, want %s", got, tc.want)
		}
	}
}

func TestResponsesStreamFailures(t *testing.T) {
	for _, tc := range []struct {
		name   string
		frames []string
		want   gwerr.Category
	}{
		{"cut before response.completed", responsesFrames[:5], gwerr.Interrupted},
		{"malformed frames are skipped, not a clean end", append(responsesFrames[:5:5], `{"type":"response.completed","sequence`), gwerr.Interrupted},
		{"response.failed", append(responsesFrames[:5:5], `{"type":"response.failed","sequence_number":5,"response":{"id":"resp_1","status":"failed","error":{"code":"rate_limit_exceeded","message":"slow down"}}}`), gwerr.RateLimited},
		{"error event", append(responsesFrames[:2:2], `{"type":"error","sequence_number":2,"code":"server_error","message":"boom","param":null}`), gwerr.Unavailable},
	} {
		t.Run(tc.name, func(t *testing.T) {
			a, _, _ := responsesAdapter(t, []string{"responses"}, func(w http.ResponseWriter) {
				w.Header().Set("Content-Type", "text/event-stream")
				io.WriteString(w, sseOf(tc.frames))
			})
			s, err := a.Send(context.Background(), responsesCall(`{"model":"r","input":"x","stream":true}`, true, 0))
			if err != nil {
				t.Fatal(err)
			}
			defer s.Close()
			for {
				_, err = s.Next()
				if err != nil {
					break
				}
			}
			var ge *gwerr.Error
			if !errors.As(err, &ge) || ge.Category != tc.want || ge.Provider != "oa" {
				t.Errorf("err = %v, want category %s", err, tc.want)
			}
		})
	}
}

func TestResponsesToChatOnlyProviderIsTranslatedToChat(t *testing.T) {
	a, paths, bodies := responsesAdapter(t, nil, func(w http.ResponseWriter) {
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, `{"id":"chatcmpl-1","object":"chat.completion","created":1,"model":"m","choices":[{"index":0,"message":{"role":"assistant","content":"hi"},"finish_reason":"stop"}],"usage":{"prompt_tokens":3,"completion_tokens":1,"total_tokens":4}}`)
	})
	call := responsesCall(`{"model":"r","input":"x","max_output_tokens":64}`, false, 0)
	call.Req.Prompt = &exchange.Prompt{Sampling: exchange.Sampling{MaxTokens: 64},
		Messages: []exchange.Message{{Role: exchange.RoleUser, Content: []exchange.Block{{Type: exchange.BlockText, Text: "x"}}}}}
	s, err := a.Send(context.Background(), call)
	if err != nil {
		t.Fatal(err)
	}
	var kinds []exchange.Kind
	for {
		ev, err := s.Next()
		if err != nil {
			break
		}
		kinds = append(kinds, ev.Kind)
	}
	if (*paths)[0] != "/v1/chat/completions" || (*bodies)[0] != `{"model":"gpt-5","messages":[{"role":"user","content":"x"}],"max_tokens":64}` {
		t.Errorf("upstream got %s %s", (*paths)[0], (*bodies)[0])
	}
	if len(kinds) == 0 || kinds[0] != exchange.Start {
		t.Errorf("translated events %v", kinds)
	}
	if call.Req.Prompt.Sampling.MaxTokens != 64 {
		t.Error("the shared canonical request was modified")
	}
}

// TestResponsesRelayIsAllocationFree: relaying an upstream delta event
// (read, inspected, handed on as a Raw event) allocates nothing.
func TestResponsesRelayIsAllocationFree(t *testing.T) {
	frame := "event: response.output_text.delta\ndata: " + responsesFrames[4] + "\n\n"
	a, err := openaicompat.New("oa", &config.Provider{Kind: "openai", BaseURL: "http://upstream.invalid/v1", APIs: []string{"responses"}},
		&http.Client{Transport: &memTransport{newBody: func() io.ReadCloser { return &repeatBody{frame: frame} }}})
	if err != nil {
		t.Fatal(err)
	}
	s, err := a.Send(context.Background(), responsesCall(`{"model":"r","input":"x","stream":true}`, true, 0))
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	for i := 0; i < 10; i++ {
		s.Next()
	}
	if n := testing.AllocsPerRun(2000, func() {
		if ev, err := s.Next(); err != nil || !ev.Commits() {
			t.Fatalf("event %+v, %v", ev, err)
		}
	}); n != 0 {
		t.Errorf("%v allocations per relayed event", n)
	}
}
