package anthropic

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"testing"

	"github.com/llmgw/llmgw/pkg/exchange"
	"github.com/llmgw/llmgw/pkg/ingress/chat"
	"github.com/llmgw/llmgw/pkg/wire/chatwire"
)

// gen turns fuzz bytes into a sequence of well-typed Anthropic stream
// events (in any order, with any indices), so the fuzzer spends its time
// on the translator's state machine rather than on JSON syntax.
type gen struct {
	in []byte
	i  int
}

func (g *gen) more() bool { return g.i < len(g.in) }

func (g *gen) byte() byte {
	if g.i >= len(g.in) {
		return 0
	}
	b := g.in[g.i]
	g.i++
	return b
}

// str takes up to 15 bytes as a string (valid UTF-8: the upstream's JSON
// is).
func (g *gen) str() string {
	n := int(g.byte() % 16)
	end := min(g.i+n, len(g.in))
	s := strings.ToValidUTF8(string(g.in[g.i:end]), "?")
	g.i = end
	return s
}

func jstr(s string) string { b, _ := json.Marshal(s); return string(b) }

var stopReasons = []string{"end_turn", "max_tokens", "stop_sequence", "tool_use", "pause_turn", "refusal", "model_context_window_exceeded", "", "some_new_reason"}

// expect is what a clean end must have produced, computed from the events
// the translator processes (those from message_start to message_stop).
type expect struct {
	started, finished, stopped bool
	text, reasoning, signature strings.Builder
	blocks                     map[int]int // block index -> tool call number, or -1
	args                       map[int]*strings.Builder
	tools                      int
	finish                     string
	output, input              int
}

// events builds the SSE body and what a clean end must show.
func events(data []byte) ([]byte, *expect) {
	g := &gen{in: data}
	named := g.byte()%4 != 0 // most streams name their events; some only carry "type" in the data
	var sse bytes.Buffer
	ex := &expect{blocks: map[int]int{}, args: map[int]*strings.Builder{}}
	emit := func(name, js string) {
		if named {
			sse.WriteString("event: " + name + "\n")
		}
		sse.WriteString("data: " + js + "\n\n")
	}
	live := func() bool { return ex.started && !ex.stopped }
	for n := 0; g.more() && n < 200; n++ {
		op, idx := g.byte()%11, int(g.byte()%5)
		switch op {
		case 0:
			in := int(g.byte())
			emit("message_start", fmt.Sprintf(`{"type":"message_start","message":{"id":"msg_f","type":"message","role":"assistant","content":[],"model":"claude-f","stop_reason":null,"stop_sequence":null,"usage":{"input_tokens":%d,"output_tokens":1}}}`, in))
			if !ex.started {
				ex.started, ex.input, ex.output = true, in, 1
			}
		case 1:
			s := g.str()
			emit("content_block_start", fmt.Sprintf(`{"type":"content_block_start","index":%d,"content_block":{"type":"text","text":%s}}`, idx, jstr(s)))
			if live() {
				ex.blocks[idx] = -1
				ex.text.WriteString(s)
			}
		case 2:
			name := g.str()
			emit("content_block_start", fmt.Sprintf(`{"type":"content_block_start","index":%d,"content_block":{"type":"tool_use","id":"toolu_%d","name":%s,"input":{}}}`, idx, n, jstr(name)))
			if live() {
				ex.blocks[idx] = ex.tools
				ex.args[ex.tools] = &strings.Builder{}
				ex.tools++
			}
		case 3:
			s := g.str()
			emit("content_block_start", fmt.Sprintf(`{"type":"content_block_start","index":%d,"content_block":{"type":"thinking","thinking":%s}}`, idx, jstr(s)))
			if live() {
				ex.blocks[idx] = -1
				ex.reasoning.WriteString(s)
			}
		case 4:
			s := g.str()
			emit("content_block_delta", fmt.Sprintf(`{"type":"content_block_delta","index":%d,"delta":{"type":"text_delta","text":%s}}`, idx, jstr(s)))
			if live() {
				ex.text.WriteString(s)
			}
		case 5:
			s := g.str()
			emit("content_block_delta", fmt.Sprintf(`{"type":"content_block_delta","index":%d,"delta":{"type":"input_json_delta","partial_json":%s}}`, idx, jstr(s)))
			if tool, ok := ex.blocks[idx]; live() && ok && tool >= 0 {
				ex.args[tool].WriteString(s)
			}
		case 6:
			s := g.str()
			emit("content_block_delta", fmt.Sprintf(`{"type":"content_block_delta","index":%d,"delta":{"type":"thinking_delta","thinking":%s}}`, idx, jstr(s)))
			if live() {
				ex.reasoning.WriteString(s)
			}
		case 7:
			emit("content_block_stop", fmt.Sprintf(`{"type":"content_block_stop","index":%d}`, idx))
		case 8:
			reason, out := stopReasons[int(g.byte())%len(stopReasons)], int(g.byte())
			sr := "null"
			if reason != "" {
				sr = jstr(reason)
			}
			emit("message_delta", fmt.Sprintf(`{"type":"message_delta","delta":{"stop_reason":%s,"stop_sequence":null},"usage":{"output_tokens":%d}}`, sr, out))
			if live() {
				ex.output = out
				if reason != "" && !ex.finished {
					ex.finished, ex.finish = true, finishReason(reason)
				}
			}
		case 9:
			emit("message_stop", `{"type":"message_stop"}`)
			if live() && ex.finished {
				ex.stopped = true
			}
		case 10:
			switch g.byte() % 4 {
			case 0:
				emit("ping", `{"type":"ping"}`)
			case 1:
				emit("content_block_delta", fmt.Sprintf(`{"type":"content_block_delta","index":%d,"delta":{"type":"signature_delta","signature":"c2ln"}}`, idx))
				if live() {
					ex.signature.WriteString("c2ln")
				}
			case 2:
				emit("some_future_event", `{"type":"some_future_event","x":1}`)
			case 3:
				emit("error", `{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}`)
			}
		}
	}
	return sse.Bytes(), ex
}

