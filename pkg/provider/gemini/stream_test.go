package gemini

import (
	"context"
	"errors"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/llmgw/llmgw/pkg/exchange"
	"github.com/llmgw/llmgw/pkg/gwerr"
)

// streamFixture sends a streaming request to a fake answering with the
// fixture, and returns the events, the error that ended the stream, the
// stream's usage and the call.
func streamFixture(t *testing.T, name string) ([]exchange.Event, error, exchange.TokenUsage, *exchange.Request) {
	t.Helper()
	f := newFakeAPI(t, serveSSE(fixture(t, name)))
	call := newCall(t, `{"model":"m","stream":true,"messages":[{"role":"user","content":"Hi"}]}`)
	s, err := newTestAdapter(t, f).Send(context.Background(), call)
	if err != nil {
		t.Fatalf("Send: %v", err)
	}
	defer s.Close()
	evs, err := collect(t, s)
	return evs, err, s.Usage(), call.Req
}

// TestStreamGolden checks what an OpenAI client receives for each
// fixture: the chat chunks the events encode to.
func TestStreamGolden(t *testing.T) {
	const head = `{"id":"chatcmpl-Kj0-aN2xBqPq1MkPiZ6OoAc","object":"chat.completion.chunk","created":1700000000,"model":"gemini-2.5-flash","choices":`
	role := head + `[{"index":0,"delta":{"role":"assistant","content":""},"finish_reason":null}]}`
	content := func(s string) string {
		return head + `[{"index":0,"delta":{"content":"` + s + `"},"finish_reason":null}]}`
	}
	finish := func(r string) string {
		return head + `[{"index":0,"delta":{},"finish_reason":"` + r + `"}]}`
	}
	cases := []struct {
		name string
		want []string
	}{
		{"text", []string{role, content("Hello"), content(`, \"world\"\n\tcafé`), content(" 😀!"), finish("stop"),
			head + `[],"usage":{"prompt_tokens":2012,"completion_tokens":37,"total_tokens":2049,"prompt_tokens_details":{"cached_tokens":1800}}}`}},
		{"tool_calls", []string{role, content("Checking both cities."),
			head + `[{"index":0,"delta":{"tool_calls":[{"index":0,"id":"ID0","type":"function","function":{"name":"get_weather","arguments":""}}]},"finish_reason":null}]}`,
			head + `[{"index":0,"delta":{"tool_calls":[{"index":0,"function":{"arguments":"{\"location\":\"Paris\"}"}}]},"finish_reason":null}]}`,
			head + `[{"index":0,"delta":{"tool_calls":[{"index":1,"id":"ID1","type":"function","function":{"name":"get_weather","arguments":""}}]},"finish_reason":null}]}`,
			head + `[{"index":0,"delta":{"tool_calls":[{"index":1,"function":{"arguments":"{\"location\":\"Oslo\",\"unit\":\"celsius\"}"}}]},"finish_reason":null}]}`,
			finish("tool_calls"),
			head + `[],"usage":{"prompt_tokens":64,"completion_tokens":30,"total_tokens":94}}`}},
		{"safety", []string{role, content("Here is how"), finish("content_filter"),
			head + `[],"usage":{"prompt_tokens":12,"completion_tokens":3,"total_tokens":15}}`}},
	}
	restore := timeNow
	timeNow = func() time.Time { return time.Unix(1700000000, 0) }
	defer func() { timeNow = restore }()
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			evs, err, _, _ := streamFixture(t, c.name+".sse")
			if err != io.EOF {
				t.Fatalf("stream ended with %v, want io.EOF", err)
			}
			got := chatChunks(t, evs)
			ids := 0
			for _, ev := range evs {
				if ev.Kind == exchange.ToolCall {
					if !strings.HasPrefix(ev.ID, "call_") || len(ev.ID) != 29 {
						t.Errorf("tool call id %q, want call_<24 hex>", ev.ID)
					}
					for j := range got {
						got[j] = strings.ReplaceAll(got[j], ev.ID, "ID"+string(rune('0'+ids)))
					}
					ids++
				}
			}
			if strings.Join(got, "\n") != strings.Join(c.want, "\n") {
				t.Errorf("chunks\n got %s\nwant %s", strings.Join(got, "\n"), strings.Join(c.want, "\n"))
			}
		})
	}
}

// TestStreamThinkingIsReasoning: thought parts are reasoning, and their
// tokens count as output.
func TestStreamThinkingIsReasoning(t *testing.T) {
	evs, err, u, _ := streamFixture(t, "thinking.sse")
	if err != io.EOF {
		t.Fatal(err)
	}
	if evs[1].Kind != exchange.Reasoning || !strings.HasPrefix(evs[1].Text, "**Weighing") || evs[2].Kind != exchange.Text || evs[2].Text != "42" {
		t.Errorf("events = %+v", evs)
	}
	if u.Input != 10 || u.Output != 121 || u.Reasoning != 120 || u.Estimated {
		t.Errorf("usage = %+v", u)
	}
}

// TestStreamWithoutFinishReasonIsInterrupted: the API sends no end marker,
// so a stream that ends before a finishReason was cut.
func TestStreamWithoutFinishReasonIsInterrupted(t *testing.T) {
	evs, err, u, _ := streamFixture(t, "cut.sse")
	var ge *gwerr.Error
	if !errors.As(err, &ge) || ge.Category != gwerr.Interrupted {
		t.Fatalf("err = %v, want interrupted", err)
	}
	if len(evs) != 3 || evs[2].Text != " a time" {
		t.Errorf("events before the cut = %+v", evs)
	}
	if u.Input != 8 || u.Output != 0 {
		t.Errorf("usage = %+v", u)
	}
}

// TestStreamMalformedFrameSkippedAndCounted: a frame that is not JSON is
// never forwarded, and is counted on the request's trace.
func TestStreamMalformedFrameSkippedAndCounted(t *testing.T) {
	evs, err, _, req := streamFixture(t, "malformed.sse")
	if err != io.EOF {
		t.Fatalf("err = %v", err)
	}
	var text strings.Builder
	for _, ev := range evs {
		if ev.Kind == exchange.Text {
			text.WriteString(ev.Text)
		}
	}
	if text.String() != "Hello" || req.Trace.MalformedFrames != 1 {
		t.Errorf("text %q, malformed frames %d", text.String(), req.Trace.MalformedFrames)
	}
}

// TestStreamErrorFrame: an error object in the stream is an in-band error
// classified by its code (503 UNAVAILABLE: overloaded).
func TestStreamErrorFrame(t *testing.T) {
	evs, err, _, _ := streamFixture(t, "error_midstream.sse")
	var ge *gwerr.Error
	if !errors.As(err, &ge) || ge.Category != gwerr.Overloaded {
		t.Fatalf("err = %v, want overloaded", err)
	}
	if len(evs) != 2 || evs[1].Text != "Once upon a time" {
		t.Errorf("events = %+v", evs)
	}
}

// TestStreamBlockedPrompt: a prompt blocked before any candidate ends the
// stream cleanly with content_filter.
func TestStreamBlockedPrompt(t *testing.T) {
	evs, err, u, _ := streamFixture(t, "blocked_prompt.sse")
	if err != io.EOF {
		t.Fatalf("err = %v", err)
	}
	if len(evs) != 3 || evs[1].Kind != exchange.Finish || evs[1].Finish != exchange.FinishContentFilter || evs[1].Stop != "PROHIBITED_CONTENT" {
		t.Errorf("events = %+v", evs)
	}
	if u.Input != 7 {
		t.Errorf("usage = %+v", u)
	}
}
