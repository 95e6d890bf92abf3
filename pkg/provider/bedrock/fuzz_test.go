package bedrock

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"io"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/service/bedrockruntime/types"

	"github.com/llmgw/llmgw/pkg/exchange"
	"github.com/llmgw/llmgw/pkg/wire/chatwire"
)

// fuzzStream is an eventStream holding a fixed sequence of events.
type fuzzStream struct {
	ch  chan types.ConverseStreamOutput
	err error
}

func (f *fuzzStream) Events() <-chan types.ConverseStreamOutput { return f.ch }
func (f *fuzzStream) Close() error                              { return nil }
func (f *fuzzStream) Err() error                                { return f.err }

// fgen reads fuzz bytes.
type fgen struct {
	in []byte
	i  int
}

func (g *fgen) more() bool { return g.i < len(g.in) }

func (g *fgen) byte() byte {
	if g.i >= len(g.in) {
		return 0
	}
	b := g.in[g.i]
	g.i++
	return b
}

func (g *fgen) str() string {
	n := int(g.byte() % 16)
	end := min(g.i+n, len(g.in))
	s := strings.ToValidUTF8(string(g.in[g.i:end]), "?")
	g.i = end
	return s
}

// ptr32 is nil now and then: the SDK leaves absent members nil.
func (g *fgen) ptr32() *int32 {
	b := g.byte()
	if b == 255 {
		return nil
	}
	v := int32(b % 4)
	return &v
}

var fuzzStopReasons = []types.StopReason{types.StopReasonEndTurn, types.StopReasonToolUse, types.StopReasonMaxTokens,
	types.StopReasonStopSequence, types.StopReasonGuardrailIntervened, types.StopReasonContentFiltered,
	types.StopReasonModelContextWindowExceeded, types.StopReasonMalformedModelOutput, types.StopReasonMalformedToolUse, "future_reason"}

// bexpect is what a clean end must show, simulated from the events the
// stream reads (all of them, until both messageStop and metadata).
type bexpect struct {
	stopped, meta bool
	text, reason  strings.Builder
	signature     strings.Builder
	redacted      []string // base64, one per redacted reasoning delta
	tools         []int32  // block index of tool call i
	args          map[int]*strings.Builder
	finish        string
	output, input int
	bad           bool // an event that must end the stream with an error
}

func (e *bexpect) toolIndex(block int32) int {
	for i := len(e.tools) - 1; i >= 0; i-- {
		if e.tools[i] == block {
			return i
		}
	}
	return -1
}

func deref32p(p *int32) int32 {
	if p == nil {
		return 0
	}
	return *p
}

