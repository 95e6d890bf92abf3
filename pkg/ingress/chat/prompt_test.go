package chat

import (
	"bytes"
	"strings"
	"testing"

	"github.com/llmgw/llmgw/pkg/exchange"
	"github.com/llmgw/llmgw/pkg/gwerr"
	"github.com/llmgw/llmgw/pkg/wire/chatwire"
)

func promptOf(t *testing.T, body string) (*exchange.Prompt, []exchange.Feature) {
	t.Helper()
	cr, err := chatwire.Parse([]byte(body), chatwire.Limits{})
	if err != nil {
		t.Fatalf("parse: %v", err)
	}
	p, lost, err := ToPrompt(cr, []byte(body))
	if err != nil {
		t.Fatalf("ToPrompt: %v", err)
	}
	return p, lost
}

// Every part of a chat request lands in its canonical place.
func TestToPromptMapsEveryPart(t *testing.T) {
	p, lost := promptOf(t, `{"model":"m","top_k":7,"max_completion_tokens":300,"temperature":0.5,"stop":"END","n":1,
	 "user":"u1","reasoning_effort":"low","parallel_tool_calls":false,
	 "response_format":{"type":"json_schema","json_schema":{"name":"out","strict":true,"schema":{"type":"object"}}},
	 "tools":[{"type":"function","function":{"name":"get","description":"d","parameters":{"type":"object"}},"cache_control":{"type":"ephemeral"}}],
	 "tool_choice":{"type":"function","function":{"name":"get"}},
	 "messages":[
	  {"role":"system","content":"be brief"},
	  {"role":"developer","content":[{"type":"text","text":"dev","cache_control":{"type":"ephemeral","ttl":"1h"}}]},
	  {"role":"user","content":[{"type":"text","text":"look"},{"type":"image_url","image_url":{"url":"data:image/PNG;base64,aGVsbG8=","detail":"low"}},
	    {"type":"image_url","image_url":{"url":"https://example.com/a.png"}},{"type":"file","file":{"filename":"a.pdf","file_data":"data:application/pdf;base64,JVBERg=="}}]},
	  {"role":"assistant","content":"calling","tool_calls":[{"id":"c1","type":"function","function":{"name":"get","arguments":"{\"x\":1}"}},{"id":"c2","type":"function","function":{"name":"get","arguments":""}}],"cache_control":{"type":"ephemeral"}},
	  {"role":"tool","tool_call_id":"c1","content":"one"},
	  {"role":"tool","tool_call_id":"c2","content":[{"type":"text","text":"two"}]},
	  {"role":"system","content":"mid"},
	  {"role":"user","content":"thanks"}]}`)
	if len(lost) != 0 {
		t.Fatalf("nothing is lost, got %+v", lost)
	}
	if len(p.System) != 2 || p.System[0].Text != "be brief" || p.System[1].Text != "dev" || p.System[1].Cache == nil || p.System[1].Cache.TTL != "1h" {
		t.Errorf("system %+v", p.System)
	}
	if len(p.Messages) != 5 {
		t.Fatalf("messages %d: %+v", len(p.Messages), p.Messages)
	}
	u := p.Messages[0].Content
	if len(u) != 4 || u[1].Type != exchange.BlockImage || u[1].MediaType != "image/png" || !bytes.Equal(u[1].Data, []byte("hello")) || u[1].Detail != "low" ||
		u[2].URL != "https://example.com/a.png" || u[2].Data != nil ||
		u[3].Type != exchange.BlockDocument || u[3].MediaType != "application/pdf" || u[3].FileName != "a.pdf" || !bytes.Equal(u[3].Data, []byte("%PDF")) {
		t.Errorf("user blocks %+v", u)
	}
	a := p.Messages[1]
	if a.Role != exchange.RoleAssistant || len(a.Content) != 3 || a.Content[1].ToolID != "c1" || string(a.Content[1].Input) != `{"x":1}` ||
		string(a.Content[2].Input) != "{}" || a.Content[2].Cache == nil || a.Content[0].Cache != nil {
		t.Errorf("assistant %+v", a)
	}
	tr := p.Messages[2]
	if tr.Role != exchange.RoleUser || len(tr.Content) != 2 || tr.Content[0].Type != exchange.BlockToolResult || tr.Content[0].ToolID != "c1" ||
		exchange.BlocksText(tr.Content[0].Content) != "one" || tr.Content[1].ToolID != "c2" || exchange.BlocksText(tr.Content[1].Content) != "two" {
		t.Errorf("a run of tool messages must be one user turn of results: %+v", tr)
	}
	if p.Messages[3].Role != exchange.RoleSystem || exchange.BlocksText(p.Messages[3].Content) != "mid" || p.Messages[4].Role != exchange.RoleUser {
		t.Errorf("a later system message keeps its place: %+v", p.Messages[3:])
	}
	s := p.Sampling
	if s.MaxTokens != 300 || *s.Temperature != 0.5 || s.TopK == nil || *s.TopK != 7 || len(s.Stop) != 1 || s.Stop[0] != "END" {
		t.Errorf("sampling %+v", s)
	}
	o := p.Output
	if o.Format != "json_schema" || o.SchemaName != "out" || !o.StrictSchema || string(o.Schema) != `{"type":"object"}` || o.Reasoning.Effort != "low" || o.Choices != 1 {
		t.Errorf("output %+v", o)
	}
	if len(p.Tools) != 1 || p.Tools[0].Kind != exchange.ToolFunction || p.Tools[0].Name != "get" || p.Tools[0].Cache == nil ||
		p.ToolChoice != (exchange.ToolChoice{Mode: exchange.ToolNamed, Name: "get", NoParallel: true}) || p.User != "u1" {
		t.Errorf("tools %+v choice %+v user %q", p.Tools, p.ToolChoice, p.User)
	}
}

