package anthropic

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"reflect"
	"strings"
	"testing"

	"github.com/llmgw/llmgw/pkg/config"
	"github.com/llmgw/llmgw/pkg/exchange"
	"github.com/llmgw/llmgw/pkg/gwerr"

	asdk "github.com/anthropics/anthropic-sdk-go/v2"
	aoption "github.com/anthropics/anthropic-sdk-go/v2/option"
)

// TestTranslatedRequestMatchesAnthropicSDKTypes cross-checks the wire
// shapes: a translated request using every block kind decodes into the
// official Anthropic Go SDK's MessageNewParams with the expected typed
// values, and the SDK re-encodes it to the same JSON (so the translator
// sends nothing the API's schema does not know). The SDK (v2) models API
// version 2026-10-21, which has no sampling parameters, so the request
// here has none; their 2023-06-01 encoding is covered by TestTranslateRequest.
func TestTranslatedRequestMatchesAnthropicSDKTypes(t *testing.T) {
	body, err := translate(t, `{"model":"m","stream":true,"max_tokens":99,"stop":["END"],"user":"u-1",
		"messages":[
			{"role":"system","content":"sys","cache_control":{"type":"ephemeral"}},
			{"role":"user","content":[{"type":"text","text":"look"},{"type":"image_url","image_url":{"url":"data:image/jpeg;base64,/9j/4AAQ"}},
				{"type":"image_url","image_url":{"url":"https://example.com/a.png"}},{"type":"file","file":{"file_data":"data:application/pdf;base64,JVBERi0x"}}]},
			{"role":"assistant","content":"calling","tool_calls":[{"id":"toolu_1","type":"function","function":{"name":"f","arguments":"{\"a\":[1,2]}"}}]},
			{"role":"tool","tool_call_id":"toolu_1","content":"done","cache_control":{"type":"ephemeral"}}],
		"tools":[{"type":"function","function":{"name":"f","description":"does f","parameters":{"type":"object","properties":{"a":{"type":"array"}}}},"cache_control":{"type":"ephemeral"}}],
		"tool_choice":{"type":"function","function":{"name":"f"}},"parallel_tool_calls":false}`)
	if err != nil {
		t.Fatal(err)
	}
	var p asdk.MessageNewParams
	if err := json.Unmarshal(body, &p); err != nil {
		t.Fatalf("the SDK cannot decode the translated request: %v\n%s", err, body)
	}
	if p.Model != "claude-x" || p.MaxTokens != 99 || !reflect.DeepEqual(p.StopSequences, []string{"END"}) || p.Metadata.UserID.Value != "u-1" {
		t.Errorf("scalars decoded as %+v", p)
	}
	if len(p.System) != 1 || p.System[0].Text != "sys" || p.System[0].CacheControl.Type != "ephemeral" {
		t.Errorf("system = %+v", p.System)
	}
	if len(p.Messages) != 3 {
		t.Fatalf("messages = %d", len(p.Messages))
	}
	if p.Messages[0].OfUser == nil || p.Messages[1].OfAssistant == nil || p.Messages[2].OfUser == nil {
		t.Fatalf("roles decoded as %+v", p.Messages)
	}
	user := p.Messages[0].OfUser.Content
	if len(user) != 4 || user[1].OfImage == nil || user[1].OfImage.Source.OfBase64 == nil || user[1].OfImage.Source.OfBase64.MediaType != "image/jpeg" ||
		user[2].OfImage == nil || user[2].OfImage.Source.OfURL == nil || user[2].OfImage.Source.OfURL.URL != "https://example.com/a.png" ||
		user[3].OfDocument == nil || user[3].OfDocument.Source.OfBase64 == nil {
		t.Errorf("user blocks = %+v", user)
	}
	as := p.Messages[1].OfAssistant.Content
	if len(as) != 2 || as[1].OfToolUse == nil || as[1].OfToolUse.ID != "toolu_1" || as[1].OfToolUse.Name != "f" {
		t.Errorf("assistant blocks = %+v", as)
	}
	tr := p.Messages[2].OfUser.Content
	if len(tr) != 1 || tr[0].OfToolResult == nil || tr[0].OfToolResult.ToolUseID != "toolu_1" || tr[0].OfToolResult.CacheControl.Type != "ephemeral" {
		t.Errorf("tool result blocks = %+v", tr)
	}
	if len(p.Tools) != 1 || p.Tools[0].OfTool == nil || p.Tools[0].OfTool.Name != "f" || p.Tools[0].OfTool.CacheControl.Type != "ephemeral" {
		t.Errorf("tools = %+v", p.Tools)
	}
	if p.ToolChoice.OfTool == nil || p.ToolChoice.OfTool.Name != "f" || !p.ToolChoice.OfTool.DisableParallelToolUse.Value {
		t.Errorf("tool_choice = %+v", p.ToolChoice)
	}
	again, err := json.Marshal(p)
	if err != nil {
		t.Fatal(err)
	}
	var sdkView, ours map[string]any
	json.Unmarshal(again, &sdkView)
	json.Unmarshal(body, &ours)
	delete(ours, "stream") // the SDK sets stream itself, per method
	if !reflect.DeepEqual(sdkView, ours) {
		t.Errorf("the SDK re-encodes the request differently:\n ours %s\n sdk  %s", body, again)
	}
}