func genEvents(data []byte) ([]types.ConverseStreamOutput, *bexpect) {
	g := &fgen{in: data}
	ex := &bexpect{args: map[int]*strings.Builder{}}
	var evs []types.ConverseStreamOutput
	done := func() bool { return ex.bad || ex.stopped && ex.meta }
	for n := 0; g.more() && n < 200; n++ {
		var ev types.ConverseStreamOutput
		switch g.byte() % 9 {
		case 0:
			ev = &types.ConverseStreamOutputMemberMessageStart{Value: types.MessageStartEvent{Role: types.ConversationRoleAssistant}}
		case 1: // a tool use starts (or another kind of block, or none)
			idx, name, id := g.ptr32(), g.str(), g.str()
			var start types.ContentBlockStart
			switch g.byte() % 3 {
			case 0:
				start = &types.ContentBlockStartMemberToolUse{Value: types.ToolUseBlockStart{ToolUseId: &id, Name: &name}}
				if !done() {
					ex.tools = append(ex.tools, deref32p(idx))
					ex.args[len(ex.tools)-1] = &strings.Builder{}
				}
			case 1:
				start = &types.ContentBlockStartMemberToolResult{}
			}
			ev = &types.ConverseStreamOutputMemberContentBlockStart{Value: types.ContentBlockStartEvent{ContentBlockIndex: idx, Start: start}}
		case 2:
			s := g.str()
			ev = &types.ConverseStreamOutputMemberContentBlockDelta{Value: types.ContentBlockDeltaEvent{ContentBlockIndex: g.ptr32(), Delta: &types.ContentBlockDeltaMemberText{Value: s}}}
			if !done() {
				ex.text.WriteString(s)
			}
		case 3:
			s, idx := g.str(), g.ptr32()
			var in *string
			if g.byte()%8 != 0 {
				in = &s
			} else {
				s = ""
			}
			ev = &types.ConverseStreamOutputMemberContentBlockDelta{Value: types.ContentBlockDeltaEvent{ContentBlockIndex: idx,
				Delta: &types.ContentBlockDeltaMemberToolUse{Value: types.ToolUseBlockDelta{Input: in}}}}
			if !done() {
				if i := ex.toolIndex(deref32p(idx)); i < 0 {
					ex.bad = true
				} else {
					ex.args[i].WriteString(s)
				}
			}
		case 4:
			s := g.str()
			var d types.ReasoningContentBlockDelta
			switch g.byte() % 3 {
			case 0:
				d = &types.ReasoningContentBlockDeltaMemberText{Value: s}
				if !done() {
					ex.reason.WriteString(s)
				}
			case 1:
				d = &types.ReasoningContentBlockDeltaMemberSignature{Value: s}
				if !done() {
					ex.signature.WriteString(s)
				}
			case 2:
				d = &types.ReasoningContentBlockDeltaMemberRedactedContent{Value: []byte(s)}
				if !done() && s != "" {
					ex.redacted = append(ex.redacted, base64.StdEncoding.EncodeToString([]byte(s)))
				}
			}
			ev = &types.ConverseStreamOutputMemberContentBlockDelta{Value: types.ContentBlockDeltaEvent{ContentBlockIndex: g.ptr32(),
				Delta: &types.ContentBlockDeltaMemberReasoningContent{Value: d}}}
		case 5:
			var d types.ContentBlockDelta // nil, or a kind the translator skips
			if g.byte()%2 == 0 {
				d = &types.ContentBlockDeltaMemberCitation{}
			}
			ev = &types.ConverseStreamOutputMemberContentBlockDelta{Value: types.ContentBlockDeltaEvent{ContentBlockIndex: g.ptr32(), Delta: d}}
		case 6:
			ev = &types.ConverseStreamOutputMemberContentBlockStop{Value: types.ContentBlockStopEvent{ContentBlockIndex: g.ptr32()}}
		case 7:
			r := fuzzStopReasons[int(g.byte())%len(fuzzStopReasons)]
			ev = &types.ConverseStreamOutputMemberMessageStop{Value: types.MessageStopEvent{StopReason: r}}
			if !done() && !ex.stopped {
				fr, err := finishReason(r)
				if err != nil {
					ex.bad = true
				} else {
					ex.stopped, ex.finish = true, fr
				}
			}
		case 8:
			var u *types.TokenUsage
			if b := g.byte(); b%4 != 0 {
				in, out := g.ptr32(), g.ptr32()
				u = &types.TokenUsage{InputTokens: in, OutputTokens: out}
			}
			ev = &types.ConverseStreamOutputMemberMetadata{Value: types.ConverseStreamMetadataEvent{Usage: u}}
			if !done() {
				ex.meta = true
				if u != nil {
					ex.input, ex.output = int(deref32p(u.InputTokens)), int(deref32p(u.OutputTokens))
				}
			}
		}
		evs = append(evs, ev)
	}
	if len(data) > 0 && data[len(data)-1]%7 == 0 {
		evs = append(evs, &types.UnknownUnionMember{Tag: "futureEvent", Value: []byte("{}")})
	}
	return evs, ex
}

