package responses

import (
	"strings"
	"testing"
)

// BenchmarkDecode10KB is one Responses request body of about 10 KB through
// the ingress's checks and decoding (syntax, depth, keys, the canonical
// Prompt).
func BenchmarkDecode10KB(b *testing.B) {
	body := []byte(`{"model":"m","input":[{"role":"user","content":"` + strings.Repeat("the quick brown fox jumps over the lazy dog ", 232) + `"}]}`)
	b.ReportAllocs()
	b.SetBytes(int64(len(body)))
	for b.Loop() {
		if _, err := decode(body); err != nil {
			b.Fatal(err)
		}
	}
}
