package bedrock

import (
	"bytes"
	"testing"

	"github.com/llmgw/llmgw/pkg/exchange"
	"github.com/llmgw/llmgw/pkg/ingress/chat"
)

// The translator yields canonical events; what an OpenAI client sees is
// what the Chat Completions encoder (pkg/ingress/chat) makes of them.

// newChunkEncoder returns the encoder of a streamed response whose client
// asked for usage.
func newChunkEncoder() interface {
	Event(dst []byte, ev *exchange.Event) []byte
} {
	return chat.Ingress{}.NewEncoder(&exchange.Request{Stream: true, WantsUsage: true})
}

// chunkData strips the SSE framing of the one data frame the encoder wrote;
// nil when it wrote nothing.
func chunkData(t testing.TB, frame []byte) []byte {
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
