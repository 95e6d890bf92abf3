package chatwire

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/llmgw/llmgw/pkg/gwerr"
)

func TestParseRejectsBadInputNamingTheField(t *testing.T) {
	deep := strings.Repeat("[", 100) + strings.Repeat("]", 100)
	cases := map[string]struct{ body, param, want string }{
		"empty":             {``, "", "empty"},
		"not json":          {`{"model":`, "", "not valid JSON"},
		"not object":        {`[1,2]`, "", "must be a JSON object"},
		"invalid utf8":      {"{\"model\":\"m\xff\",\"messages\":[]}", "", "UTF-8"},
		"deep":              {`{"model":"m","messages":[{"role":"user","content":"x"}],"x":` + deep + `}`, "", "nested"},
		"no model":          {`{"messages":[{"role":"user","content":"x"}]}`, "model", "model is required"},
		"no messages":       {`{"model":"m","messages":[]}`, "messages", "non-empty"},
		"model type":        {`{"model":5,"messages":[{"role":"user","content":"x"}]}`, "model", "wrong type"},
		"messages type":     {`{"model":"m","messages":"hi"}`, "messages", "wrong type"},
		"stream type":       {`{"model":"m","stream":"yes","messages":[{"role":"user","content":"x"}]}`, "stream", "wrong type"},
		"max_tokens neg":    {`{"model":"m","max_tokens":-5,"messages":[{"role":"user","content":"x"}]}`, "max_tokens", "between 1"},
		"max_tokens absurd": {`{"model":"m","max_tokens":99999999999,"messages":[{"role":"user","content":"x"}]}`, "max_tokens", ""},
		"max_tokens float":  {`{"model":"m","max_tokens":1.5,"messages":[{"role":"user","content":"x"}]}`, "max_tokens", "wrong type"},
		"temperature":       {`{"model":"m","temperature":7,"messages":[{"role":"user","content":"x"}]}`, "temperature", "between"},
		"unknown role":      {`{"model":"m","messages":[{"role":"wizard","content":"x"}]}`, "messages[0].role", "wizard"},
		"content type":      {`{"model":"m","messages":[{"role":"user","content":42}]}`, "content", ""},
		"part type":         {`{"model":"m","messages":[{"role":"user","content":[{"type":"hologram"}]}]}`, "messages[0].content[0].type", "hologram"},
		"tool no id":        {`{"model":"m","messages":[{"role":"tool","content":"x"}]}`, "messages[0].tool_call_id", ""},
		"duplicate model":   {`{"model":"m","model":"other","messages":[{"role":"user","content":"x"}]}`, "model", "more than once"},
		"case variant":      {`{"model":"m","MODEL":"other","messages":[{"role":"user","content":"x"}]}`, "MODEL", "case-sensitive"},
		"api_base":          {`{"model":"m","api_base":"http://evil","messages":[{"role":"user","content":"x"}]}`, "api_base", "upstream addresses"},
		"base_url":          {`{"model":"m","base_url":"http://evil","messages":[{"role":"user","content":"x"}]}`, "base_url", ""},
		"tool_choice":       {`{"model":"m","tool_choice":"sometimes","messages":[{"role":"user","content":"x"}]}`, "tool_choice", ""},
		"tool_choice named": {`{"model":"m","tool_choice":{"type":"function","function":{"name":"nope"}},"messages":[{"role":"user","content":"x"}]}`, "tool_choice", "not in tools"},
		"stream_options":    {`{"model":"m","stream_options":{"include_usage":true},"messages":[{"role":"user","content":"x"}]}`, "stream_options", ""},
		"n":                 {`{"model":"m","n":0,"messages":[{"role":"user","content":"x"}]}`, "n", ""},
		"stop list":         {`{"model":"m","stop":["a","b","c","d","e"],"messages":[{"role":"user","content":"x"}]}`, "stop", ""},
		"response_format":   {`{"model":"m","response_format":{"type":"yaml"},"messages":[{"role":"user","content":"x"}]}`, "response_format.type", ""},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			_, err := Parse([]byte(tc.body), Limits{})
			var ge *gwerr.Error
			if !errors.As(err, &ge) || ge.Category != gwerr.InvalidRequest {
				t.Fatalf("err = %v, want invalid_request", err)
			}
			if tc.param != "" && !strings.Contains(ge.Param, tc.param) {
				t.Errorf("param = %q, want %q (msg %q)", ge.Param, tc.param, ge.Message)
			}
			if !strings.Contains(ge.Message, tc.want) {
				t.Errorf("message = %q, want %q", ge.Message, tc.want)
			}
		})
	}
}

