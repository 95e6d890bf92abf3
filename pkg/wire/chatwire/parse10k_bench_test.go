package chatwire

import (
	"strings"
	"testing"
)

func BenchmarkParse10KB(b *testing.B) {
	body := []byte(`{"model":"gpt-4o-mini","messages":[{"role":"system","content":"You are a helpful assistant."},{"role":"user","content":"` + strings.Repeat("lorem ipsum dolor sit amet ", 380) + `"}]}`)
	b.SetBytes(int64(len(body)))
	b.ReportAllocs()
	for b.Loop() {
		if _, err := Parse(body, Limits{}); err != nil {
			b.Fatal(err)
		}
	}
}