// chunk is the part of a chat.completion.chunk the checks read.
type chunk struct {
	Object  string `json:"object"`
	Choices []struct {
		Delta struct {
			Content   *string `json:"content"`
			Reasoning *string `json:"reasoning_content"`
			ToolCalls []struct {
				Index    int `json:"index"`
				Function struct {
					Arguments string `json:"arguments"`
				} `json:"function"`
			} `json:"tool_calls"`
		} `json:"delta"`
		FinishReason *string `json:"finish_reason"`
	} `json:"choices"`
	Usage *chatwire.Usage `json:"usage"`
}

// FuzzTranslateEvents drives the stream translator (through the SSE
// reader, as the adapter does) with generated Anthropic event sequences,
// and the Chat Completions encoder with its events. Always: no panic, no
// loop, every event of a known kind, every chunk a valid
// chat.completion.chunk whose flags agree with its event, at most one
// finish. On a clean end (io.EOF): message_start, a stop reason and
// message_stop were all seen; the text, reasoning, signatures and each tool
// call's arguments, in the events and in the chunks, are exactly the
// concatenation of what the Anthropic events carried; the finish is the
// mapped stop reason; and the last event is the usage with the stream's
// figures.
func FuzzTranslateEvents(f *testing.F) {
	for _, seed := range [][]byte{
		{1, 0, 0, 7, 1, 0, 3, 'a', 'b', 'c', 4, 0, 2, 'h', 'i', 8, 0, 0, 9, 9},
		{1, 0, 0, 30, 2, 1, 3, 'g', 'e', 't', 5, 1, 4, '{', '"', 'a', '"', 5, 1, 3, ':', '1', '}', 8, 0, 3, 40, 9, 0},
		{0, 0, 0, 1, 3, 2, 2, 'h', 'm', 6, 2, 1, 'm', 4, 0, 3, 'y', 'e', 's', 10, 0, 0, 8, 0, 1, 5, 9, 0},
		{1, 4, 0, 3, 'x', 'y', 'z', 0, 0, 1, 9, 0},
		{1, 0, 0, 5, 4, 0, 1, 'a', 10, 0, 3},
		{1, 0, 0, 5, 4, 0, 1, 'a', 9, 0, 8, 0, 0, 3},
	} {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		if len(data) > 4096 {
			return
		}
		body, ex := events(data)
		s := newSSEStream("anth", io.NopCloser(bytes.NewReader(body)), 100, testCreated)
		defer s.Close()
		enc := chat.Ingress{}.NewEncoder(&exchange.Request{Stream: true, WantsUsage: true})
		var text, reasoning, signature, evText, evReasoning strings.Builder
		args, evArgs := map[int]*strings.Builder{}, map[int]*strings.Builder{}
		add := func(m map[int]*strings.Builder, i int, s string) {
			if m[i] == nil {
				m[i] = &strings.Builder{}
			}
			m[i].WriteString(s)
		}
		finishes := 0
		var finish string
		var last chunk
		var lastEv exchange.Event
		for i := 0; ; i++ {
			if i > len(data)+2 {
				t.Fatalf("more events than Anthropic events:\n%s", body)
			}
			ev, err := s.Next()
			if err != nil && err != io.EOF {
				return // an error end: the gateway reports it; nothing more to check
			}
			if err == io.EOF {
				if _, err := s.Next(); err != io.EOF {
					t.Fatalf("Next after io.EOF returned %v", err)
				}
				break
			}
			switch ev.Kind {
			case exchange.Text:
				evText.WriteString(ev.Text)
			case exchange.Reasoning:
				evReasoning.WriteString(ev.Text)
			case exchange.Signature:
				signature.WriteString(ev.Text)
			case exchange.ToolArgs:
				add(evArgs, ev.Index, ev.Text)
			case exchange.Start, exchange.ToolCall, exchange.Finish, exchange.Usage:
			default:
				t.Fatalf("event %d of kind %s: %+v", i, kindName(ev.Kind), ev)
			}
			lastEv = ev
			fr := sseData(t, enc.Event(nil, &ev))
			if fr == nil {
				if ev.Kind != exchange.Signature {
					t.Fatalf("event %d (%s) gave no chunk", i, kindName(ev.Kind))
				}
				continue
			}
			if !json.Valid(fr) {
				t.Fatalf("chunk %d is not JSON: %s", i, fr)
			}
			ci := chatwire.InspectChunk(fr)
			if ci.Content != ev.Commits() || ci.Finish != ev.Finishes() || ci.UsageOnly != ev.IsUsageOnly() {
				t.Fatalf("event %d (%s) content=%v finish=%v usage_only=%v disagrees with its chunk: %s", i, kindName(ev.Kind), ev.Commits(), ev.Finishes(), ev.IsUsageOnly(), fr)
			}
			var c chunk
			if err := json.Unmarshal(fr, &c); err != nil || c.Object != "chat.completion.chunk" {
				t.Fatalf("chunk %d is not a chat.completion.chunk: %s", i, fr)
			}
			for _, ch := range c.Choices {
				if ch.Delta.Content != nil {
					text.WriteString(*ch.Delta.Content)
				}
				if ch.Delta.Reasoning != nil {
					reasoning.WriteString(*ch.Delta.Reasoning)
				}
				for _, tc := range ch.Delta.ToolCalls {
					add(args, tc.Index, tc.Function.Arguments)
				}
				if ch.FinishReason != nil {
					finishes++
					finish = *ch.FinishReason
				}
			}
			last = c
		}
		// A clean end.
		switch {
		case !ex.started || !ex.finished || !ex.stopped:
			t.Fatalf("clean end without message_start, a stop reason and message_stop (started %v finished %v stopped %v):\n%s", ex.started, ex.finished, ex.stopped, body)
		case finishes != 1 || finish != ex.finish:
			t.Fatalf("%d finish frames, finish %q, want one %q:\n%s", finishes, finish, ex.finish, body)
		case text.String() != ex.text.String():
			t.Fatalf("text %q, want %q:\n%s", text.String(), ex.text.String(), body)
		case reasoning.String() != ex.reasoning.String():
			t.Fatalf("reasoning %q, want %q:\n%s", reasoning.String(), ex.reasoning.String(), body)
		case evText.String() != ex.text.String() || evReasoning.String() != ex.reasoning.String():
			t.Fatalf("events' text %q reasoning %q, want %q and %q:\n%s", evText.String(), evReasoning.String(), ex.text.String(), ex.reasoning.String(), body)
		case signature.String() != ex.signature.String():
			t.Fatalf("signatures %q, want %q:\n%s", signature.String(), ex.signature.String(), body)
		case lastEv.Kind != exchange.Usage || lastEv.Usage.Output != ex.output || lastEv.Usage.Input != ex.input || lastEv.Usage.Estimated:
			t.Fatalf("last event is not the usage with %d in / %d out: %+v:\n%s", ex.input, ex.output, lastEv, body)
		case last.Usage == nil || last.Usage.CompletionTokens != ex.output || last.Usage.PromptTokens != ex.input:
			t.Fatalf("last chunk is not the usage chunk with %d in / %d out: %+v:\n%s", ex.input, ex.output, last.Usage, body)
		}
		for _, m := range []map[int]*strings.Builder{args, evArgs} {
			for i := 0; i < ex.tools; i++ {
				got := ""
				if m[i] != nil {
					got = m[i].String()
				}
				if got != ex.args[i].String() {
					t.Fatalf("tool call %d arguments %q, want %q:\n%s", i, got, ex.args[i].String(), body)
				}
			}
			if len(m) > ex.tools {
				t.Fatalf("%d tool calls in the output, %d in the stream:\n%s", len(m), ex.tools, body)
			}
		}
	})
}
