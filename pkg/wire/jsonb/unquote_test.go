package jsonb

import (
	"encoding/json"
	"strings"
	"testing"
)

// unquoteCases are JSON values (and non-values) on every path of Unquote:
// the plain fast path, escapes, null, the other value kinds, bad syntax,
// invalid UTF-8, control characters and whitespace around a literal.
var unquoteCases = []string{
	`""`, `"hello"`, `"héllo wörld ✓ 😀"`, `"a\"b"`, `"line\nbreak"`, `"tab\t"`, `"\u00e9\u2028"`,
	`"\ud83d\ude00"`, `"\ud83d"`, `"back\\slash"`, `"/\/"`,
	"\"raw\nnewline\"", "\"raw\x01ctl\"", "\"bad \xff utf8\"", "\"\xc3\"",
	`null`, `nul`, `nullx`, ` "spaced" `, "\t\"tabbed\"",
	`[1,2]`, `["a"]`, `{"a":1}`, `true`, `false`, `0`, `-1`, `12.5e3`,
	`"abcdefghijklmno\"pqrstuvwxyz"`, `"abcdefghijklmnop\\q"`, "\"abcdefghijklmnopq\x1frstu\"", "\"abcdefghijklmno\xffpqrstu\"",
	"\"abcdefghijklmnopqrstuvwx\xe2\x9c\x93\"", `"abcdefghijklmnopqrstuvw"x"`,
	`"unterminated`, `"`, `"a"b"`, `"a" "b"`, `"a",`, ``, ` `, `x`,
}

// TestUnquoteMatchesUnmarshal: on every case, Unquote gives the string and
// the success json.Unmarshal into a string gives.
func TestUnquoteMatchesUnmarshal(t *testing.T) {
	cases := append([]string{`"` + strings.Repeat("the quick brown fox ", 600) + `"`}, unquoteCases...)
	for _, c := range cases {
		var want string
		wantOK := json.Unmarshal([]byte(c), &want) == nil
		got, ok := Unquote([]byte(c))
		if ok != wantOK || got != want {
			t.Errorf("Unquote(%q) = %q, %v; json.Unmarshal gives %q, %v", c, got, ok, want, wantOK)
		}
	}
}

// FuzzUnquote checks the same on any input.
func FuzzUnquote(f *testing.F) {
	for _, c := range unquoteCases {
		f.Add([]byte(c))
	}
	f.Fuzz(func(t *testing.T, raw []byte) {
		var want string
		wantOK := json.Unmarshal(raw, &want) == nil
		got, ok := Unquote(raw)
		if ok != wantOK || got != want {
			t.Errorf("Unquote(%q) = %q, %v; json.Unmarshal gives %q, %v", raw, got, ok, want, wantOK)
		}
	})
}

// TestUnquotePlainLiteralOneAllocation: a literal without escapes costs
// one allocation (the string), where json.Unmarshal's two scans and its
// decoder state cost more. A regression to json.Unmarshal fails here.
func TestUnquotePlainLiteralOneAllocation(t *testing.T) {
	raw := []byte(`"` + strings.Repeat("the quick brown fox ", 500) + `"`)
	var unmarshal float64 = testing.AllocsPerRun(100, func() {
		var s string
		_ = json.Unmarshal(raw, &s)
	})
	got := testing.AllocsPerRun(100, func() { Unquote(raw) })
	if got != 1 || unmarshal <= got {
		t.Errorf("Unquote of a plain literal: %v allocations (json.Unmarshal: %v), want 1", got, unmarshal)
	}
}

// BenchmarkUnquote10KB is a 10 KB literal without escapes, Unquote against
// json.Unmarshal.
func BenchmarkUnquote10KB(b *testing.B) {
	raw := []byte(`"` + strings.Repeat("the quick brown fox jumps over the lazy dog ", 240) + `"`)
	b.Run("Unquote", func(b *testing.B) {
		b.ReportAllocs()
		b.SetBytes(int64(len(raw)))
		for b.Loop() {
			Unquote(raw)
		}
	})
	b.Run("json.Unmarshal", func(b *testing.B) {
		b.ReportAllocs()
		b.SetBytes(int64(len(raw)))
		for b.Loop() {
			var s string
			_ = json.Unmarshal(raw, &s)
		}
	})
}