func TestParseAcceptsTheFullOpenAIShape(t *testing.T) {
	body := `{"model":"m","stream":true,"stream_options":{"include_usage":true},"n":1,"max_completion_tokens":100,
	"temperature":0.5,"top_p":0.9,"stop":"END","user":"u1","seed":7,"parallel_tool_calls":false,
	"response_format":{"type":"json_schema","json_schema":{"name":"x","schema":{"type":"object"}}},
	"tools":[{"type":"function","function":{"name":"f","parameters":{"type":"object"}}}],
	"tool_choice":{"type":"function","function":{"name":"f"}},
	"messages":[{"role":"developer","content":"be nice"},
	  {"role":"user","content":[{"type":"text","text":"look"},{"type":"image_url","image_url":{"url":"data:image/png;base64,AAAA"}}]},
	  {"role":"assistant","content":null,"tool_calls":[{"id":"c1","type":"function","function":{"name":"f","arguments":"{}"}}]},
	  {"role":"tool","tool_call_id":"c1","content":"42"}],
	"vendor_field":{"x":1}}`
	r, err := Parse([]byte(body), Limits{})
	if err != nil {
		t.Fatal(err)
	}
	if !r.WantsUsage() || r.MaxOutputTokens() != 100 || r.ToolChoice.Function != "f" || len(r.Stop) != 1 || !r.Messages[1].Content.IsParts {
		t.Errorf("parsed = %+v", r)
	}
}

func TestRewriteKeepsEveryOtherByte(t *testing.T) {
	cases := []struct{ in, want string }{
		{`{"model":"m","messages":[]}`, `{"model":"up","messages":[]}`},
		{` { "messages" : [] , "model" : "m" , "x":"\"model\":\"m\"" } `, ` { "messages" : [] , "model" : "up" , "x":"\"model\":\"m\"" } `},
		{`{"nested":{"model":"keep"},"model":"m"}`, `{"nested":{"model":"keep"},"model":"up"}`},
		{`{"mod\u0065l":"m","messages":[]}`, `{"mod\u0065l":"up","messages":[]}`},
	}
	for _, tc := range cases {
		got, err := Rewrite(nil, []byte(tc.in), RewriteOptions{Model: "up"})
		if err != nil || string(got) != tc.want {
			t.Errorf("Rewrite(%s) = %s, %v; want %s", tc.in, got, err, tc.want)
		}
	}
}

func TestRewriteAddsOrForcesIncludeUsage(t *testing.T) {
	got, _ := Rewrite(nil, []byte(`{"model":"m","stream":true}`), RewriteOptions{Model: "up", IncludeUsage: true})
	if string(got) != `{"model":"up","stream":true,"stream_options":{"include_usage":true}}` {
		t.Errorf("added: %s", got)
	}
	got, _ = Rewrite(nil, []byte(`{"stream_options":{"include_usage":false,"include_obfuscation":false},"model":"m","stream":true}`), RewriteOptions{Model: "up", IncludeUsage: true})
	var m map[string]map[string]bool
	json.Unmarshal(got, &m)
	if !m["stream_options"]["include_usage"] || m["stream_options"]["include_obfuscation"] {
		t.Errorf("forced: %s", got)
	}
	if !strings.HasSuffix(string(got), `"model":"up","stream":true}`) {
		t.Errorf("order changed: %s", got)
	}
}

func TestInspectChunk(t *testing.T) {
	cases := map[string]struct {
		data string
		want ChunkInfo
	}{
		"role only": {`{"choices":[{"index":0,"delta":{"role":"assistant","content":""},"finish_reason":null}]}`, ChunkInfo{}},
		"content":   {`{"choices":[{"index":0,"delta":{"content":"héllo"},"finish_reason":null}]}`, ChunkInfo{Content: true, Chars: 5}},
		"tool":      {`{"choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"function":{"arguments":"{}"}}]}}]}`, ChunkInfo{Content: true, ToolCalls: true, Chars: 2}},
		"escaped":   {`{"choices":[{"index":0,"delta":{"content":"a\nb\u00e9"}}]}`, ChunkInfo{Content: true, Chars: 4}},
		"refusal":   {`{"choices":[{"index":0,"delta":{"refusal":"no"}}]}`, ChunkInfo{Content: true, Chars: 2}},
		"finish":    {`{"choices":[{"index":0,"delta":{},"finish_reason":"stop"}]}`, ChunkInfo{Finish: true, FinishReason: "stop"}},
		"usage":     {`{"choices":[],"usage":{"prompt_tokens":3,"completion_tokens":4,"total_tokens":7,"prompt_tokens_details":{"cached_tokens":1}}}`, ChunkInfo{HasUsage: true, UsageOnly: true, Usage: Usage{3, 4, 7, &PromptTokensDetails{CachedTokens: 1}}}},
		"error":     {`{"error":{"message":"x","type":"overloaded_error"}}`, ChunkInfo{Error: true, ErrorType: "overloaded_error"}},
	}
	for name, tc := range cases {
		got := InspectChunk([]byte(tc.data))
		gj, _ := json.Marshal(got)
		wj, _ := json.Marshal(tc.want)
		if string(gj) != string(wj) {
			t.Errorf("%s: got %s want %s", name, gj, wj)
		}
	}
}

