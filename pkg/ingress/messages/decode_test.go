package messages

import (
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/llmgw/llmgw/pkg/exchange"
	"github.com/llmgw/llmgw/pkg/gwerr"
)

const user = `"messages":[{"role":"user","content":"hi"}]`

func decodeBody(t *testing.T, body string, hdr ...string) (*exchange.Request, error) {
	t.Helper()
	r := httptest.NewRequest(http.MethodPost, "/v1/messages?beta=true", strings.NewReader(body))
	for i := 0; i+1 < len(hdr); i += 2 {
		r.Header.Add(hdr[i], hdr[i+1])
	}
	req := &exchange.Request{API: exchange.Messages}
	return req, Ingress{}.Decode(r, []byte(body), req)
}

func TestDecodeRejectsBadRequestsNamingTheField(t *testing.T) {
	cases := map[string]struct{ body, param, want string }{
		"empty":                {``, "", "empty"},
		"not json":             {`{"model":`, "", "not valid JSON"},
		"not object":           {`[1]`, "", "JSON object"},
		"no model":             {`{"max_tokens":5,` + user + `}`, "model", "model: field required"},
		"no max_tokens":        {`{"model":"m",` + user + `}`, "max_tokens", "max_tokens: field required"},
		"max_tokens zero":      {`{"model":"m","max_tokens":0,` + user + `}`, "max_tokens", "at least 1"},
		"max_tokens string":    {`{"model":"m","max_tokens":"5",` + user + `}`, "max_tokens", "wrong type"},
		"no messages":          {`{"model":"m","max_tokens":5,"messages":[]}`, "messages", "non-empty"},
		"duplicate model":      {`{"model":"m","model":"n","max_tokens":5,` + user + `}`, "model", "more than once"},
		"case variant":         {`{"model":"m","MAX_TOKENS":5,"max_tokens":5,` + user + `}`, "MAX_TOKENS", "case-sensitive"},
		"bad role":             {`{"model":"m","max_tokens":5,"messages":[{"role":"developer","content":"x"}]}`, "messages[0].role", "user, assistant or system"},
		"system image":         {`{"model":"m","max_tokens":5,"messages":[{"role":"user","content":"x"},{"role":"system","content":[{"type":"image","source":{"type":"url","url":"https://x/y.png"}}]}]}`, "messages[1].content[0].type", "text blocks only"},
		"content number":       {`{"model":"m","max_tokens":5,"messages":[{"role":"user","content":5}]}`, "messages[0].content", "string or an array"},
		"empty blocks":         {`{"model":"m","max_tokens":5,"messages":[{"role":"user","content":[]}]}`, "messages[0].content", "not be empty"},
		"block without type":   {`{"model":"m","max_tokens":5,"messages":[{"role":"user","content":[{"text":"x"}]}]}`, "messages[0].content[0]", "with a type"},
		"text without text":    {`{"model":"m","max_tokens":5,"messages":[{"role":"user","content":[{"type":"text"}]}]}`, "messages[0].content[0].text", "field required"},
		"tool_use from user":   {`{"model":"m","max_tokens":5,"messages":[{"role":"user","content":[{"type":"tool_use","id":"a","name":"b","input":{}}]}]}`, "messages[0].content[0].type", "only assistant"},
		"image from assistant": {`{"model":"m","max_tokens":5,"messages":[{"role":"user","content":"x"},{"role":"assistant","content":[{"type":"image","source":{"type":"url","url":"https://x/y.png"}}]},{"role":"user","content":"y"}]}`, "messages[1].content[0].type", "only user"},
		"image media type":     {`{"model":"m","max_tokens":5,"messages":[{"role":"user","content":[{"type":"image","source":{"type":"base64","media_type":"image/tiff","data":"AA=="}}]}]}`, "messages[0].content[0].source", "image/png"},
		"tool_result no id":    {`{"model":"m","max_tokens":5,"messages":[{"role":"user","content":[{"type":"tool_result","content":"x"}]}]}`, "messages[0].content[0].tool_use_id", "field required"},
		"tool_use no id":       {`{"model":"m","max_tokens":5,"messages":[{"role":"user","content":"x"},{"role":"assistant","content":[{"type":"tool_use","name":"b","input":{}}]},{"role":"user","content":"y"}]}`, "messages[1].content[0]", "id and a name"},
		"tool_use input array": {`{"model":"m","max_tokens":5,"messages":[{"role":"user","content":"x"},{"role":"assistant","content":[{"type":"tool_use","id":"a","name":"b","input":[1]}]},{"role":"user","content":"y"}]}`, "messages[1].content[0].input", "object"},
		"thinking unsigned":    {`{"model":"m","max_tokens":5,"messages":[{"role":"user","content":"x"},{"role":"assistant","content":[{"type":"thinking","thinking":"hm"}]},{"role":"user","content":"y"}]}`, "messages[1].content[0]", "signature"},
		"system number":        {`{"model":"m","max_tokens":5,"system":5,` + user + `}`, "system", "string or an array"},
		"top system image":     {`{"model":"m","max_tokens":5,"system":[{"type":"image"}],` + user + `}`, "system[0]", "text block"},
		"tool no name":         {`{"model":"m","max_tokens":5,"tools":[{"input_schema":{"type":"object"}}],` + user + `}`, "tools[0].name", "field required"},
		"tool no schema":       {`{"model":"m","max_tokens":5,"tools":[{"name":"t"}],` + user + `}`, "tools[0].input_schema", "JSON Schema"},
		"tool twice":           {`{"model":"m","max_tokens":5,"tools":[{"name":"t","input_schema":{}},{"name":"t","input_schema":{}}],` + user + `}`, "tools[1].name", "unique"},
		"tool_choice type":     {`{"model":"m","max_tokens":5,"tool_choice":{"type":"sometimes"},` + user + `}`, "tool_choice.type", "auto, any, tool or none"},
		"tool_choice unknown":  {`{"model":"m","max_tokens":5,"tools":[{"name":"t","input_schema":{}}],"tool_choice":{"type":"tool","name":"u"},` + user + `}`, "tool_choice.name", "not one of the tools"},
		"tool_choice no tools": {`{"model":"m","max_tokens":5,"tool_choice":{"type":"any"},` + user + `}`, "tool_choice", "needs tools"},
		"temperature":          {`{"model":"m","max_tokens":5,"temperature":1.5,` + user + `}`, "temperature", "between 0 and 1"},
		"top_p":                {`{"model":"m","max_tokens":5,"top_p":-1,` + user + `}`, "top_p", "between 0 and 1"},
		"top_k":                {`{"model":"m","max_tokens":5,"top_k":-1,` + user + `}`, "top_k", "non-negative"},
		"stop_sequences":       {`{"model":"m","max_tokens":5,"stop_sequences":"END",` + user + `}`, "stop_sequences", "wrong type"},
		"empty stop":           {`{"model":"m","max_tokens":5,"stop_sequences":[""],` + user + `}`, "stop_sequences[0]", "not be empty"},
		"metadata":             {`{"model":"m","max_tokens":5,"metadata":{"user_id":5},` + user + `}`, "metadata", "user_id is a string"},
		"thinking type":        {`{"model":"m","max_tokens":5,"thinking":{"type":"maybe"},` + user + `}`, "thinking.type", "enabled, adaptive or disabled"},
		"thinking budget":      {`{"model":"m","max_tokens":5,"thinking":{"type":"enabled"},` + user + `}`, "thinking.budget_tokens", "positive integer"},
		"stream type":          {`{"model":"m","max_tokens":5,"stream":"yes",` + user + `}`, "stream", "wrong type"},
	}
	for name, c := range cases {
		t.Run(name, func(t *testing.T) {
			_, err := decodeBody(t, c.body)
			var ge *gwerr.Error
			if !errors.As(err, &ge) {
				t.Fatalf("err = %v, want a *gwerr.Error", err)
			}
			if ge.Category != gwerr.InvalidRequest || ge.Param != c.param || !strings.Contains(ge.Message, c.want) {
				t.Errorf("got %s param %q message %q; want param %q containing %q", ge.Category, ge.Param, ge.Message, c.param, c.want)
			}
		})
	}
}

