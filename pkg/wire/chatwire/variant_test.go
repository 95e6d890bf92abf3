package chatwire

import (
	"encoding/json"
	"reflect"
	"testing"
)

func f64(v float64) *float64 { return &v }

// TestVariantByteEdits checks each edit kind on a passthrough body: the
// output is the input byte for byte except the edits (odd spacing,
// unknown fields, escapes and key order all kept).
func TestVariantByteEdits(t *testing.T) {
	const tail = ` ,"x_vendor" : {"keep":[1, 2]}, "temperature":0.7 , "max_tokens": 9000}`
	const in = `{ "model":"m", "messages" : [ {"role":"system","content":"Be kind.\u00e9"} ,` +
		`{"role":"user","content":"hi"}, {"role":"developer", "name":"d", "content":[{"type":"text","text":"Dev."}]},` +
		`{"role":"assistant","content":"ok"}]` + tail
	cases := []struct {
		name string
		in   string
		v    Variant
		want string
	}{
		{"override_replaces_every_system_message", in, Variant{System: "Terse."},
			`{ "model":"m", "messages" : [ {"role":"system","content":"Terse."} ,` +
				`{"role":"user","content":"hi"},` +
				`{"role":"assistant","content":"ok"}]` + tail},
		{"override_without_system_inserts_one", `{"model":"m","messages":[{"role":"user","content":"hi"}]}`, Variant{System: "Terse."},
			`{"model":"m","messages":[{"role":"system","content":"Terse."},{"role":"user","content":"hi"}]}`},
		{"prefix_on_string_and_suffix_on_parts", in, Variant{SystemPrefix: "[v2] ", SystemSuffix: " Answer in French."},
			`{ "model":"m", "messages" : [ {"role":"system","content":"[v2] Be kind.é"} ,` +
				`{"role":"user","content":"hi"}, {"role":"developer", "name":"d", "content":[{"type":"text","text":"Dev."},{"type":"text","text":" Answer in French."}]},` +
				`{"role":"assistant","content":"ok"}]` + tail},
		{"prefix_and_suffix_on_one_string", `{"model":"m","messages":[{"role":"system","content":"Mid"},{"role":"user","content":"hi"}]}`,
			Variant{SystemPrefix: "<", SystemSuffix: ">"},
			`{"model":"m","messages":[{"role":"system","content":"<Mid>"},{"role":"user","content":"hi"}]}`},
		{"prefix_on_parts", `{"model":"m","messages":[{"role":"system","content":[ {"type":"text","text":"A"} ]},{"role":"user","content":"hi"}]}`,
			Variant{SystemPrefix: "P"},
			`{"model":"m","messages":[{"role":"system","content":[{"type":"text","text":"P"}, {"type":"text","text":"A"} ]},{"role":"user","content":"hi"}]}`},
		{"prefix_and_suffix_on_empty_parts", `{"model":"m","messages":[{"role":"system","content":[]},{"role":"user","content":"hi"}]}`,
			Variant{SystemPrefix: "P", SystemSuffix: "S"},
			`{"model":"m","messages":[{"role":"system","content":[{"type":"text","text":"P"},{"type":"text","text":"S"}]},{"role":"user","content":"hi"}]}`},
		{"suffix_without_system_inserts_one", `{"model":"m","messages":[{"role":"user","content":"hi"}]}`, Variant{SystemSuffix: "S\n\"q\""},
			`{"model":"m","messages":[{"role":"system","content":"S\n\"q\""},{"role":"user","content":"hi"}]}`},
		{"temperature_and_top_p_replaced_or_added", in, Variant{Temperature: f64(0.2), TopP: f64(0.95)},
			in[:len(in)-len(tail)] + ` ,"x_vendor" : {"keep":[1, 2]}, "temperature":0.2 , "max_tokens": 9000,"top_p":0.95}`},
		{"max_tokens_cap_lowers", in, Variant{MaxTokensCap: 1000},
			in[:len(in)-len(tail)] + ` ,"x_vendor" : {"keep":[1, 2]}, "temperature":0.7 , "max_tokens": 1000}`},
		{"max_tokens_cap_never_raises", `{"model":"m","max_completion_tokens":50,"messages":[{"role":"user","content":"hi"}]}`, Variant{MaxTokensCap: 1000},
			`{"model":"m","max_completion_tokens":50,"messages":[{"role":"user","content":"hi"}]}`},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if _, err := Parse([]byte(c.in), Limits{}); err != nil {
				t.Fatalf("input does not parse: %v", err)
			}
			got, err := Rewrite(nil, []byte(c.in), RewriteOptions{Model: "m", Variant: &c.v})
			if err != nil {
				t.Fatal(err)
			}
			if string(got) != c.want {
				t.Fatalf("edited body\n got %s\nwant %s", got, c.want)
			}
			// The byte path and the canonical path agree.
			edited, err := Parse(got, Limits{})
			if err != nil {
				t.Fatalf("edited body does not parse: %v", err)
			}
			orig, _ := Parse([]byte(c.in), Limits{})
			a, _ := json.Marshal(edited)
			b, _ := json.Marshal(orig.WithVariant(&c.v))
			if !reflect.DeepEqual(canonJSON(t, a), canonJSON(t, b)) {
				t.Errorf("byte edits and WithVariant disagree\n bytes     %s\n canonical %s", a, b)
			}
		})
	}
}

