package anthropic

import (
	"bytes"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"unsafe"

	"github.com/llmgw/llmgw/pkg/exchange"
	"github.com/llmgw/llmgw/pkg/gwerr"
	"github.com/llmgw/llmgw/pkg/wire/chatwire"
)

var update = flag.Bool("update", false, "rewrite testdata/*.golden from the current output")

const testCreated = 1700000000

// replay runs an Anthropic SSE body through the stream translator and the
// Chat Completions encoder and renders every chunk (events that give none,
// such as signatures, as an event line; finishes with their stop reason),
// then how the stream ended and its usage.
func replay(t *testing.T, sseBody []byte) string {
	t.Helper()
	s := newSSEStream("anth", io.NopCloser(bytes.NewReader(sseBody)), 400, testCreated)
	defer s.Close()
	evs, err := collect(t, s)
	var out strings.Builder
	for i, f := range chatChunks(t, evs) {
		ev := f.ev
		if f.data == nil {
			fmt.Fprintf(&out, "event %s %q\n", kindName(ev.Kind), ev.Text)
			continue
		}
		if !json.Valid(f.data) {
			t.Fatalf("chunk %d is not valid JSON: %s", i, f.data)
		}
		ci := chatwire.InspectChunk(f.data)
		if ci.Content != ev.Commits() || ci.Finish != ev.Finishes() || ci.UsageOnly != ev.IsUsageOnly() {
			t.Errorf("event %d (%s) content=%v finish=%v usage_only=%v disagrees with its chunk %+v: %s",
				i, kindName(ev.Kind), ev.Commits(), ev.Finishes(), ev.IsUsageOnly(), ci, f.data)
		}
		fmt.Fprintf(&out, "frame content=%v finish=%v usage_only=%v\n%s\n", ev.Commits(), ev.Finishes(), ev.IsUsageOnly(), f.data)
		if ev.Kind == exchange.Finish {
			fmt.Fprintf(&out, "stop=%q stop_sequence=%q\n", ev.Stop, ev.StopSequence)
		}
	}
	if err == io.EOF {
		out.WriteString("end: EOF\n")
	} else {
		ge := gwerr.As(err)
		fmt.Fprintf(&out, "end: error category=%s message=%q\n", ge.Category, ge.Message)
	}
	u := s.Usage()
	fmt.Fprintf(&out, "usage: input=%d output=%d cache_read=%d cache_write=%d estimated=%v\n", u.Input, u.Output, u.CacheRead, u.CacheWrite, u.Estimated)
	return out.String()
}