func TestDecodeKeepsBodyAndAnthropicHeadersOnly(t *testing.T) {
	body := `{"model":"claude-route","max_tokens":64,"stream":true,` + user + `,"context_management":{"edits":[]}}`
	req, err := decodeBody(t, body, "anthropic-version", "2023-06-01", "anthropic-beta", "claude-code-20250219,interleaved-thinking-2025-05-14",
		"anthropic-beta", "context-management-2025-06-27", "Authorization", "Bearer llmgw_secret", "x-api-key", "llmgw_secret")
	if err != nil {
		t.Fatal(err)
	}
	if string(req.Body) != body || req.Route != "claude-route" || !req.Stream || !req.WantsUsage {
		t.Errorf("req = route %q stream %v usage %v body %s", req.Route, req.Stream, req.WantsUsage, req.Body)
	}
	if got := req.Header.Values("anthropic-beta"); len(got) != 2 || got[0] != "claude-code-20250219,interleaved-thinking-2025-05-14" {
		t.Errorf("anthropic-beta = %q", got)
	}
	if req.Header.Get("anthropic-version") != "2023-06-01" || len(req.Header) != 2 {
		t.Errorf("header = %v: only anthropic-version and anthropic-beta may be kept", req.Header)
	}
	noHeaders, _ := decodeBody(t, body)
	if noHeaders.Header != nil {
		t.Errorf("header = %v without Anthropic headers", noHeaders.Header)
	}
}