// TestRewriteAddsTheVariantCapWhenAbsent: a request without a limit gets
// the cap through RewriteOptions.MaxTokens, after the variant's edits.
func TestRewriteAddsTheVariantCapWhenAbsent(t *testing.T) {
	got, err := Rewrite(nil, []byte(`{"model":"x","messages":[{"role":"user","content":"hi"}]}`),
		RewriteOptions{Model: "up", MaxTokens: 300, Variant: &Variant{MaxTokensCap: 300, SystemPrefix: "P"}})
	if err != nil {
		t.Fatal(err)
	}
	if want := `{"model":"up","messages":[{"role":"system","content":"P"},{"role":"user","content":"hi"}],"max_tokens":300}`; string(got) != want {
		t.Errorf("got %s\nwant %s", got, want)
	}
}

// TestWithVariantLeavesTheOriginalAlone: the canonical copy is edited, the
// request every other target sees is not.
func TestWithVariantLeavesTheOriginalAlone(t *testing.T) {
	r, err := Parse([]byte(`{"model":"m","temperature":1,"max_tokens":900,"messages":[{"role":"system","content":[{"type":"text","text":"A"}]},{"role":"user","content":"hi"}]}`), Limits{})
	if err != nil {
		t.Fatal(err)
	}
	before, _ := json.Marshal(r)
	c := r.WithVariant(&Variant{SystemSuffix: "S", Temperature: f64(0), MaxTokensCap: 100})
	after, _ := json.Marshal(r)
	if string(before) != string(after) {
		t.Errorf("the original changed:\n%s\n%s", before, after)
	}
	if *c.Temperature != 0 || *c.MaxTokens != 100 || len(c.Messages[0].Content.Parts) != 2 || c.Messages[0].Content.Parts[1].Text != "S" {
		t.Errorf("variant copy = %+v", c)
	}
	if r.WithVariant(nil) != r {
		t.Error("no variant should give the request itself")
	}
}

func canonJSON(t *testing.T, b []byte) any {
	t.Helper()
	var v any
	if err := json.Unmarshal(b, &v); err != nil {
		t.Fatal(err)
	}
	return v
}

// FuzzVariant: for every body Parse accepts, the byte-level edits of each
// kind of variant give a body Parse accepts, whose reading is exactly the
// canonical WithVariant of the original.
func FuzzVariant(f *testing.F) {
	for _, s := range []string{
		`{"model":"m","messages":[{"role":"user","content":"hi"}]}`,
		`{"model":"m","messages":[{"role":"system","content":"a"},{"role":"developer","content":[{"type":"text","text":"b"}]},{"role":"user","content":"hi"}],"temperature":1,"top_p":0.5,"max_tokens":900}`,
		` { "model" : "m" , "messages" : [ { "Role" : "system" , "CONTENT" : [ ] } , {"role":"user","content":"x"} ] , "max_completion_tokens" : 20000 } `,
	} {
		f.Add([]byte(s))
	}
	variants := []Variant{{System: "O"}, {SystemPrefix: "P\u2028"}, {SystemSuffix: "S\""}, {SystemPrefix: "<", SystemSuffix: ">"},
		{Temperature: f64(0), TopP: f64(1e-5), MaxTokensCap: 10}}
	f.Fuzz(func(t *testing.T, body []byte) {
		if len(body) > 1<<16 {
			return
		}
		req, err := Parse(body, Limits{})
		if err != nil {
			return
		}
		for i := range variants {
			out, err := Rewrite(nil, body, RewriteOptions{Model: req.Model, Variant: &variants[i]})
			if err != nil {
				t.Fatalf("variant %d: %v", i, err)
			}
			got, err := Parse(out, Limits{})
			if err != nil {
				t.Fatalf("variant %d made an invalid body: %v\n%s", i, err, out)
			}
			a, _ := json.Marshal(got)
			b, _ := json.Marshal(req.WithVariant(&variants[i]))
			if !reflect.DeepEqual(canonJSON(t, a), canonJSON(t, b)) {
				t.Fatalf("variant %d: bytes and canonical disagree\n in  %s\n out %s\n bytes     %s\n canonical %s", i, body, out, a, b)
			}
		}
	})
}