// TestStreamGolden translates real-format Anthropic streams chunk by chunk
// and compares with testdata/<name>.golden (go test -run TestStreamGolden -update
// rewrites them).
func TestStreamGolden(t *testing.T) {
	files, err := filepath.Glob("testdata/*.sse")
	if err != nil || len(files) == 0 {
		t.Fatalf("no testdata: %v", err)
	}
	for _, in := range files {
		name := strings.TrimSuffix(filepath.Base(in), ".sse")
		t.Run(name, func(t *testing.T) {
			body, err := os.ReadFile(in)
			if err != nil {
				t.Fatal(err)
			}
			got := replay(t, body)
			golden := strings.TrimSuffix(in, ".sse") + ".golden"
			if *update {
				if err := os.WriteFile(golden, []byte(got), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			want, err := os.ReadFile(golden)
			if err != nil {
				t.Fatalf("%v (run with -update to create it)", err)
			}
			if got != string(want) {
				t.Errorf("translation of %s differs from %s:\n--- got\n%s\n--- want\n%s", in, golden, got, want)
			}
		})
	}
}

func readFixture(t *testing.T, name string) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", name))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func TestStreamToolCallIndicesCountToolUseBlocks(t *testing.T) {
	s := newSSEStream("anth", io.NopCloser(bytes.NewReader(readFixture(t, "tool_use.sse"))), 0, testCreated)
	evs, err := collect(t, s)
	if err != io.EOF {
		t.Fatalf("end = %v, want io.EOF", err)
	}
	var starts []exchange.Event
	eventArgs := map[int]string{}
	for _, ev := range evs {
		switch ev.Kind {
		case exchange.ToolCall:
			starts = append(starts, ev)
		case exchange.ToolArgs:
			eventArgs[ev.Index] += ev.Text
		}
	}
	if len(starts) != 2 || starts[0].Index != 0 || starts[1].Index != 1 {
		t.Fatalf("tool call events = %+v, want indices 0 and 1 (Anthropic blocks 1 and 2)", starts)
	}
	if starts[0].ID != "toolu_01T1x1fJ34qAmk2tNTrN7Up6" || starts[0].Name != "get_weather" {
		t.Errorf("first tool call = %+v", starts[0])
	}
	if eventArgs[0] != `{"location": "Paris"}` || eventArgs[1] != `{"location": "Oslo"}` {
		t.Errorf("argument events = %v", eventArgs)
	}

	// What an OpenAI client sees: the chunks the Chat Completions encoder writes.
	type call struct {
		Index    int    `json:"index"`
		ID       string `json:"id"`
		Type     string `json:"type"`
		Function struct {
			Name      *string `json:"name"`
			Arguments string  `json:"arguments"`
		} `json:"function"`
	}
	args := map[int]string{}
	var chunkStarts []call
	for _, data := range chatData(t, evs) {
		var c struct {
			Choices []struct {
				Delta struct {
					ToolCalls []call `json:"tool_calls"`
				} `json:"delta"`
			} `json:"choices"`
		}
		if err := json.Unmarshal(data, &c); err != nil {
			t.Fatal(err)
		}
		for _, ch := range c.Choices {
			for _, tc := range ch.Delta.ToolCalls {
				if tc.ID != "" {
					chunkStarts = append(chunkStarts, tc)
				}
				args[tc.Index] += tc.Function.Arguments
			}
		}
	}
	if len(chunkStarts) != 2 || chunkStarts[0].Index != 0 || chunkStarts[1].Index != 1 {
		t.Fatalf("tool call starts = %+v, want indices 0 and 1", chunkStarts)
	}
	if chunkStarts[0].ID != "toolu_01T1x1fJ34qAmk2tNTrN7Up6" || chunkStarts[0].Type != "function" || *chunkStarts[0].Function.Name != "get_weather" {
		t.Errorf("first start = %+v", chunkStarts[0])
	}
	if args[0] != `{"location": "Paris"}` || args[1] != `{"location": "Oslo"}` {
		t.Errorf("arguments = %v", args)
	}
}

// TestStreamThinkingEvents checks the events of a stream with a thinking
// block (its signature included), a redacted_thinking block and text: the
// signature and the redacted data are events of their own, which the Chat
// Completions encoder drops and the Messages ingress sends back.
func TestStreamThinkingEvents(t *testing.T) {
	s := newSSEStream("anth", io.NopCloser(bytes.NewReader(readFixture(t, "thinking.sse"))), 0, testCreated)
	evs, err := collect(t, s)
	if err != io.EOF {
		t.Fatalf("end = %v, want io.EOF", err)
	}
	want := []exchange.Event{
		{Kind: exchange.Start, ID: "msg_think", Name: "claude-sonnet-4-5", Created: testCreated},
		{Kind: exchange.Reasoning, Text: "27 * 453 = 12231"},
		{Kind: exchange.Signature, Text: "EqQBCgIYAhIM1gbcDa9GJwZA2b3hGgxBdjrkzLoky3dl1pkiMOYds"},
		{Kind: exchange.RedactedReasoning, Text: "EmwKAhgBEgy3va3pzix"},
		{Kind: exchange.Text, Text: "12,231"},
		{Kind: exchange.Finish, Finish: exchange.FinishStop, Stop: "end_turn"},
		{Kind: exchange.Usage, Usage: exchange.TokenUsage{Input: 40, Output: 120}},
	}
	if !reflect.DeepEqual(evs, want) {
		t.Errorf("events\n got %+v\nwant %+v", evs, want)
	}
}

func TestStreamUsageAndCacheFigures(t *testing.T) {
	s := newSSEStream("anth", io.NopCloser(bytes.NewReader(readFixture(t, "cached.sse"))), 0, testCreated)
	evs, err := collect(t, s)
	if err != io.EOF {
		t.Fatalf("end = %v", err)
	}
	want := exchange.TokenUsage{Input: 2012, Output: 3, CacheRead: 1800, CacheWrite: 200}
	if last := evs[len(evs)-1]; last.Kind != exchange.Usage || last.Usage != want {
		t.Errorf("last event = %+v, want usage %+v", last, want)
	}
	if u := s.Usage(); u != want {
		t.Errorf("Usage() = %+v, want %+v", u, want)
	}
	if fin := evs[len(evs)-2]; fin.Kind != exchange.Finish || fin.Finish != exchange.FinishLength || fin.Stop != "max_tokens" {
		t.Errorf("max_tokens did not finish with length: %+v", fin)
	}
	chunks := chatData(t, evs)
	last := chunks[len(chunks)-1]
	ci := chatwire.InspectChunk(last)
	if !ci.UsageOnly || ci.Usage.PromptTokens != 12+200+1800 || ci.Usage.CompletionTokens != 3 || ci.Usage.TotalTokens != 2015 ||
		ci.Usage.PromptTokensDetails == nil || ci.Usage.PromptTokensDetails.CachedTokens != 1800 {
		t.Errorf("usage chunk = %s", last)
	}
	if !bytes.Contains(last, []byte(`"cache_creation_tokens":200`)) {
		t.Errorf("usage chunk lacks cache_creation_tokens: %s", last)
	}
	if fin := chunks[len(chunks)-2]; !bytes.Contains(fin, []byte(`"finish_reason":"length"`)) {
		t.Errorf("max_tokens did not finish with length: %s", fin)
	}
}

func TestFinishReasonMapping(t *testing.T) {
	for stop, want := range map[string]string{
		"end_turn": "stop", "stop_sequence": "stop", "pause_turn": "stop", "max_tokens": "length",
		"tool_use": "tool_calls", "refusal": "content_filter", "model_context_window_exceeded": "length",
	} {
		body := strings.Replace(string(readFixture(t, "text.sse")), `"stop_reason":"end_turn"`, `"stop_reason":"`+stop+`"`, 1)
		seq := ""
		if stop == "stop_sequence" {
			seq = "END"
			body = strings.Replace(body, `"stop_sequence":null}`, `"stop_sequence":"END"}`, 1)
		}
		out := replay(t, []byte(body))
		if !strings.Contains(out, `"finish_reason":"`+want+`"`) || !strings.Contains(out, "end: EOF") ||
			!strings.Contains(out, fmt.Sprintf("stop=%q stop_sequence=%q", stop, seq)) {
			t.Errorf("stop_reason %s: want finish_reason %s (stop %q, stop_sequence %q), got\n%s", stop, want, stop, seq, out)
		}
	}
}

func TestStreamErrorEventIsInBandOverloaded(t *testing.T) {
	s := newSSEStream("anth", io.NopCloser(bytes.NewReader(readFixture(t, "error_midstream.sse"))), 0, testCreated)
	evs, err := collect(t, s)
	var ge *gwerr.Error
	if !errors.As(err, &ge) || ge.Category != gwerr.Overloaded || ge.Provider != "anth" {
		t.Fatalf("end = %v, want an overloaded in-band error", err)
	}
	if len(evs) != 2 || evs[0].Kind != exchange.Start || evs[1].Kind != exchange.Text {
		t.Errorf("events before the error = %+v, want start and the text", evs)
	}
}

func TestStreamEndingEarlyIsInterrupted(t *testing.T) {
	for _, name := range []string{"cut.sse", "no_stop_reason.sse"} {
		body := readFixture(t, name)
		for _, cut := range []int{len(body), len(body) - 10} { // a clean end, and a frame cut in half
			s := newSSEStream("anth", io.NopCloser(bytes.NewReader(body[:cut])), 0, testCreated)
			_, err := collect(t, s)
			if ge := gwerr.As(err); err == io.EOF || ge.Category != gwerr.Interrupted {
				t.Errorf("%s cut at %d: end = %v, want interrupted", name, cut, err)
			}
		}
	}
	// Every prefix of a complete stream that stops before message_stop is
	// interrupted, never a clean end.
	body := readFixture(t, "tool_use.sse")
	stop := bytes.Index(body, []byte("event: message_stop"))
	for cut := 0; cut < stop; cut += 7 {
		s := newSSEStream("anth", io.NopCloser(bytes.NewReader(body[:cut])), 0, testCreated)
		if _, err := collect(t, s); err == io.EOF {
			t.Fatalf("stream cut at byte %d ended cleanly", cut)
		}
	}
}

func TestStreamUsageEstimatedWhenCut(t *testing.T) {
	s := newSSEStream("anth", io.NopCloser(bytes.NewReader(readFixture(t, "cut.sse"))), 0, testCreated)
	collect(t, s)
	u := s.Usage()
	if u.Input != 10 || !u.Estimated || u.Output != exchange.EstimateTokens(len("Once upon a time, a")) {
		t.Errorf("Usage() after a cut = %+v", u)
	}
}

// TestStreamTextDeltaPointsIntoTheFrame: a plain text_delta's Text is a
// view of the frame's bytes, and translating it allocates nothing.
func TestStreamTextDeltaPointsIntoTheFrame(t *testing.T) {
	var tr streamTranslator
	tr.prov = "anth"
	if _, err := tr.event([]byte("message_start"), []byte(`{"type":"message_start","message":{"id":"msg_1","model":"m","usage":{"input_tokens":1}}}`)); err != nil {
		t.Fatal(err)
	}
	data := []byte(`{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"hello"}}`)
	name := []byte("content_block_delta")
	ev, err := tr.event(name, data)
	if err != nil || ev.Kind != exchange.Text || ev.Text != "hello" {
		t.Fatalf("event = %+v, %v", ev, err)
	}
	if p := unsafe.StringData(ev.Text); p != &data[bytes.Index(data, []byte("hello"))] {
		t.Error("the text was copied; it must point into the frame")
	}
	if n := testing.AllocsPerRun(100, func() { tr.event(name, data) }); n != 0 {
		t.Errorf("a plain text_delta costs %v allocations, want 0", n)
	}
}
