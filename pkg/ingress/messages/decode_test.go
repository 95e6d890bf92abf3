package messages

import (
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/llmgw/llmgw/pkg/exchange"
	"github.com/llmgw/llmgw/pkg/gwerr"
)

const user = `"messages":[{"role":"user","content":"hi"}]`

func decodeBody(t testing.TB, body string, hdr ...string) (*exchange.Request, error) {
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
		"empty":    {``, "", "empty"},
		"not json": {`{"model":`, "", "not valid JSON"},
		// One pass checks the syntax and decodes: a syntax error wins over
		// depth and keys, and the key checks win over a type error.
		"not json, deep":       {`{"model":"m","x":` + strings.Repeat("[", 70) + `}`, "", "not valid JSON"},
		"not json, dup keys":   {`{"model":"m","model":"n",`, "", "not valid JSON"},
		"deep, type error":     {`{"model":5,"max_tokens":5,"x":` + strings.Repeat("[", 70) + strings.Repeat("]", 70) + `,` + user + `}`, "", "nested more than"},
		"dup key, type error":  {`{"model":5,"max_tokens":5,"metadata":{"a":1,"a":2},` + user + `}`, "metadata.a", "more than once"},
		"case key, type error": {`{"model":5,"MAX_TOKENS":5,"max_tokens":5,` + user + `}`, "MAX_TOKENS", "case-sensitive"},
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
