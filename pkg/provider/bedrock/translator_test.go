package bedrock

import (
	"context"
	"fmt"
	"io"
	"reflect"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/service/bedrockruntime"
	"github.com/aws/aws-sdk-go-v2/service/bedrockruntime/types"
	"github.com/aws/smithy-go/middleware"

	"github.com/llmgw/llmgw/pkg/exchange"
	"github.com/llmgw/llmgw/pkg/gwerr"
)

func i32(n int32) *int32   { return &n }
func str(s string) *string { return &s }

// TestFinishReason maps every stop reason bedrock documents.
func TestFinishReason(t *testing.T) {
	cases := []struct {
		in   types.StopReason
		want string
	}{
		{types.StopReasonEndTurn, "stop"},
		{types.StopReasonStopSequence, "stop"},
		{types.StopReasonMaxTokens, "length"},
		{types.StopReasonModelContextWindowExceeded, "length"},
		{types.StopReasonToolUse, "tool_calls"},
		{types.StopReasonGuardrailIntervened, "content_filter"},
		{types.StopReasonContentFiltered, "content_filter"},
		{"some_future_reason", "stop"},
	}
	for _, c := range cases {
		t.Run(string(c.in), func(t *testing.T) {
			got, err := finishReason(c.in)
			if err != nil || got != c.want {
				t.Errorf("finishReason(%s) = %q, %v; want %q", c.in, got, err, c.want)
			}
		})
	}
	for _, r := range []types.StopReason{types.StopReasonMalformedModelOutput, types.StopReasonMalformedToolUse} {
		t.Run(string(r), func(t *testing.T) {
			if _, err := finishReason(r); err == nil {
				t.Errorf("finishReason(%s) is a clean finish; want a provider failure", r)
			}
		})
	}
}

// chanStream is an eventStream fed by a test.
type chanStream struct {
	ch     chan types.ConverseStreamOutput
	err    error
	closed bool
}

func (c *chanStream) Events() <-chan types.ConverseStreamOutput { return c.ch }
func (c *chanStream) Close() error                              { c.closed = true; return nil }
func (c *chanStream) Err() error                                { return c.err }

func feed(evs ...types.ConverseStreamOutput) *chanStream {
	c := &chanStream{ch: make(chan types.ConverseStreamOutput, len(evs))}
	for _, e := range evs {
		c.ch <- e
	}
	close(c.ch)
	return c
}

func toolStart(block int32, id, name string) types.ConverseStreamOutput {
	return &types.ConverseStreamOutputMemberContentBlockStart{Value: types.ContentBlockStartEvent{ContentBlockIndex: i32(block),
		Start: &types.ContentBlockStartMemberToolUse{Value: types.ToolUseBlockStart{ToolUseId: str(id), Name: str(name)}}}}
}

func toolDelta(block int32, input string) types.ConverseStreamOutput {
	return &types.ConverseStreamOutputMemberContentBlockDelta{Value: types.ContentBlockDeltaEvent{ContentBlockIndex: i32(block),
		Delta: &types.ContentBlockDeltaMemberToolUse{Value: types.ToolUseBlockDelta{Input: str(input)}}}}
}

func textDelta(block int32, text string) types.ConverseStreamOutput {
	return &types.ConverseStreamOutputMemberContentBlockDelta{Value: types.ContentBlockDeltaEvent{ContentBlockIndex: i32(block),
		Delta: &types.ContentBlockDeltaMemberText{Value: text}}}
}

var (
	msgStart = &types.ConverseStreamOutputMemberMessageStart{Value: types.MessageStartEvent{Role: types.ConversationRoleAssistant}}
	msgStop  = &types.ConverseStreamOutputMemberMessageStop{Value: types.MessageStopEvent{StopReason: types.StopReasonToolUse}}
	metadata = &types.ConverseStreamOutputMemberMetadata{Value: types.ConverseStreamMetadataEvent{
		Usage: &types.TokenUsage{InputTokens: i32(3), OutputTokens: i32(4), TotalTokens: i32(7)}}}
)

