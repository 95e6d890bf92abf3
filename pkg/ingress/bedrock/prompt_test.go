package bedrock

import (
	"strings"
	"testing"

	"github.com/llmgw/llmgw/pkg/exchange"
	"github.com/llmgw/llmgw/pkg/wire/bedrockwire"
)

func TestDecodeConversePrompt(t *testing.T) {
	body := `{
 "system":[{"text":"Be brief."},{"cachePoint":{"type":"default","ttl":"1h"}}],
 "messages":[
  {"role":"user","content":[{"text":"Look:"},{"image":{"format":"png","source":{"bytes":"iVBORw=="}}},
    {"document":{"format":"pdf","name":"spec","source":{"bytes":"JVBERg=="},"context":"the spec","citations":{"enabled":true}}},
    {"cachePoint":{"type":"default"}}]},
  {"role":"assistant","content":[{"reasoningContent":{"reasoningText":{"text":"hmm","signature":"sig=="}}},
    {"reasoningContent":{"redactedContent":"AQID"}},
    {"toolUse":{"toolUseId":"t1","name":"get","input":{ "a" : 1 }}}]},
  {"role":"user","content":[{"toolResult":{"toolUseId":"t1","status":"error","content":[{"text":"bad"},{"json":{"k":"v"}}]}}]}
 ],
 "inferenceConfig":{"maxTokens":100,"temperature":0.5,"topP":0.9,"stopSequences":["END"]},
 "toolConfig":{"tools":[{"toolSpec":{"name":"get","description":"gets","inputSchema":{"json":{"type":"object"}}}},{"cachePoint":{"type":"default"}}],
   "toolChoice":{"tool":{"name":"get"}}},
 "additionalModelRequestFields":{"thinking":{"type":"enabled","budget_tokens":2048},"top_k":5,"other":true},
 "requestMetadata":{"team":"a"},
 "guardrailConfig":{"guardrailIdentifier":"g","guardrailVersion":"1"}
}`
	p, lost, err := decodeConverse([]byte(body), bedrockwire.ConverseMembers)
	if err != nil {
		t.Fatal(err)
	}
	if len(p.System) != 1 || p.System[0].Text != "Be brief." || p.System[0].Cache == nil || p.System[0].Cache.TTL != "1h" {
		t.Errorf("system %+v", p.System)
	}
	u := p.Messages[0].Content
	if len(u) != 3 || u[1].Type != exchange.BlockImage || u[1].MediaType != "image/png" || string(u[1].Data) != "\x89PNG" ||
		u[2].Type != exchange.BlockDocument || u[2].MediaType != "application/pdf" || u[2].Title != "spec" || !u[2].AskCitations ||
		u[2].Context != "the spec" || u[2].Cache == nil {
		t.Errorf("user blocks %+v", u)
	}
	a := p.Messages[1].Content
	if len(a) != 3 || a[0].Type != exchange.BlockThinking || a[0].Signature != "sig==" || a[1].Type != exchange.BlockRedactedThinking ||
		string(a[1].Data) != "\x01\x02\x03" || a[2].Type != exchange.BlockToolUse || string(a[2].Input) != `{"a":1}` {
		t.Errorf("assistant blocks %+v", a)
	}
	r := p.Messages[2].Content[0]
	if r.Type != exchange.BlockToolResult || !r.IsError || len(r.Content) != 2 || r.Content[1].Text != `{"k":"v"}` {
		t.Errorf("tool result %+v", r)
	}
	s := p.Sampling
	if s.MaxTokens != 100 || *s.Temperature != 0.5 || *s.TopP != 0.9 || s.Stop[0] != "END" || s.TopK == nil || *s.TopK != 5 {
		t.Errorf("sampling %+v", s)
	}
	if len(p.Tools) != 1 || p.Tools[0].Cache == nil || string(p.Tools[0].Schema) != `{"type":"object"}` || p.ToolChoice.Mode != exchange.ToolNamed {
		t.Errorf("tools %+v choice %+v", p.Tools, p.ToolChoice)
	}
	if p.Output.Reasoning.Mode != "enabled" || p.Output.Reasoning.BudgetTokens != 2048 || p.Metadata["team"] != "a" {
		t.Errorf("reasoning %+v metadata %v", p.Output.Reasoning, p.Metadata)
	}
	var keys []string
	for _, f := range lost {
		keys = append(keys, f.Key)
	}
	if got := strings.Join(keys, ","); got != "guardrailConfig,additionalModelRequestFields.other" {
		t.Errorf("untranslated %s", got)
	}
}

func TestDecodeConverseRefusesBadInput(t *testing.T) {
	msg := `"messages":[{"role":"user","content":[{"text":"hi"}]}]`
	for _, c := range []struct{ body, want string }{
		{``, "empty"},
		{`[1]`, "not a JSON object"},
		{`{` + msg + `,"Messages":[]}`, "extraneous key [Messages]"},
		{`{` + msg + `,` + msg + `}`, "appears more than once"},
		{`{"messages":[]}`, "at least one message"},
		{`{"messages":[{"role":"user","content":[{"text":"a","image":{}}]}]}`, "exactly one member"},
		{`{"messages":[{"role":"user","content":[{"cachePoint":{"type":"default"}}]}]}`, "must follow a content block"},
		{`{"messages":[{"role":"user","content":[{"image":{"format":"bmp","source":{"bytes":"AA=="}}}]}]}`, "png, jpeg, gif or webp"},
		{`{` + msg + `,"inferenceConfig":{"temperature":2}}`, "inferenceConfig.temperature"},
		{`{` + msg + `,"inferenceConfig":{"maxTokens":"x"}}`, "wrong type"},
		{`{` + msg + `,"toolConfig":{"tools":[{"toolSpec":{"name":"f","inputSchema":{"json":[]}}}]}}`, "inputSchema"},
		{`{` + msg + `,"additionalModelRequestFields":{"thinking":{"type":"enabled"}}}`, "budget_tokens"},
	} {
		_, _, err := decodeConverse([]byte(c.body), bedrockwire.ConverseMembers)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: err %v, want %q", c.body, err, c.want)
		}
	}
}
