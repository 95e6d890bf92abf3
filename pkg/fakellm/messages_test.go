package fakellm

import (
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/llmgw/llmgw/pkg/config"
)

func roundTrip(t *testing.T, s *Script, path, body string) (*http.Response, string, error) {
	t.Helper()
	req, _ := http.NewRequest(http.MethodPost, "http://fake.invalid"+path, strings.NewReader(body))
	resp, err := (&Transport{Script: s}).RoundTrip(req)
	if err != nil {
		return nil, "", err
	}
	b, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	return resp, string(b), err
}

// On a Messages path the fake answers in the Messages wire format: the
// event sequence of a stream, a message body, a tool_use block, Anthropic's
// error shape, a cut stream, and count_tokens.
func TestMessagesWireFormat(t *testing.T) {
	const stream = `{"model":"m","stream":true,"max_tokens":10,"messages":[{"role":"user","content":"hi"}]}`
	_, out, err := roundTrip(t, &config.FakeScript{Reply: "a b"}, "/v1/messages", stream)
	if err != nil {
		t.Fatal(err)
	}
	var events []string
	for _, l := range strings.Split(out, "\n") {
		if e, ok := strings.CutPrefix(l, "event: "); ok {
			events = append(events, e)
		}
		if d, ok := strings.CutPrefix(l, "data: "); ok && !json.Valid([]byte(d)) {
			t.Errorf("not JSON: %s", d)
		}
	}
	if got := strings.Join(events, ","); got != "message_start,content_block_start,content_block_delta,content_block_delta,content_block_stop,message_delta,message_stop" {
		t.Errorf("events %s\n%s", got, out)
	}
	_, out, _ = roundTrip(t, &config.FakeScript{Reply: "a b"}, "/v1/messages", strings.Replace(stream, "true", "false", 1))
	var msg struct {
		StopReason string `json:"stop_reason"`
		Content    []struct{ Type, Text string }
	}
	if json.Unmarshal([]byte(out), &msg) != nil || len(msg.Content) != 1 || msg.Content[0].Text != "a b" || msg.StopReason != "end_turn" {
		t.Errorf("body %s", out)
	}
	_, out, _ = roundTrip(t, &config.FakeScript{ToolCall: &config.FakeToolCall{Name: "Read", Arguments: `{"path":"x"}`}}, "/v1/messages", stream)
	if !strings.Contains(out, `"type":"tool_use","id":"toolu_fake_1","name":"Read"`) || !strings.Contains(out, `"stop_reason":"tool_use"`) {
		t.Errorf("tool call %s", out)
	}
	resp, out, _ := roundTrip(t, &config.FakeScript{Fail: "status", Status: 503}, "/v1/messages", stream)
	if resp.StatusCode != 503 || !strings.Contains(out, `"type":"error"`) || !strings.Contains(out, `"error":{`) || !strings.Contains(out, "overloaded_error") {
		t.Errorf("error %d %s", resp.StatusCode, out)
	}
	if _, _, err := roundTrip(t, &config.FakeScript{Reply: "a b c d", Fail: "after_chunks", AfterChunks: 2}, "/v1/messages", stream); err == nil {
		t.Error("a cut stream read to its end")
	}
	_, out, _ = roundTrip(t, &config.FakeScript{}, "/v1/messages/count_tokens", `{"model":"m","messages":[]}`)
	if !strings.HasPrefix(out, `{"input_tokens":`) {
		t.Errorf("count %s", out)
	}
	// Chat Completions paths keep their own format.
	_, out, _ = roundTrip(t, &config.FakeScript{Reply: "a"}, "/v1/chat/completions", `{"model":"m","messages":[]}`)
	if !strings.Contains(out, `"object":"chat.completion"`) {
		t.Errorf("chat %s", out)
	}
}
