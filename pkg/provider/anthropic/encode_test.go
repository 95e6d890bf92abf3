package anthropic

import (
	"bytes"
	"fmt"
	"testing"

	"github.com/llmgw/llmgw/pkg/exchange"
	"github.com/llmgw/llmgw/pkg/ingress/chat"
	"github.com/llmgw/llmgw/pkg/provider"
)

// The adapter yields canonical events; what an OpenAI client sees is what
// the Chat Completions encoder (pkg/ingress/chat) makes of them. These
// helpers run events through it so the tests can assert on that output.

// chatFrame is one event and the chat.completion.chunk JSON the encoder
// wrote for it (nil when it writes none, e.g. for a Signature).
type chatFrame struct {
	ev   exchange.Event
	data []byte
}

// collect reads a stream to its end: every event (cloned: the strings may
// point into the read buffer) and the error that ended it.
func collect(t *testing.T, s provider.Stream) ([]exchange.Event, error) {
	t.Helper()
	var evs []exchange.Event
	for {
		ev, err := s.Next()
		if err != nil {
			return evs, err
		}
		evs = append(evs, ev.Clone())
		if len(evs) > 1000 {
			t.Fatal("runaway stream")
		}
	}
}

// chatChunks encodes events as a streamed response whose client asked for
// usage.
func chatChunks(t *testing.T, evs []exchange.Event) []chatFrame {
	t.Helper()
	enc := chat.Ingress{}.NewEncoder(&exchange.Request{Stream: true, WantsUsage: true})
	out := make([]chatFrame, 0, len(evs))
	for i := range evs {
		out = append(out, chatFrame{ev: evs[i], data: sseData(t, enc.Event(nil, &evs[i]))})
	}
	return out
}

// chatData returns the chunks the encoder wrote, without the events that
// give none.
func chatData(t *testing.T, evs []exchange.Event) [][]byte {
	t.Helper()
	var out [][]byte
	for _, f := range chatChunks(t, evs) {
		if f.data != nil {
			out = append(out, f.data)
		}
	}
	return out
}

// sseData strips the SSE framing of one data frame; nil for no bytes.
func sseData(t *testing.T, frame []byte) []byte {
	t.Helper()
	if len(frame) == 0 {
		return nil
	}
	d, ok := bytes.CutPrefix(frame, []byte("data: "))
	if d, ok2 := bytes.CutSuffix(d, []byte("\n\n")); ok && ok2 && !bytes.Contains(d, []byte("\n")) {
		return d
	}
	t.Fatalf("the encoder wrote %q, want one data frame", frame)
	return nil
}

// chatCompletion encodes events as a non-streaming response: the
// chat.completion body.
func chatCompletion(t *testing.T, evs []exchange.Event, u exchange.TokenUsage) []byte {
	t.Helper()
	enc := chat.Ingress{}.NewEncoder(&exchange.Request{})
	for i := range evs {
		if b := enc.Event(nil, &evs[i]); len(b) != 0 {
			t.Fatalf("the body encoder wrote %q before End", b)
		}
	}
	return enc.End(nil, u)
}

// kindName names an event kind in test output.
func kindName(k exchange.Kind) string {
	names := map[exchange.Kind]string{exchange.Start: "start", exchange.Text: "text", exchange.Reasoning: "reasoning",
		exchange.Signature: "signature", exchange.RedactedReasoning: "redacted_reasoning", exchange.ToolCall: "tool_call",
		exchange.ToolArgs: "tool_args", exchange.Finish: "finish", exchange.Usage: "usage", exchange.Raw: "raw"}
	if n, ok := names[k]; ok {
		return n
	}
	return fmt.Sprintf("kind(%d)", k)
}