func TestCountDecodeNeedsNoMaxTokens(t *testing.T) {
	r := httptest.NewRequest(http.MethodPost, "/v1/messages/count_tokens", nil)
	req := &exchange.Request{}
	if err := (Ingress{}).DecodeCount(r, []byte(`{"model":"m",`+user+`}`), req); err != nil || req.Route != "m" || req.Stream {
		t.Fatalf("count decode: %v %+v", err, req)
	}
}

// canonical returns the retiring Chat form of body as JSON, and the params
// of what that form could not carry (Request.ChatLost).
func canonical(t *testing.T, body string) (string, []string) {
	t.Helper()
	req, err := decodeBody(t, body)
	if err != nil {
		t.Fatal(err)
	}
	out, _ := json.Marshal(req.Chat)
	return string(out), features(req.ChatLost)
}

// features lists fs as "param: what".
func features(fs []exchange.Feature) []string {
	var out []string
	for _, f := range fs {
		out = append(out, f.Param+": "+f.What)
	}
	return out
}

func TestCanonicalForm(t *testing.T) {
	cases := map[string]struct{ body, want string }{
		"text and system string": {`{"model":"m","max_tokens":9,"system":"Be brief.",` + user + `}`,
			`{"model":"m","messages":[{"role":"system","content":"Be brief."},{"role":"user","content":"hi"}],"max_tokens":9}`},
		"system blocks keep their cache control": {`{"model":"m","max_tokens":9,"system":[{"type":"text","text":"A"},{"type":"text","text":"B","cache_control":{"type":"ephemeral"}}],` + user + `}`,
			`{"model":"m","messages":[{"role":"system","content":[{"type":"text","text":"A"},{"type":"text","text":"B","cache_control":{"type":"ephemeral"}}]},{"role":"user","content":"hi"}],"max_tokens":9}`},
		"multi-turn": {`{"model":"m","max_tokens":9,"messages":[{"role":"user","content":"a"},{"role":"assistant","content":[{"type":"text","text":"b"}]},{"role":"user","content":[{"type":"text","text":"c","cache_control":{"type":"ephemeral","ttl":"1h"}}]}]}`,
			`{"model":"m","messages":[{"role":"user","content":"a"},{"role":"assistant","content":[{"type":"text","text":"b"}]},{"role":"user","content":[{"type":"text","text":"c","cache_control":{"type":"ephemeral","ttl":"1h"}}]}],"max_tokens":9}`},
		"images": {`{"model":"m","max_tokens":9,"messages":[{"role":"user","content":[{"type":"image","source":{"type":"base64","media_type":"image/png","data":"iVBO"}},{"type":"image","source":{"type":"url","url":"https://example.com/a.jpg"}},{"type":"text","text":"what?"}]}]}`,
			`{"model":"m","messages":[{"role":"user","content":[{"type":"image_url","image_url":{"url":"data:image/png;base64,iVBO"}},{"type":"image_url","image_url":{"url":"https://example.com/a.jpg"}},{"type":"text","text":"what?"}]}],"max_tokens":9}`},
		"pdf document": {`{"model":"m","max_tokens":9,"messages":[{"role":"user","content":[{"type":"document","source":{"type":"base64","media_type":"application/pdf","data":"JVBE"}}]}]}`,
			`{"model":"m","messages":[{"role":"user","content":[{"type":"file","file":{"file_data":"data:application/pdf;base64,JVBE","filename":"document.pdf"}}]}],"max_tokens":9}`},
		"tool round trip": {`{"model":"m","max_tokens":9,"tools":[{"name":"get_weather","description":"Weather","input_schema":{"type":"object","properties":{"city":{"type":"string"}}},"cache_control":{"type":"ephemeral"}}],"tool_choice":{"type":"tool","name":"get_weather","disable_parallel_tool_use":true},"messages":[{"role":"user","content":"Paris?"},{"role":"assistant","content":[{"type":"text","text":"Checking."},{"type":"tool_use","id":"toolu_1","name":"get_weather","input":{"city": "Paris"}}]},{"role":"user","content":[{"type":"tool_result","tool_use_id":"toolu_1","content":"18C","cache_control":{"type":"ephemeral"}},{"type":"text","text":"and tomorrow?"}]}]}`,
			`{"model":"m","messages":[{"role":"user","content":"Paris?"},{"role":"assistant","content":[{"type":"text","text":"Checking."}],"tool_calls":[{"id":"toolu_1","type":"function","function":{"name":"get_weather","arguments":"{\"city\":\"Paris\"}"}}]},{"role":"tool","content":"18C","tool_call_id":"toolu_1","cache_control":{"type":"ephemeral"}},{"role":"user","content":[{"type":"text","text":"and tomorrow?"}]}],"max_tokens":9,"tools":[{"type":"function","function":{"name":"get_weather","description":"Weather","parameters":{"type":"object","properties":{"city":{"type":"string"}}}},"cache_control":{"type":"ephemeral"}}],"tool_choice":{"type":"function","function":{"name":"get_weather"}},"parallel_tool_calls":false}`},
		"tool result blocks and a tool-only turn": {`{"model":"m","max_tokens":9,"tools":[{"name":"look","input_schema":{"type":"object"}}],"tool_choice":{"type":"any"},"messages":[{"role":"user","content":"x"},{"role":"assistant","content":[{"type":"tool_use","id":"t1","name":"look","input":{}}]},{"role":"user","content":[{"type":"tool_result","tool_use_id":"t1","content":[{"type":"text","text":"seen"},{"type":"image","source":{"type":"base64","media_type":"image/jpeg","data":"/9j/"}}]}]}]}`,
			`{"model":"m","messages":[{"role":"user","content":"x"},{"role":"assistant","content":null,"tool_calls":[{"id":"t1","type":"function","function":{"name":"look","arguments":"{}"}}]},{"role":"tool","content":[{"type":"text","text":"seen"},{"type":"image_url","image_url":{"url":"data:image/jpeg;base64,/9j/"}}],"tool_call_id":"t1"}],"max_tokens":9,"tools":[{"type":"function","function":{"name":"look","parameters":{"type":"object"}}}],"tool_choice":"required"}`},
		"mid-conversation system message": {`{"model":"m","max_tokens":9,"messages":[{"role":"user","content":"a"},{"role":"system","content":[{"type":"text","text":"Env: linux","cache_control":{"type":"ephemeral"}}]},{"role":"user","content":"b"}]}`,
			`{"model":"m","messages":[{"role":"user","content":"a"},{"role":"system","content":[{"type":"text","text":"Env: linux","cache_control":{"type":"ephemeral"}}]},{"role":"user","content":"b"}],"max_tokens":9}`},
		"options": {`{"model":"m","max_tokens":9,"stream":true,"stop_sequences":["END","STOP"],"temperature":0.2,"top_p":0.9,"metadata":{"user_id":"u-42"},"thinking":{"type":"disabled"},"tool_choice":{"type":"none"},"tools":[{"name":"t","input_schema":{"type":"object"}}],` + user + `}`,
			`{"model":"m","messages":[{"role":"user","content":"hi"}],"stream":true,"max_tokens":9,"temperature":0.2,"top_p":0.9,"stop":["END","STOP"],"tools":[{"type":"function","function":{"name":"t","parameters":{"type":"object"}}}],"tool_choice":"none","user":"u-42"}`},
	}
	for name, c := range cases {
		t.Run(name, func(t *testing.T) {
			got, lost := canonical(t, c.body)
			if got != c.want {
				t.Errorf("canonical\n got %s\nwant %s", got, c.want)
			}
			if len(lost) > 0 {
				t.Errorf("untranslated %q, want none", lost)
			}
		})
	}
}