func TestSendVersion20261021RejectsSamplingParameters(t *testing.T) {
	up := newFakeAnthropic(t, sseReply(readFixture(t, "text.sse")))
	a := newAdapter(t, config.Provider{Kind: "anthropic", BaseURL: up.URL, Options: map[string]string{"anthropic_version": "2026-10-21"}})
	for param, body := range map[string]string{
		"temperature": `{"model":"m","messages":[{"role":"user","content":"hi"}],"temperature":1}`,
		"top_p":       `{"model":"m","messages":[{"role":"user","content":"hi"}],"top_p":0.5}`,
		"top_k":       `{"model":"m","messages":[{"role":"user","content":"hi"}],"top_k":3}`,
	} {
		_, err := a.Send(context.Background(), newCall(t, body, exchange.Key{}))
		if ge := gwerr.As(err); ge == nil || ge.Category != gwerr.InvalidRequest || ge.Param != param || !strings.Contains(ge.Message, "2026-10-21") {
			t.Errorf("%s: err = %v, want invalid_request naming the version", param, err)
		}
	}
	if len(up.requests()) != 0 {
		t.Error("the upstream was called")
	}
	// Without sampling parameters the same provider works.
	s, err := a.Send(context.Background(), newCall(t, `{"model":"m","stream":true,"messages":[{"role":"user","content":"hi"}]}`, exchange.Key{}))
	if err != nil {
		t.Fatal(err)
	}
	s.Close()
	if v := up.requests()[0].header.Get("anthropic-version"); v != "2026-10-21" {
		t.Errorf("anthropic-version = %q", v)
	}
}