// What the canonical form cannot carry is named, for the guard that lets
// only an OpenAI-compatible upstream serve it.
func TestToPromptNamesWhatItCannotCarry(t *testing.T) {
	_, lost := promptOf(t, `{"model":"m","logprobs":true,"logit_bias":{"1":2},"modalities":["text","audio"],"audio":{"voice":"x"},"mystery":1,
	 "tools":[{"type":"web_search"}],
	 "messages":[{"role":"user","content":[{"type":"input_audio","input_audio":{"data":"AA==","format":"wav"}},{"type":"file","file":{"file_id":"f1"}}]},
	  {"role":"assistant","tool_calls":[{"id":"c","type":"function","function":{"name":"n","arguments":"not json"}}]},
	  {"role":"function","name":"n","content":"x"}]}`)
	var keys []string
	for _, f := range lost {
		keys = append(keys, f.Key)
	}
	got := strings.Join(keys, ",")
	for _, want := range []string{"logprobs", "logit_bias", "modalities", "audio", "mystery", "messages.content.type", "messages.content.file.file_id", "messages.tool_calls.function.arguments", "messages.role"} {
		if !strings.Contains(","+got+",", ","+want+",") {
			t.Errorf("lost %q, missing %q", got, want)
		}
	}
}

// A malformed data URL is the client's error: a 400 naming the part.
func TestToPromptRefusesMalformedDataURLs(t *testing.T) {
	for _, u := range []string{"data:image/png,abc", "data:;base64,aGk=", "data:image/png;base64,***"} {
		body := `{"model":"m","messages":[{"role":"user","content":[{"type":"image_url","image_url":{"url":"` + u + `"}}]}]}`
		cr, err := chatwire.Parse([]byte(body), chatwire.Limits{})
		if err != nil {
			t.Fatal(err)
		}
		_, _, err = ToPrompt(cr, []byte(body))
		ge := gwerr.As(err)
		if err == nil || ge.Category != gwerr.InvalidRequest || ge.Param != "messages[0].content[0].image_url.url" {
			t.Errorf("%s: err %+v", u, ge)
		}
	}
}
