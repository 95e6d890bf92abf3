package gemini

import (
	"bytes"
	"encoding/json"
	"io"
	"os"
	"path/filepath"
	"testing"

	"github.com/llmgw/llmgw/pkg/exchange"
	"github.com/llmgw/llmgw/pkg/ingress/chat"
)

// FuzzStream feeds arbitrary bytes to the stream translator: it must never
// panic or loop, every event must encode as a valid chat.completion.chunk
// (or nothing), and a clean end (io.EOF) needs a finish followed by the
// final Usage.
func FuzzStream(f *testing.F) {
	files, _ := filepath.Glob("testdata/*.sse")
	for _, name := range files {
		b, _ := os.ReadFile(name)
		f.Add(b)
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		var trace exchange.Trace
		s := newSSEStream("g", io.NopCloser(bytes.NewReader(body)), 0, 1, &trace)
		enc := chat.Ingress{}.NewEncoder(&exchange.Request{Stream: true, WantsUsage: true})
		finished := false
		var last exchange.Kind
		for i := 0; ; i++ {
			ev, err := s.Next()
			if err == io.EOF {
				if !finished || last != exchange.Usage {
					t.Fatalf("clean end without a finish and the usage")
				}
				return
			}
			if err != nil {
				return
			}
			if ev.Kind == 0 {
				t.Fatal("an event without a kind")
			}
			if fr := enc.Event(nil, &ev); len(fr) > 0 && !json.Valid(bytes.TrimSuffix(bytes.TrimPrefix(fr, []byte("data: ")), []byte("\n\n"))) {
				t.Fatalf("invalid chunk %q", fr)
			}
			finished = finished || ev.Kind == exchange.Finish
			last = ev.Kind
			if i > 2*len(body)+4 {
				t.Fatal("more events than input bytes")
			}
		}
	})
}
