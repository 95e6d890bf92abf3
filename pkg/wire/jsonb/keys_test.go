package jsonb

import (
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/llmgw/llmgw/pkg/gwerr"
)

func TestCheckKeysRefusesCaseVariantsAndDuplicatesAtAnyDepth(t *testing.T) {
	many := func(extra string) string {
		var sb strings.Builder
		sb.WriteString(`{`)
		for i := range 40 {
			fmt.Fprintf(&sb, `"k%d":1,`, i)
		}
		sb.WriteString(extra + `}`)
		return sb.String()
	}
	for _, tc := range []struct{ body, param string }{
		{`{"messages":[{"role":"user","content":"bad phrase","Content":"hello"}]}`, "messages[0].Content"},
		{`{"model":"m","MODEL":"n"}`, "MODEL"},
		{`{"model":"m","model":"n"}`, "model"},
		{`{"a":{"b":[1,{"x":1,"x":2}]}}`, "a.b[1].x"},
		{`{"content":"x","\u0043ontent":"y"}`, "Content"}, // escaped key
		{`{"stream":true,"ſtream":false}`, "ſtream"},      // Unicode folding (long s)
		{`{"kelvin":1,"\u212aelvin":2}`, "\u212aelvin"},   // Kelvin sign folds to k
		{many(`"K7":2`), "K7"},                            // a large object (map path)
		{many(`"k39":2`), "k39"},                          // a large object, exact duplicate
		{`[{"a":"\"}","A":1}]`, "[0].A"},                  // a quote inside a string is not an end
		{`{"system":[{"type":"text","text":"x","TEXT":"y"}]}`, "system[0].TEXT"},
	} {
		err := CheckKeys([]byte(tc.body))
		var ge *gwerr.Error
		if !errors.As(err, &ge) || ge.Category != gwerr.InvalidRequest || ge.Param != tc.param {
			t.Errorf("%s: got %v (param %v), want invalid_request at %q", tc.body, err, ge, tc.param)
		}
	}
}

func TestCheckKeysAcceptsDistinctKeys(t *testing.T) {
	for _, body := range []string{
		`{"content":"a","contents":"b","x":{"content":"c"}}`,
		`[{"a":1},{"a":2}]`, // the same key in sibling objects
		`{"a":"\\","b":"\\\"","c":[true,false,null,1.5e3]}`,
		`{}`, `[]`, `"s"`, `12`,
		`{"a":{"b":1},"b":{"a":1}}`,
	} {
		if err := CheckKeys([]byte(body)); err != nil {
			t.Errorf("%s: %v", body, err)
		}
	}
}

func TestCheckKeysBoundsTheEchoedKey(t *testing.T) {
	long := strings.Repeat("x", 1<<20)
	err := CheckKeys([]byte(`{"` + long + `":1,"` + strings.ToUpper(long) + `":2}`))
	if err == nil || len(err.Error()) > 1000 {
		t.Fatalf("error of %d bytes, want a bounded refusal", len(fmt.Sprint(err)))
	}
}

func BenchmarkCheckKeys(b *testing.B) {
	body := []byte(`{"model":"gpt-4o","stream":true,"messages":[` + strings.Repeat(`{"role":"user","content":[{"type":"text","text":"`+strings.Repeat("hello world ", 50)+`"}]},`, 200) + `{"role":"user","content":"end"}]}`)
	b.SetBytes(int64(len(body)))
	b.ReportAllocs()
	for b.Loop() {
		if err := CheckKeys(body); err != nil {
			b.Fatal(err)
		}
	}
}

func TestHasLoneSurrogate(t *testing.T) {
	for body, want := range map[string]bool{
		`{"a":"\ud800"}`:              true,
		`{"a":"\udc00\ud800"}`:        true,
		`{"a":"\uD83D x"}`:            true,
		`{"a":"\ud83d\u0041"}`:        true,
		`{"a":"x\ud83d"}`:             true,
		`{"a":"\ud83d\ude00"}`:        false, // a pair
		`{"a":"\uD83D\uDE00 \u00e9"}`: false,
		`{"a":"\\ud800"}`:             false, // an escaped backslash, then text
		`{"a":"\\\ud800"}`:            true,
		`{"a":"\ufffd"}`:              false,
		`{"a":"plain"}`:               false,
	} {
		if got := HasLoneSurrogate([]byte(body)); got != want {
			t.Errorf("%s: %v, want %v", body, got, want)
		}
	}
}
