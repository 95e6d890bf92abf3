package jsonb

import (
	"bytes"
	"encoding/json"
	"testing"
)

var elementsCases = []string{
	`[]`, ` [ ] `, `[1]`, `[1,2,3]`, ` [ "a" , {"b":[1,{"c":"]"}]} ,null,true,false,-1.5e3 ] `,
	`["\"]", "a\\", "\u005d"]`, `[[],[[]],{}]`, "[\n\t{\"role\":\"user\",\"content\":\"hi\"},\r\n{\"type\":\"function_call\"}\n]",
}

// elementsMatch reports whether Elements(raw) yields exactly what
// json.Unmarshal into []json.RawMessage gives.
func elementsMatch(t *testing.T, raw []byte) {
	t.Helper()
	var want []json.RawMessage
	if err := json.Unmarshal(raw, &want); err != nil {
		t.Fatalf("case %q: %v", raw, err)
	}
	var got [][]byte
	for el := range Elements(raw) {
		got = append(got, el)
	}
	if len(got) != len(want) {
		t.Fatalf("Elements(%q) yields %d elements, json.Unmarshal %d: %q", raw, len(got), len(want), got)
	}
	for i := range got {
		if !bytes.Equal(got[i], want[i]) {
			t.Errorf("Elements(%q)[%d] = %q, json.Unmarshal gives %q", raw, i, got[i], want[i])
		}
	}
}

// TestElementsMatchUnmarshal: on valid arrays, Elements yields the
// elements json.Unmarshal into []json.RawMessage gives; on anything else
// (not an array) it yields nothing; a caller stopping early stops it.
func TestElementsMatchUnmarshal(t *testing.T) {
	for _, c := range elementsCases {
		elementsMatch(t, []byte(c))
	}
	for _, c := range []string{``, `{"a":[1]}`, `"[1]"`, `null`, `1`} {
		for el := range Elements([]byte(c)) {
			t.Errorf("Elements(%q) yielded %q, want nothing", c, el)
		}
	}
	n := 0
	for range Elements([]byte(`[1,2,3]`)) {
		n++
		break
	}
	if n != 1 {
		t.Errorf("break after the first element: %d iterations", n)
	}
}

// FuzzElements checks the same on any valid JSON array.
func FuzzElements(f *testing.F) {
	for _, c := range elementsCases {
		f.Add([]byte(c))
	}
	f.Fuzz(func(t *testing.T, raw []byte) {
		var v []json.RawMessage
		if json.Unmarshal(raw, &v) != nil || !bytes.HasPrefix(bytes.TrimLeft(raw, " \t\r\n"), []byte("[")) {
			return
		}
		elementsMatch(t, raw)
	})
}