// TestToolIndexes: tool call indexes count tool-use blocks 0, 1, ...
// whatever bedrock's block indices are, and interleaved deltas land on the
// right call, in the events and in the chunks a Chat Completions client
// gets.
func TestToolIndexes(t *testing.T) {
	s := newStream(context.Background(), "br", feed(msgStart, textDelta(0, "x"), toolStart(3, "a", "fa"), toolStart(7, "b", "fb"),
		toolDelta(7, `{"b":1}`), toolDelta(3, `{"a":2}`), msgStop, metadata), newTranslator("id", "m", 1), 10)
	enc := newChunkEncoder()
	var got, evs []string
	for {
		ev, err := s.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		switch ev.Kind {
		case exchange.ToolCall:
			evs = append(evs, fmt.Sprintf("call %d %s %s", ev.Index, ev.ID, ev.Name))
		case exchange.ToolArgs:
			evs = append(evs, fmt.Sprintf("args %d %s", ev.Index, ev.Text))
		}
		data := string(chunkData(t, enc.Event(nil, &ev)))
		if i := strings.Index(data, `"tool_calls":`); i >= 0 {
			got = append(got, data[i:])
		}
	}
	wantEvs := []string{"call 0 a fa", "call 1 b fb", `args 1 {"b":1}`, `args 0 {"a":2}`}
	if strings.Join(evs, "\n") != strings.Join(wantEvs, "\n") {
		t.Errorf("tool events\n%s\nwant\n%s", strings.Join(evs, "\n"), strings.Join(wantEvs, "\n"))
	}
	want := []string{
		`"tool_calls":[{"index":0,"id":"a","type":"function","function":{"name":"fa","arguments":""}}]},"finish_reason":null}]}`,
		`"tool_calls":[{"index":1,"id":"b","type":"function","function":{"name":"fb","arguments":""}}]},"finish_reason":null}]}`,
		`"tool_calls":[{"index":1,"function":{"arguments":"{\"b\":1}"}}]},"finish_reason":null}]}`,
		`"tool_calls":[{"index":0,"function":{"arguments":"{\"a\":2}"}}]},"finish_reason":null}]}`,
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("tool chunks\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}

// TestToolDeltaWithoutStart: input for a block that never started is a
// broken stream.
func TestToolDeltaWithoutStart(t *testing.T) {
	es := feed(msgStart, toolDelta(2, "{}"), msgStop, metadata)
	s := newStream(context.Background(), "br", es, newTranslator("id", "m", 1), 10)
	if _, err := s.Next(); err != nil {
		t.Fatal(err)
	}
	_, err := s.Next()
	if ge := gwerr.As(err); ge.Category != gwerr.Interrupted || ge.Provider != "br" {
		t.Fatalf("err = %v, want interrupted from br", err)
	}
	if !es.closed {
		t.Error("the event stream was not closed")
	}
}

// TestUsageChunkLast: the usage comes after the finish, whatever the order
// of messageStop and metadata, and io.EOF only after both.
func TestUsageChunkLast(t *testing.T) {
	s := newStream(context.Background(), "br", feed(msgStart, textDelta(0, "x"), metadata, msgStop), newTranslator("id", "m", 1), 10)
	var kinds []string
	for {
		ev, err := s.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		switch ev.Kind {
		case exchange.Start:
			kinds = append(kinds, "start")
		case exchange.Text:
			kinds = append(kinds, "text")
		case exchange.Finish:
			kinds = append(kinds, "finish "+ev.Finish+" "+ev.Stop)
		case exchange.Usage:
			kinds = append(kinds, fmt.Sprintf("usage %+v", ev.Usage))
		default:
			kinds = append(kinds, fmt.Sprintf("kind %d", ev.Kind))
		}
	}
	if got := strings.Join(kinds, ","); got != "start,text,finish tool_calls tool_use,usage {Input:3 Output:4 CacheRead:0 CacheWrite:0 CacheWrite1h:0 Tier: Reasoning:0 Tools:{WebSearch:0 WebFetch:0 CodeExecution:0 FileSearch:0 GroundedPrompts:0 Containers:0} Estimated:false}" {
		t.Errorf("events %s", got)
	}
	if u := s.Usage(); u != (exchange.TokenUsage{Input: 3, Output: 4}) {
		t.Errorf("usage %+v", u)
	}
}

// TestReasoningEvents: reasoning text, signatures and redacted reasoning
// are events of their own (the redacted bytes in base64); empty deltas
// give none.
func TestReasoningEvents(t *testing.T) {
	rd := func(d types.ReasoningContentBlockDelta) types.ConverseStreamOutput {
		return &types.ConverseStreamOutputMemberContentBlockDelta{Value: types.ContentBlockDeltaEvent{ContentBlockIndex: i32(0),
			Delta: &types.ContentBlockDeltaMemberReasoningContent{Value: d}}}
	}
	s := newStream(context.Background(), "br", feed(msgStart,
		rd(&types.ReasoningContentBlockDeltaMemberText{Value: "think"}), rd(&types.ReasoningContentBlockDeltaMemberText{}),
		rd(&types.ReasoningContentBlockDeltaMemberSignature{Value: "c2ln"}),
		rd(&types.ReasoningContentBlockDeltaMemberRedactedContent{Value: []byte{1, 2, 3}}),
		msgStop, metadata), newTranslator("id", "m", 1), 10)
	var got []string
	for {
		ev, err := s.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		if ev.Kind == exchange.Reasoning || ev.Kind == exchange.Signature || ev.Kind == exchange.RedactedReasoning {
			got = append(got, fmt.Sprintf("%d %s", ev.Kind, ev.Text))
		}
	}
	want := fmt.Sprintf("%d think,%d c2ln,%d AQID", exchange.Reasoning, exchange.Signature, exchange.RedactedReasoning)
	if strings.Join(got, ",") != want {
		t.Errorf("events %q, want %q", strings.Join(got, ","), want)
	}
}

// The benchmarks translate one event, as the stream's hot path does: no
// allocation.

func BenchmarkTranslateTextDelta(b *testing.B) {
	tr := newTranslator("0a1b2c3d-4e5f-6789-abcd-ef0123456789", "anthropic.claude-3-5-haiku-20241022-v1:0", 1750000000)
	ev := textDelta(0, "Hello, this is a typical streamed text delta with \"quotes\".")
	b.ReportAllocs()
	for b.Loop() {
		if out, err := tr.event(ev); err != nil || out.Text == "" {
			b.Fatal(err)
		}
	}
}

func BenchmarkTranslateToolUseDelta(b *testing.B) {
	tr := newTranslator("0a1b2c3d-4e5f-6789-abcd-ef0123456789", "anthropic.claude-3-5-haiku-20241022-v1:0", 1750000000)
	if _, err := tr.event(toolStart(1, "tooluse_abc", "get_weather")); err != nil {
		b.Fatal(err)
	}
	ev := toolDelta(1, `{"city": "Paris", "unit": "cel`)
	b.ReportAllocs()
	for b.Loop() {
		if out, err := tr.event(ev); err != nil || out.Text == "" {
			b.Fatal(err)
		}
	}
}

// TestTextDeltaAllocatesNothing: the hot path stays allocation-free.
func TestTextDeltaAllocatesNothing(t *testing.T) {
	tr := newTranslator("id", "m", 1)
	ev := textDelta(0, "Hello")
	if n := testing.AllocsPerRun(100, func() { tr.event(ev) }); n != 0 {
		t.Errorf("a text delta costs %v allocations, want 0", n)
	}
}

// TestResponseID: bedrock's request id when there is one, else random
// (with no "chatcmpl-" prefix: the Chat Completions encoder adds it).
func TestResponseID(t *testing.T) {
	a, b := responseID(middleware.Metadata{}), responseID(middleware.Metadata{})
	if strings.HasPrefix(a, "chatcmpl-") || len(a) != 24 || a == b {
		t.Errorf("random ids %q, %q", a, b)
	}
}

// TestCompletionEvents: a Converse output becomes events in block order;
// reasoning keeps its signature, redacted reasoning its bytes (base64), a
// tool call without input gets "{}", and Finish keeps bedrock's reason.
func TestCompletionEvents(t *testing.T) {
	out := &bedrockruntime.ConverseOutput{StopReason: types.StopReasonEndTurn,
		Usage: &types.TokenUsage{InputTokens: i32(5), OutputTokens: i32(6), CacheReadInputTokens: i32(2)},
		Output: &types.ConverseOutputMemberMessage{Value: types.Message{Role: types.ConversationRoleAssistant, Content: []types.ContentBlock{
			&types.ContentBlockMemberReasoningContent{Value: &types.ReasoningContentBlockMemberReasoningText{Value: types.ReasoningTextBlock{Text: str("hmm"), Signature: str("sig")}}},
			&types.ContentBlockMemberReasoningContent{Value: &types.ReasoningContentBlockMemberRedactedContent{Value: []byte{1, 2, 3}}},
			&types.ContentBlockMemberText{Value: "hi"},
			&types.ContentBlockMemberToolUse{Value: types.ToolUseBlock{ToolUseId: str("t1"), Name: str("f")}},
		}}}}
	evs, u, err := completion("br", "rid", "m", 7, out, 10)
	if err != nil {
		t.Fatal(err)
	}
	wantU := exchange.TokenUsage{Input: 7, Output: 6, CacheRead: 2}
	want := []exchange.Event{
		{Kind: exchange.Start, ID: "rid", Name: "m", Created: 7},
		{Kind: exchange.Reasoning, Text: "hmm"},
		{Kind: exchange.Signature, Text: "sig"},
		{Kind: exchange.RedactedReasoning, Text: "AQID"},
		{Kind: exchange.Text, Text: "hi"},
		{Kind: exchange.ToolCall, ID: "t1", Name: "f"},
		{Kind: exchange.ToolArgs, Text: "{}"},
		{Kind: exchange.Finish, Finish: exchange.FinishStop, Stop: "end_turn"},
		{Kind: exchange.Usage, Usage: wantU},
	}
	if !reflect.DeepEqual(evs, want) || u != wantU {
		t.Errorf("events\n got %+v\nwant %+v\nusage %+v", evs, want, u)
	}
}

// TestStartComesFirst: output before messageStart is preceded by a Start
// (the encoders need it to name the response), and the late messageStart
// gives no second one.
func TestStartComesFirst(t *testing.T) {
	s := newStream(context.Background(), "br", feed(toolStart(0, "a", "fa"), msgStart, textDelta(1, "x"), msgStop, metadata),
		newTranslator("id", "m", 1), 10)
	var kinds []exchange.Kind
	for {
		ev, err := s.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		if ev.Kind == exchange.Start && (ev.ID != "id" || ev.Name != "m" || ev.Created != 1) {
			t.Errorf("start %+v", ev)
		}
		kinds = append(kinds, ev.Kind)
	}
	want := []exchange.Kind{exchange.Start, exchange.ToolCall, exchange.Text, exchange.Finish, exchange.Usage}
	if !reflect.DeepEqual(kinds, want) {
		t.Errorf("kinds %v, want %v", kinds, want)
	}
}
