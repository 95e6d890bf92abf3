package chatwire

import (
	"bytes"
	"encoding/json"
	"reflect"
	"strings"
	"testing"
	"unicode/utf8"
)

// caseVariantOfKnownField reports whether body has a top-level key that
// encoding/json matches to a ChatRequest field (it folds case the
// bytes.EqualFold way) without being that field's name. Parse must refuse
// every such body (pkg/resilience TestHostileCaseVariantFieldsAreNotReadDifferently).
func caseVariantOfKnownField(body []byte) bool {
	found := false
	members(body, func(m member) bool {
		for f := range knownFields {
			if m.key != f && strings.EqualFold(m.key, f) {
				found = true
			}
		}
		return !found
	})
	return found
}

// sameJSON compares two JSON values by meaning (a re-encoded object may
// differ in spacing and escapes).
func sameJSON(a, b []byte) bool {
	var x, y any
	if json.Unmarshal(a, &x) != nil || json.Unmarshal(b, &y) != nil {
		return false
	}
	return reflect.DeepEqual(x, y)
}

// FuzzParseRewrite: Parse never panics; for every body it accepts, Rewrite
// (as the OpenAI-compatible adapter calls it, and the other way round)
// returns valid JSON with the same top-level members, every value byte for
// byte, except model (now the target's model id) and stream_options (with
// include_usage true when asked, its other members kept).
func FuzzParseRewrite(f *testing.F) {
	for _, s := range []string{
		`{"model":"m","messages":[{"role":"user","content":"hi"}]}`,
		`{"model":"m","stream":true,"messages":[{"role":"user","content":"hi"}]}`,
		`{"messages":[{"role":"user","content":"hi"}],"stream":true,"stream_options":{"include_usage":false,"x":1},"model":"m"}`,
		`{"stream_options":{"include_usage":true},"model":"m","stream":true,"messages":[{"role":"user","content":"hi"}]}`,
		` { "model" : "m" , "messages" : [ { "role" : "user" , "content" : "h\"i" } ] , "vendor_x" : { "deep" : [1,2,{"model":"inner"}] } } `,
		`{"mod\u0065l":"m","messages":[{"role":"system","content":"s"},{"role":"user","content":[{"type":"text","text":"t"},{"type":"image_url","image_url":{"url":"data:image/png;base64,AA=="}}]}]}`,
		`{"model":"m","messages":[{"role":"assistant","content":null,"tool_calls":[{"id":"c1","type":"function","function":{"name":"f","arguments":"{}"}}]},{"role":"tool","tool_call_id":"c1","content":"r"}],"tools":[{"type":"function","function":{"name":"f","parameters":{"type":"object"}}}],"tool_choice":"auto"}`,
		`{"model":"m","messages":[{"role":"user","content":"x"}],"max_tokens":5,"temperature":0.2,"stop":["a","b"],"metadata":{"tag":"t"},"logit_bias":{"1":-1},"seed":7,"n":1}`,
		`{"model":"m","stream":true,"stream_options":null,"messages":[{"role":"user","content":"x"}]}`,
		`{"model":"caf\u00e9 \ud83d\ude00","messages":[{"role":"user","content":"\u2028"}]}`,
		`{"MODEL":"m","messages":[{"role":"user","content":"x"}]}`,
		`{"model":"m","messages":[{"role":"user","content":"x"}],"ſtream":true}`, // folds to "stream": must be refused
	} {
		f.Add([]byte(s), "gpt-4.1")
	}
	f.Add([]byte(`{"model":"m","messages":[{"role":"user","content":"x"}]}`), `we"ird\model/ü`)
	// Go quoting writes \U000e0001 and \x01, which JSON does not allow.
	f.Add([]byte(`{"model":"m","stream":true,"messages":[{"role":"user","content":"x"}]}`), "tag\U000E0001\x01\a<&>")
	f.Fuzz(func(t *testing.T, body []byte, model string) {
		if len(body) > 1<<16 || !utf8.ValidString(model) {
			return // model ids come from the config, which is valid UTF-8
		}
		req, err := Parse(body, Limits{})
		if err != nil {
			return
		}
		if caseVariantOfKnownField(body) {
			t.Fatalf("Parse accepted a case variant of a known field: %s", body)
		}
		var in map[string]json.RawMessage
		if err := json.Unmarshal(body, &in); err != nil {
			t.Fatalf("Parse accepted a body encoding/json rejects: %v", err)
		}
		for _, usage := range []bool{req.Stream, !req.Stream} {
			out, err := Rewrite(nil, body, RewriteOptions{Model: model, IncludeUsage: usage})
			if err != nil {
				t.Fatalf("Rewrite refused a body Parse accepted: %v", err)
			}
			if !json.Valid(out) {
				t.Fatalf("Rewrite(include_usage=%v, model %q) gave invalid JSON:\n in %s\nout %s", usage, model, body, out)
			}
			var got map[string]json.RawMessage
			if err := json.Unmarshal(out, &got); err != nil {
				t.Fatal(err)
			}
			var m string
			if err := json.Unmarshal(got["model"], &m); err != nil || m != model {
				t.Fatalf("model is %s, want %q:\n in %s\nout %s", got["model"], model, body, out)
			}
			for k, v := range in {
				if k == "model" || k == "stream_options" && usage {
					continue
				}
				if !bytes.Equal(got[k], v) {
					t.Fatalf("member %q changed from %s to %s:\n in %s\nout %s", k, v, got[k], body, out)
				}
			}
			want := len(in)
			if _, had := in["stream_options"]; usage && !had {
				want++
			}
			if len(got) != want {
				t.Fatalf("%d members in, %d out (include_usage=%v):\n in %s\nout %s", len(in), len(got), usage, body, out)
			}
			if usage {
				var so map[string]json.RawMessage
				if err := json.Unmarshal(got["stream_options"], &so); err != nil || string(so["include_usage"]) != "true" {
					t.Fatalf("stream_options is %s, want include_usage true:\n in %s\nout %s", got["stream_options"], body, out)
				}
				var old map[string]json.RawMessage
				if json.Unmarshal(in["stream_options"], &old) == nil {
					for k, v := range old {
						if k != "include_usage" && !sameJSON(so[k], v) {
							t.Fatalf("stream_options member %q changed from %s to %s", k, v, so[k])
						}
					}
				}
			}
		}
	})
}