// TestFixturesAgreeWithAnthropicSDK checks the SSE fixtures and the stream
// translation against the official Anthropic Go SDK: the SDK streams each
// fixture from a loopback server and accumulates the message; the text,
// reasoning, tool calls (in order, with their inputs), stop reason and usage
// it sees must be what the translated OpenAI chunks carry, and the
// signatures and redacted thinking what the events carry.
func TestFixturesAgreeWithAnthropicSDK(t *testing.T) {
	for _, name := range []string{"text", "tool_use", "cached", "thinking"} {
		t.Run(name, func(t *testing.T) {
			body := readFixture(t, name+".sse")
			up := newFakeAnthropic(t, sseReply(body))
			client := asdk.NewClient(aoption.WithBaseURL(up.URL), aoption.WithAPIKey("sk-ant-test"), aoption.WithMaxRetries(0))
			stream := client.Messages.NewStreaming(context.Background(), asdk.MessageNewParams{
				Model: "claude-x", MaxTokens: 10,
				Messages: []asdk.MessageParam{asdk.NewUserMessage(asdk.NewTextBlock("hi"))},
			})
			var msg asdk.Message
			for stream.Next() {
				if err := msg.Accumulate(stream.Current()); err != nil {
					t.Fatalf("SDK accumulate: %v", err)
				}
			}
			if err := stream.Err(); err != nil {
				t.Fatalf("the SDK rejects the fixture: %v", err)
			}
			var sdkText, sdkReasoning strings.Builder
			var sdkTools, sdkOpaque []string
			for _, b := range msg.Content {
				switch b.Type {
				case "text":
					sdkText.WriteString(b.Text)
				case "thinking":
					sdkReasoning.WriteString(b.Thinking)
					sdkOpaque = append(sdkOpaque, "signature "+b.Signature)
				case "redacted_thinking":
					sdkOpaque = append(sdkOpaque, "redacted "+b.Data)
				case "tool_use":
					var in any
					json.Unmarshal(b.Input, &in)
					c, _ := json.Marshal(in)
					sdkTools = append(sdkTools, b.ID+" "+b.Name+" "+string(c))
				}
			}

			s := newSSEStream("anth", io.NopCloser(bytes.NewReader(body)), 0, testCreated)
			evs, err := collect(t, s)
			if err != io.EOF {
				t.Fatalf("translation ended with %v", err)
			}
			var opaque []string
			stop := ""
			for _, ev := range evs {
				switch ev.Kind {
				case exchange.Signature:
					opaque = append(opaque, "signature "+ev.Text)
				case exchange.RedactedReasoning:
					opaque = append(opaque, "redacted "+ev.Text)
				case exchange.Finish:
					stop = ev.Stop
				}
			}
			if !reflect.DeepEqual(opaque, sdkOpaque) || stop != string(msg.StopReason) {
				t.Errorf("signatures and redacted blocks %q, stop %q; SDK %q, stop %q", opaque, stop, sdkOpaque, msg.StopReason)
			}
			var text, reasoning strings.Builder
			type call struct{ id, name, args string }
			var calls []call
			finish := ""
			for _, data := range chatData(t, evs) {
				var c struct {
					Choices []struct {
						Delta struct {
							Content   string `json:"content"`
							Reasoning string `json:"reasoning_content"`
							ToolCalls []struct {
								Index    int    `json:"index"`
								ID       string `json:"id"`
								Function struct{ Name, Arguments string }
							} `json:"tool_calls"`
						} `json:"delta"`
						FinishReason *string `json:"finish_reason"`
					} `json:"choices"`
				}
				json.Unmarshal(data, &c)
				for _, ch := range c.Choices {
					text.WriteString(ch.Delta.Content)
					reasoning.WriteString(ch.Delta.Reasoning)
					for _, tc := range ch.Delta.ToolCalls {
						for len(calls) <= tc.Index {
							calls = append(calls, call{})
						}
						if tc.ID != "" {
							calls[tc.Index].id, calls[tc.Index].name = tc.ID, tc.Function.Name
						}
						calls[tc.Index].args += tc.Function.Arguments
					}
					if ch.FinishReason != nil {
						finish = *ch.FinishReason
					}
				}
			}
			var tools []string
			for _, c := range calls {
				var in any
				if err := json.Unmarshal([]byte(c.args), &in); err != nil {
					t.Fatalf("reassembled arguments %q are not JSON", c.args)
				}
				b, _ := json.Marshal(in)
				tools = append(tools, c.id+" "+c.name+" "+string(b))
			}
			if text.String() != sdkText.String() || reasoning.String() != sdkReasoning.String() || !reflect.DeepEqual(tools, sdkTools) {
				t.Errorf("translation text %q reasoning %q tools %v; SDK text %q reasoning %q tools %v",
					text.String(), reasoning.String(), tools, sdkText.String(), sdkReasoning.String(), sdkTools)
			}
			if finish != finishReason(string(msg.StopReason)) {
				t.Errorf("finish_reason %q for SDK stop_reason %q", finish, msg.StopReason)
			}
			u := s.Usage()
			if int64(u.Output) != msg.Usage.OutputTokens || int64(u.CacheRead) != msg.Usage.CacheReadInputTokens ||
				int64(u.CacheWrite) != msg.Usage.CacheCreationInputTokens ||
				int64(u.Input) != msg.Usage.InputTokens+msg.Usage.CacheReadInputTokens+msg.Usage.CacheCreationInputTokens {
				t.Errorf("usage %+v, SDK usage %+v", u, msg.Usage)
			}
		})
	}
}
