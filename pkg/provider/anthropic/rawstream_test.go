package anthropic

import (
	"io"
	"testing"

	"github.com/llmgw/llmgw/pkg/exchange"
)

// endless is an SSE body repeating one frame, read without allocating.
type endless struct {
	frame string
	off   int
}

func (r *endless) Read(p []byte) (int, error) {
	n := 0
	for n < len(p) {
		c := copy(p[n:], r.frame[r.off:])
		n += c
		r.off = (r.off + c) % len(r.frame)
	}
	return n, nil
}

// TestPassthroughRelayIsAllocationFree: relaying an Anthropic delta frame
// (read, inspected by messageswire, rebuilt into the reused buffer and
// handed on as a Raw event) allocates nothing, and the frame's characters
// are counted as characters (escapes decoded).
func TestPassthroughRelayIsAllocationFree(t *testing.T) {
	for name, frame := range map[string]string{
		"text":    "event: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"index\":0,\"delta\":{\"type\":\"text_delta\",\"text\":\"caf\\u00e9 \\\"ok\\\"\"}}\n\n",
		"tool":    "event: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"index\":1,\"delta\":{\"type\":\"input_json_delta\",\"partial_json\":\"{\\\"city\\\": \\\"Par\"}}\n\n",
		"no name": "data: {\"type\":\"content_block_delta\",\"index\":0,\"delta\":{\"type\":\"thinking_delta\",\"thinking\":\"hmm\"}}\n\n",
	} {
		body := &endless{frame: frame}
		s := &rawStream{prov: "anth", body: io.NopCloser(body), r: newReader(body), trace: &exchange.Trace{}}
		for i := 0; i < 10; i++ {
			s.Next()
		}
		before := s.chars
		if n := testing.AllocsPerRun(2000, func() {
			if ev, err := s.Next(); err != nil || !ev.Commits() {
				t.Fatalf("%s: event %+v, %v", name, ev, err)
			}
		}); n != 0 {
			t.Errorf("%s: %v allocations per relayed frame", name, n)
		}
		if name == "text" && (s.chars-before)%9 != 0 {
			t.Errorf("text: %d characters over the run, not a multiple of the frame's 9", s.chars-before)
		}
	}
}
