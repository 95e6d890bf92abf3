package messages

import (
	"strings"
	"testing"
)

// BenchmarkDecode10KB is one Messages request body of about 10 KB through
// the ingress's checks and decoding (syntax, depth, keys, the canonical
// Prompt).
func BenchmarkDecode10KB(b *testing.B) {
	body := `{"model":"m","max_tokens":1024,"messages":[{"role":"user","content":"` + strings.Repeat("the quick brown fox jumps over the lazy dog ", 232) + `"}]}`
	b.ReportAllocs()
	b.SetBytes(int64(len(body)))
	for b.Loop() {
		if _, err := decodeBody(b, body); err != nil {
			b.Fatal(err)
		}
	}
}
