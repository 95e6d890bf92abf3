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
	"strings"
	"testing"

	"github.com/llmgw/llmgw/pkg/gwerr"
	"github.com/llmgw/llmgw/pkg/openaiwire"
	"github.com/llmgw/llmgw/pkg/provider"
)

var update = flag.Bool("update", false, "rewrite testdata/*.golden from the current output")

const testCreated = 1700000000

// replay runs an Anthropic SSE body through the stream translator and
// renders every frame, then how the stream ended and its usage.
func replay(t *testing.T, sseBody []byte) string {
	t.Helper()
	s := newSSEStream("anth", io.NopCloser(bytes.NewReader(sseBody)), 400, testCreated)
	defer s.Close()
	var out strings.Builder
	for i := 0; ; i++ {
		f, err := s.Next()
		if err == io.EOF {
			out.WriteString("end: EOF\n")
			break
		}
		if err != nil {
			ge := gwerr.As(err)
			fmt.Fprintf(&out, "end: error category=%s message=%q\n", ge.Category, ge.Message)
			break
		}
		if !json.Valid(f.Data) {
			t.Fatalf("frame %d is not valid JSON: %s", i, f.Data)
		}
		ci := openaiwire.InspectChunk(f.Data)
		if ci.Content != f.Content || ci.Finish != f.Finish || ci.UsageOnly != f.UsageOnly {
			t.Errorf("frame %d flags content=%v finish=%v usage_only=%v disagree with its JSON %+v: %s", i, f.Content, f.Finish, f.UsageOnly, ci, f.Data)
		}
		fmt.Fprintf(&out, "frame content=%v finish=%v usage_only=%v\n%s\n", f.Content, f.Finish, f.UsageOnly, f.Data)
		if i > 1000 {
			t.Fatal("runaway stream")
		}
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

// collect returns the frames (copied) and the final error of a stream.
func collect(t *testing.T, s provider.Stream) ([]provider.Frame, error) {
	t.Helper()
	var frames []provider.Frame
	for {
		f, err := s.Next()
		if err != nil {
			return frames, err
		}
		f.Data = append([]byte(nil), f.Data...)
		frames = append(frames, f)
		if len(frames) > 1000 {
			t.Fatal("runaway stream")
		}
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
	frames, err := collect(t, s)
	if err != io.EOF {
		t.Fatalf("end = %v, want io.EOF", err)
	}
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
	var starts []call
	for _, f := range frames {
		var c struct {
			Choices []struct {
				Delta struct {
					ToolCalls []call `json:"tool_calls"`
				} `json:"delta"`
			} `json:"choices"`
		}
		if err := json.Unmarshal(f.Data, &c); err != nil {
			t.Fatal(err)
		}
		for _, ch := range c.Choices {
			for _, tc := range ch.Delta.ToolCalls {
				if tc.ID != "" {
					starts = append(starts, tc)
				}
				args[tc.Index] += tc.Function.Arguments
			}
		}
	}
	if len(starts) != 2 || starts[0].Index != 0 || starts[1].Index != 1 {
		t.Fatalf("tool call starts = %+v, want indices 0 and 1 (Anthropic blocks 1 and 2)", starts)
	}
	if starts[0].ID != "toolu_01T1x1fJ34qAmk2tNTrN7Up6" || starts[0].Type != "function" || *starts[0].Function.Name != "get_weather" {
		t.Errorf("first start = %+v", starts[0])
	}
	if args[0] != `{"location": "Paris"}` || args[1] != `{"location": "Oslo"}` {
		t.Errorf("arguments = %v", args)
	}
}

func TestStreamUsageAndCacheFigures(t *testing.T) {
	s := newSSEStream("anth", io.NopCloser(bytes.NewReader(readFixture(t, "cached.sse"))), 0, testCreated)
	frames, err := collect(t, s)
	if err != io.EOF {
		t.Fatalf("end = %v", err)
	}
	last := frames[len(frames)-1]
	if !last.UsageOnly {
		t.Fatalf("last frame is not the usage chunk: %s", last.Data)
	}
	ci := openaiwire.InspectChunk(last.Data)
	if ci.Usage.PromptTokens != 12+200+1800 || ci.Usage.CompletionTokens != 3 || ci.Usage.TotalTokens != 2015 ||
		ci.Usage.PromptTokensDetails == nil || ci.Usage.PromptTokensDetails.CachedTokens != 1800 {
		t.Errorf("usage chunk = %s", last.Data)
	}
	if !bytes.Contains(last.Data, []byte(`"cache_creation_tokens":200`)) {
		t.Errorf("usage chunk lacks cache_creation_tokens: %s", last.Data)
	}
	want := provider.Usage{Input: 2012, Output: 3, CacheRead: 1800, CacheWrite: 200}
	if u := s.Usage(); u != want {
		t.Errorf("Usage() = %+v, want %+v", u, want)
	}
	fin := frames[len(frames)-2]
	if !fin.Finish || !bytes.Contains(fin.Data, []byte(`"finish_reason":"length"`)) {
		t.Errorf("max_tokens did not finish with length: %s", fin.Data)
	}
}

func TestFinishReasonMapping(t *testing.T) {
	for stop, want := range map[string]string{
		"end_turn": "stop", "stop_sequence": "stop", "pause_turn": "stop", "max_tokens": "length",
		"tool_use": "tool_calls", "refusal": "content_filter", "model_context_window_exceeded": "length",
	} {
		body := strings.Replace(string(readFixture(t, "text.sse")), `"stop_reason":"end_turn"`, `"stop_reason":"`+stop+`"`, 1)
		out := replay(t, []byte(body))
		if !strings.Contains(out, `"finish_reason":"`+want+`"`) || !strings.Contains(out, "end: EOF") {
			t.Errorf("stop_reason %s: want finish_reason %s, got\n%s", stop, want, out)
		}
	}
}

func TestStreamErrorEventIsInBandOverloaded(t *testing.T) {
	s := newSSEStream("anth", io.NopCloser(bytes.NewReader(readFixture(t, "error_midstream.sse"))), 0, testCreated)
	frames, err := collect(t, s)
	var ge *gwerr.Error
	if !errors.As(err, &ge) || ge.Category != gwerr.Overloaded || ge.Provider != "anth" {
		t.Fatalf("end = %v, want an overloaded in-band error", err)
	}
	if len(frames) != 2 || !frames[1].Content {
		t.Errorf("frames before the error = %d, want role and the text", len(frames))
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
	if u.Input != 10 || !u.Estimated || u.Output != provider.EstimateTokens(len("Once upon a time, a")) {
		t.Errorf("Usage() after a cut = %+v", u)
	}
}

func TestStreamFrameDataReusesOneBuffer(t *testing.T) {
	var tr streamTranslator
	tr.prov = "anth"
	if _, err := tr.event([]byte("message_start"), []byte(`{"type":"message_start","message":{"id":"msg_1","model":"m","usage":{"input_tokens":1}}}`)); err != nil {
		t.Fatal(err)
	}
	ev := []byte(`{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"hello"}}`)
	name := []byte("content_block_delta")
	f1, _ := tr.event(name, ev)
	f2, _ := tr.event(name, ev)
	if &f1.Data[0] != &f2.Data[0] {
		t.Error("each frame got a new buffer; the translator must reuse one per stream")
	}
	if n := testing.AllocsPerRun(100, func() { tr.event(name, ev) }); n != 0 {
		t.Errorf("a plain text_delta costs %v allocations, want 0", n)
	}
}
