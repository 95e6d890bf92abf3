package chatwire

import (
	"testing"

	"github.com/llmgw/llmgw/pkg/wire/jsonb"
)

var messagesAPI = MemberVariant{Prompt: "system", MaxTokens: "max_tokens",
	Block: func(text string) []byte {
		return append(append([]byte(`{"type":"text","text":`), jsonb.AppendString(nil, text)...), '}')
	}}

// TestApplyVariantMembers checks each edit kind on a body whose prompt is
// a top-level member (Anthropic Messages, OpenAI Responses): the output is
// the input byte for byte except the edits.
func TestApplyVariantMembers(t *testing.T) {
	const msgs = `"messages":[{"role":"user","content":"hi"}]`
	const arr = `{"model":"c", "system" : [{"type":"text","text":"A","cache_control":{"type":"ephemeral"}}], ` + msgs + `,"max_tokens":32000,"x":{"k":[1]}}`
	cases := []struct {
		name, in string
		api      MemberVariant
		v        Variant
		want     string
	}{
		{"messages_override_array", arr, messagesAPI, Variant{System: "Terse."},
			`{"model":"c", "system" : "Terse.", ` + msgs + `,"max_tokens":32000,"x":{"k":[1]}}`},
		{"messages_prefix_and_suffix_array", arr, messagesAPI, Variant{SystemPrefix: "P", SystemSuffix: "S"},
			`{"model":"c", "system" : [{"type":"text","text":"P"},{"type":"text","text":"A","cache_control":{"type":"ephemeral"}},{"type":"text","text":"S"}], ` + msgs + `,"max_tokens":32000,"x":{"k":[1]}}`},
		{"messages_suffix_string", `{"model":"c","system":"Be kind.",` + msgs + `,"max_tokens":10}`, messagesAPI, Variant{SystemSuffix: " Be brief."},
			`{"model":"c","system":"Be kind. Be brief.",` + msgs + `,"max_tokens":10}`},
		{"messages_no_system_and_sampling_added", `{"model":"c",` + msgs + `,"max_tokens":10}`, messagesAPI,
			Variant{SystemPrefix: "P", Temperature: f64(0.3), TopP: f64(0.8)},
			`{"model":"c",` + msgs + `,"max_tokens":10,"system":"P","temperature":0.3,"top_p":0.8}`},
		{"messages_cap_and_temperature_replaced", `{"model":"c","temperature": 1,` + msgs + `,"max_tokens": 32000}`, messagesAPI,
			Variant{Temperature: f64(0), MaxTokensCap: 2048},
			`{"model":"c","temperature": 0,` + msgs + `,"max_tokens": 2048}`},
		{"responses_instructions", `{"model":"r","instructions":"Be kind.","input":"hi","max_output_tokens":900}`,
			MemberVariant{Prompt: "instructions", MaxTokens: "max_output_tokens"}, Variant{SystemPrefix: "P ", MaxTokensCap: 100},
			`{"model":"r","instructions":"P Be kind.","input":"hi","max_output_tokens":100}`},
		{"responses_no_instructions", `{"model":"r","input":"hi"}`,
			MemberVariant{Prompt: "instructions", MaxTokens: "max_output_tokens"}, Variant{System: "O"},
			`{"model":"r","input":"hi","instructions":"O"}`},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got, err := ApplyVariantMembers([]byte(c.in), &c.v, c.api)
			if err != nil {
				t.Fatal(err)
			}
			if string(got) != c.want {
				t.Errorf("edited\n got %s\nwant %s", got, c.want)
			}
		})
	}
	if got, _ := ApplyVariantMembers([]byte(arr), nil, messagesAPI); string(got) != arr {
		t.Error("no variant changed the body")
	}
}