var benchChunk = []byte(`{"id":"chatcmpl-B9MBs8CjcvOU2jLn4n570S5qMJKcT","object":"chat.completion.chunk","created":1741569952,"model":"gpt-4.1-2025-04-14","service_tier":"default","system_fingerprint":"fp_c7ca0ebaca","choices":[{"index":0,"delta":{"content":" world"},"logprobs":null,"finish_reason":null}],"usage":null}`)

func BenchmarkInspectChunk(b *testing.B) {
	b.ReportAllocs()
	for b.Loop() {
		InspectChunk(benchChunk)
	}
}

func BenchmarkParseAndRewrite(b *testing.B) {
	body := []byte(`{"model":"gpt-4o-mini","stream":true,"temperature":0.2,"messages":[{"role":"system","content":"You are a helpful assistant."},{"role":"user","content":"Write a haiku about gateways and the sea, please, in English."}]}`)
	dst := make([]byte, 0, 1024)
	b.ReportAllocs()
	b.SetBytes(int64(len(body)))
	for b.Loop() {
		if _, err := Parse(body, Limits{}); err != nil {
			b.Fatal(err)
		}
		dst, _ = Rewrite(dst, body, RewriteOptions{Model: "gpt-4o-mini-2024-07-18", IncludeUsage: true})
	}
}

func BenchmarkRewriteOnly(b *testing.B) {
	body := []byte(`{"model":"gpt-4o-mini","stream":true,"temperature":0.2,"messages":[{"role":"system","content":"You are a helpful assistant."},{"role":"user","content":"Write a haiku about gateways and the sea, please, in English."}]}`)
	dst := make([]byte, 0, 1024)
	b.ReportAllocs()
	for b.Loop() {
		dst, _ = Rewrite(dst, body, RewriteOptions{Model: "gpt-4o-mini-2024-07-18", IncludeUsage: true})
	}
}

func TestRewriteAddsAMaxTokensCapOnlyWhenTheClientGaveNone(t *testing.T) {
	got, _ := Rewrite(nil, []byte(`{"model":"m","messages":[]}`), RewriteOptions{Model: "up", MaxTokens: 77})
	if string(got) != `{"model":"up","messages":[],"max_tokens":77}` {
		t.Errorf("added: %s", got)
	}
	got, _ = Rewrite(nil, []byte(`{"model":"m","stream":true}`), RewriteOptions{Model: "up", IncludeUsage: true, MaxTokens: 5, MaxTokensField: "max_completion_tokens"})
	if string(got) != `{"model":"up","stream":true,"stream_options":{"include_usage":true},"max_completion_tokens":5}` {
		t.Errorf("with usage: %s", got)
	}
	for _, in := range []string{`{"model":"m","max_tokens":9}`, `{"model":"m","max_completion_tokens":9}`} {
		got, _ = Rewrite(nil, []byte(in), RewriteOptions{Model: "m", MaxTokens: 77})
		if string(got) != in {
			t.Errorf("the client's own limit was changed: %s -> %s", in, got)
		}
	}
}

func TestPlainJSONStringAgreesWithUnmarshal(t *testing.T) {
	for _, lit := range []string{`""`, `"abc"`, `"é ü 😀"`, `"a\nb"`, `"a\"b"`, `"\u00e9"`, "\"\xff\"", `"<&>"`, `"x`} {
		text, ok := plainJSONString([]byte(lit))
		var want string
		err := json.Unmarshal([]byte(lit), &want)
		if ok && (err != nil || text != want) {
			t.Errorf("%q: plain %q, json.Unmarshal %q (%v)", lit, text, want, err)
		}
	}
	if _, ok := plainJSONString([]byte(`"plain text"`)); !ok {
		t.Error("a plain literal must take the fast path")
	}
}
