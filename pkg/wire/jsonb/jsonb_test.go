package jsonb

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"

	"github.com/tidwall/gjson"
)

// stdJSONString is encoding/json's encoding of s without HTML escaping.
func stdJSONString(t testing.TB, s string) []byte {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(s); err != nil {
		t.Fatal(err)
	}
	return bytes.TrimSuffix(buf.Bytes(), []byte("\n"))
}

var jsonStringSeeds = []string{
	"", "hello", `quote " backslash \ slash /`, "tab\tnl\ncr\rbs\bff\f", "\x00\x01\x1f\x7f",
	"<script>&amp;</script>", "caf\u00e9 \U0001F600 \u2028\u2029", "bad \xff utf8 \xc3", "\xed\xa0\x80",
	"%x \\x41 \\u0041", "日本語",
}

func TestAppendStringMatchesEncodingJSON(t *testing.T) {
	for _, s := range jsonStringSeeds {
		got := AppendString([]byte("prefix"), s)
		want := append([]byte("prefix"), stdJSONString(t, s)...)
		if !bytes.Equal(got, want) {
			t.Errorf("AppendString(%q) = %s, want %s", s, got, want)
		}
	}
}

func FuzzAppendString(f *testing.F) {
	for _, s := range jsonStringSeeds {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		got := AppendString(nil, s)
		if want := stdJSONString(t, s); !bytes.Equal(got, want) {
			t.Fatalf("AppendString(%q) = %s, encoding/json %s", s, got, want)
		}
		if !json.Valid(got) {
			t.Fatalf("invalid JSON %s", got)
		}
	})
}

func TestCharsCountsTheDecodedText(t *testing.T) {
	for raw, want := range map[string]int{
		`""`: 0, `"abc"`: 3, `"caf\u00e9"`: 4, `"café"`: 4, `"a\nb\"c"`: 5, `"\ud83d\ude00!"`: 2, `"😀"`: 1, `42`: 0, `"\\"`: 1,
	} {
		if got := Chars(raw); got != want {
			t.Errorf("Chars(%s) = %d, want %d", raw, got, want)
		}
	}
}

func TestMembers(t *testing.T) {
	var got []string
	Members(` { "a" : "x\"y" , "b":{"c":[1,"]"]}, "d":null,"e":-1.5e3 ,"f":true}`, func(k, v string) bool {
		got = append(got, k+"="+v)
		return true
	})
	want := []string{`a="x\"y"`, `b={"c":[1,"]"]}`, `d=null`, `e=-1.5e3`, `f=true`}
	if strings.Join(got, " ") != strings.Join(want, " ") {
		t.Errorf("got %q", got)
	}
	n := 0
	obj := `{"type":"text_delta","text":"caf\u00e9 \"ok\""}`
	if a := testing.AllocsPerRun(100, func() { Members(obj, func(_, v string) bool { n += Chars(v); return true }) }); a != 0 {
		t.Errorf("%v allocations", a)
	}
}

func TestDepth(t *testing.T) {
	for in, want := range map[string]int{`1`: 0, `"[{"`: 0, `{}`: 1, `{"a":[1,{"b":"]]"}]}`: 3, `[[[]],[]]`: 3} {
		if got := Depth([]byte(in)); got != want {
			t.Errorf("Depth(%s) = %d, want %d", in, got, want)
		}
	}
}

// TestIntReadsAsGjsonDoes: jsonb.Int gives gjson's Int for every raw value
// (plain digits read without a float parser, the rest through gjson).
func TestIntReadsAsGjsonDoes(t *testing.T) {
	for _, raw := range []string{"", "0", "7", "42", "1117", "-3", "1.5", "1e3", "null", "true", "false", `"12"`,
		"123456789012345678", "1234567890123456789", "99999999999999999999", "{}"} {
		if got, want := Int(raw), gjson.Parse(raw).Int(); got != want {
			t.Errorf("Int(%q) = %d, gjson says %d", raw, got, want)
		}
	}
}
