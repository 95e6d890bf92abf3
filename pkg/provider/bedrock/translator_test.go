package bedrock

import (
	"context"
	"io"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/service/bedrockruntime/types"
	"github.com/aws/smithy-go/middleware"

	"github.com/llmgw/llmgw/pkg/gwerr"
	"github.com/llmgw/llmgw/pkg/provider"
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

// TestToolIndexes: OpenAI tool indexes count tool-use blocks 0, 1, ...
// whatever bedrock's block indices are, and interleaved deltas land on the
// right call.
func TestToolIndexes(t *testing.T) {
	s := newStream(context.Background(), "br", feed(msgStart, textDelta(0, "x"), toolStart(3, "a", "fa"), toolStart(7, "b", "fb"),
		toolDelta(7, `{"b":1}`), toolDelta(3, `{"a":2}`), msgStop, metadata), newTranslator("id", "m", 1), 10)
	var got []string
	for {
		f, err := s.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		if i := strings.Index(string(f.Data), `"tool_calls":`); i >= 0 {
			got = append(got, string(f.Data[i:]))
		}
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

// TestUsageChunkLast: the usage chunk comes after the finish chunk, whatever
// the order of messageStop and metadata, and io.EOF only after both.
func TestUsageChunkLast(t *testing.T) {
	s := newStream(context.Background(), "br", feed(msgStart, textDelta(0, "x"), metadata, msgStop), newTranslator("id", "m", 1), 10)
	var kinds []string
	for {
		f, err := s.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		switch {
		case f.UsageOnly:
			kinds = append(kinds, "usage")
		case f.Finish:
			kinds = append(kinds, "finish")
		case f.Content:
			kinds = append(kinds, "content")
		default:
			kinds = append(kinds, "role")
		}
	}
	if got := strings.Join(kinds, ","); got != "role,content,finish,usage" {
		t.Errorf("frames %s", got)
	}
	if u := s.Usage(); u != (provider.Usage{Input: 3, Output: 4}) {
		t.Errorf("usage %+v", u)
	}
}

// The benchmarks translate one event into its chunk, as the stream's hot
// path does: one reused buffer, no allocation.

func BenchmarkTranslateTextDelta(b *testing.B) {
	tr := newTranslator("chatcmpl-0a1b2c3d-4e5f-6789-abcd-ef0123456789", "anthropic.claude-3-5-haiku-20241022-v1:0", 1750000000)
	ev := textDelta(0, "Hello, this is a typical streamed text delta with \"quotes\".")
	b.ReportAllocs()
	for b.Loop() {
		if f, err := tr.event(ev); err != nil || len(f.Data) == 0 {
			b.Fatal(err)
		}
	}
}

func BenchmarkTranslateToolUseDelta(b *testing.B) {
	tr := newTranslator("chatcmpl-0a1b2c3d-4e5f-6789-abcd-ef0123456789", "anthropic.claude-3-5-haiku-20241022-v1:0", 1750000000)
	if _, err := tr.event(toolStart(1, "tooluse_abc", "get_weather")); err != nil {
		b.Fatal(err)
	}
	ev := toolDelta(1, `{"city": "Paris", "unit": "cel`)
	b.ReportAllocs()
	for b.Loop() {
		if f, err := tr.event(ev); err != nil || len(f.Data) == 0 {
			b.Fatal(err)
		}
	}
}

// TestResponseID: bedrock's request id when there is one, else random.
func TestResponseID(t *testing.T) {
	a, b := responseID(middleware.Metadata{}), responseID(middleware.Metadata{})
	if !strings.HasPrefix(a, "chatcmpl-") || len(a) != len("chatcmpl-")+24 || a == b {
		t.Errorf("random ids %q, %q", a, b)
	}
}