// TestChatFormLossesAreListed: what the retiring Chat form cannot carry is
// listed in ChatLost, so that an adapter still building from it refuses the
// request (provider.RefuseChatLost).
func TestChatFormLossesAreListed(t *testing.T) {
	asst := func(block string) string {
		return `{"model":"m","max_tokens":9,"messages":[{"role":"user","content":"x"},{"role":"assistant","content":[` + block + `]},{"role":"user","content":"y"}]}`
	}
	cases := map[string]struct{ body, want string }{
		"thinking enabled":  {`{"model":"m","max_tokens":9,"thinking":{"type":"enabled","budget_tokens":2048,"display":"summarized"},` + user + `}`, `thinking: extended thinking`},
		"thinking adaptive": {`{"model":"m","max_tokens":9,"thinking":{"type":"adaptive"},` + user + `}`, `thinking: adaptive thinking`},
		"thinking block":    {asst(`{"type":"thinking","thinking":"hm","signature":"sig"},{"type":"text","text":"ok"}`), `messages[1].content[0]: a thinking block`},
		"redacted thinking": {asst(`{"type":"redacted_thinking","data":"EmwKAhgB"},{"type":"text","text":"ok"}`), `messages[1].content[0]: a redacted_thinking block`},
		"top_k":             {`{"model":"m","max_tokens":9,"top_k":40,` + user + `}`, `top_k: top_k`},
		"is_error":          {`{"model":"m","max_tokens":9,"messages":[{"role":"user","content":"x"},{"role":"assistant","content":[{"type":"tool_use","id":"a","name":"b","input":{}}]},{"role":"user","content":[{"type":"tool_result","tool_use_id":"a","content":"boom","is_error":true}]}]}`, `messages[2].content[0].is_error: a tool_result with is_error`},
		"server tool":       {`{"model":"m","max_tokens":9,"tools":[{"type":"web_search_20250305","name":"web_search","max_uses":3}],` + user + `}`, `tools[0]: server tool "web_search_20250305"`},
		"defer_loading":     {`{"model":"m","max_tokens":9,"tools":[{"name":"t","input_schema":{"type":"object"},"defer_loading":true}],` + user + `}`, `tools[0].defer_loading: field "tools[0].defer_loading"`},
		"unknown field":     {`{"model":"m","max_tokens":9,"context_management":{"edits":[{"type":"clear_tool_uses_20250919"}]},` + user + `}`, `context_management: field "context_management"`},
		"prefill":           {`{"model":"m","max_tokens":9,"messages":[{"role":"user","content":"x"},{"role":"assistant","content":"The answer is"}]}`, `messages[1]: a final assistant message (prefill)`},
		"text document":     {`{"model":"m","max_tokens":9,"messages":[{"role":"user","content":[{"type":"document","source":{"type":"text","media_type":"text/plain","data":"hello"}}]}]}`, `messages[0].content[0]: a document`},
		"unknown block":     {`{"model":"m","max_tokens":9,"messages":[{"role":"user","content":[{"type":"search_result","source":"s","title":"t","content":[]}]}]}`, `messages[0].content[0]: content block type "search_result"`},
		"citations":         {`{"model":"m","max_tokens":9,"messages":[{"role":"user","content":[{"type":"text","text":"x","citations":[]}]}]}`, `messages[0].content[0].citations`},
		"metadata extra":    {`{"model":"m","max_tokens":9,"metadata":{"user_id":"u","tag":"x"},` + user + `}`, `metadata.tag`},
	}
	for name, c := range cases {
		t.Run(name, func(t *testing.T) {
			_, lost := canonical(t, c.body)
			if len(lost) == 0 || !strings.HasPrefix(lost[0], c.want) {
				t.Errorf("untranslated = %q, want first %q", lost, c.want)
			}
		})
	}
}