// FuzzStreamTranslator drives the ConverseStream translator with
// generated event sequences (nil members, unknown members, blocks in any
// order, every stop reason), and the Chat Completions encoder with its
// events. Always: no panic, no loop, every event of a known kind, every
// chunk a valid chat.completion.chunk whose flags agree with its event, at
// most one finish. On a clean end (io.EOF): messageStop and metadata were
// both read; the text, reasoning, signatures, redacted reasoning and each
// tool call's arguments, in the events (and, for those a chunk carries, in
// the chunks), are exactly the concatenation of what the events carried;
// the finish is the mapped stop reason; and the last event is the usage
// with metadata's figures.
func FuzzStreamTranslator(f *testing.F) {
	for _, seed := range [][]byte{
		{0, 2, 3, 'H', 'i', '!', 0, 6, 0, 7, 0, 8, 1, 5, 7},
		{0, 1, 1, 3, 'g', 'e', 't', 2, 'i', 'd', 0, 3, 3, '{', '"', 'a', 1, 1, 3, 2, ':', '1', 1, 7, 1, 8, 1, 2, 3},
		{0, 4, 2, 'h', 'm', 0, 0, 2, 1, 'x', 0, 7, 0, 8, 0},
		{0, 2, 1, 'a', 0, 8, 1, 1, 1, 7, 7},
		{0, 3, 1, 'x', 9, 1, 7, 0},
		{0, 5, 0, 0, 5, 1, 255, 8, 0, 7, 3},
	} {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		if len(data) > 4096 {
			return
		}
		evs, ex := genEvents(data)
		es := &fuzzStream{ch: make(chan types.ConverseStreamOutput, len(evs))}
		for _, e := range evs {
			es.ch <- e
		}
		close(es.ch)
		if len(data)%5 == 0 {
			es.err = errors.New("broken frame")
		}
		s := newStream(context.Background(), "br", es, newTranslator("f", "m", 1700000000), 100)
		enc := newChunkEncoder()
		var text, reasoning, signature, evText, evReasoning strings.Builder
		var redacted []string
		args, evArgs := map[int]*strings.Builder{}, map[int]*strings.Builder{}
		add := func(m map[int]*strings.Builder, i int, s string) {
			if m[i] == nil {
				m[i] = &strings.Builder{}
			}
			m[i].WriteString(s)
		}
		finishes := 0
		var finish string
		var lastUsage *chatwire.Usage
		var lastEv exchange.Event
		for i := 0; ; i++ {
			if i > len(evs)+2 {
				t.Fatalf("more events out than in (%d)", len(evs))
			}
			ev, err := s.Next()
			if err != nil && err != io.EOF {
				return // an error end
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
			case exchange.RedactedReasoning:
				redacted = append(redacted, ev.Text)
			case exchange.ToolArgs:
				add(evArgs, ev.Index, ev.Text)
			case exchange.Start, exchange.ToolCall, exchange.Finish, exchange.Usage:
			default:
				t.Fatalf("event %d of kind %d: %+v", i, ev.Kind, ev)
			}
			lastEv = ev
			fr := chunkData(t, enc.Event(nil, &ev))
			if fr == nil {
				if ev.Kind != exchange.Signature && ev.Kind != exchange.RedactedReasoning {
					t.Fatalf("event %d (%+v) gave no chunk", i, ev)
				}
				continue
			}
			if !json.Valid(fr) {
				t.Fatalf("chunk %d is not JSON: %s", i, fr)
			}
			ci := chatwire.InspectChunk(fr)
			if ci.Content != ev.Commits() || ci.Finish != ev.Finishes() || ci.UsageOnly != ev.IsUsageOnly() {
				t.Fatalf("event %d (kind %d) content=%v finish=%v usage_only=%v disagrees with its chunk: %s", i, ev.Kind, ev.Commits(), ev.Finishes(), ev.IsUsageOnly(), fr)
			}
			var c struct {
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
			lastUsage = c.Usage
		}
		switch {
		case ex.bad || !ex.stopped || !ex.meta:
			t.Fatalf("clean end, but the events (bad %v, stopped %v, metadata %v) should not give one", ex.bad, ex.stopped, ex.meta)
		case finishes != 1 || finish != ex.finish:
			t.Fatalf("%d finish chunks, finish %q, want one %q", finishes, finish, ex.finish)
		case text.String() != ex.text.String() || evText.String() != ex.text.String():
			t.Fatalf("text %q (events %q), want %q", text.String(), evText.String(), ex.text.String())
		case reasoning.String() != ex.reason.String() || evReasoning.String() != ex.reason.String():
			t.Fatalf("reasoning %q (events %q), want %q", reasoning.String(), evReasoning.String(), ex.reason.String())
		case signature.String() != ex.signature.String() || strings.Join(redacted, ",") != strings.Join(ex.redacted, ","):
			t.Fatalf("signatures %q redacted %q, want %q and %q", signature.String(), redacted, ex.signature.String(), ex.redacted)
		case lastEv.Kind != exchange.Usage || lastEv.Usage.Output != ex.output || lastEv.Usage.Input != ex.input:
			t.Fatalf("last event is not the usage with %d in / %d out: %+v", ex.input, ex.output, lastEv)
		case lastUsage == nil || lastUsage.CompletionTokens != ex.output || lastUsage.PromptTokens != ex.input:
			t.Fatalf("last chunk is not the usage chunk with %d in / %d out: %+v", ex.input, ex.output, lastUsage)
		}
		for _, m := range []map[int]*strings.Builder{args, evArgs} {
			for i := range ex.tools {
				got := ""
				if m[i] != nil {
					got = m[i].String()
				}
				if got != ex.args[i].String() {
					t.Fatalf("tool call %d arguments %q, want %q", i, got, ex.args[i].String())
				}
			}
			if len(m) > len(ex.tools) {
				t.Fatalf("%d tool calls in the output, %d started", len(m), len(ex.tools))
			}
		}
	})
}
