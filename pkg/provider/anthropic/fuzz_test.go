package anthropic

import (
	"bytes"
	"encoding/json"
	"io"
	"os"
	"path/filepath"
	"testing"
)

// FuzzStream feeds arbitrary bytes to the stream translator: it must never
// panic or loop, every frame must be valid JSON, and a clean end (io.EOF)
// needs message_stop after a stop_reason.
func FuzzStream(f *testing.F) {
	files, _ := filepath.Glob("testdata/*.sse")
	for _, name := range files {
		b, _ := os.ReadFile(name)
		f.Add(b)
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		s := newSSEStream("anth", io.NopCloser(bytes.NewReader(body)), 0, testCreated)
		finished := false
		for i := 0; ; i++ {
			fr, err := s.Next()
			if err == io.EOF {
				if !finished || !bytes.Contains(body, []byte("message_stop")) {
					t.Fatalf("clean end without a finish and message_stop")
				}
				return
			}
			if err != nil {
				return
			}
			if !json.Valid(fr.Data) {
				t.Fatalf("invalid frame %q", fr.Data)
			}
			finished = finished || fr.Finish
			if i > len(body) {
				t.Fatal("more frames than input bytes")
			}
		}
	})
}
