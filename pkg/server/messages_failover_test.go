package server_test

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"strings"
	"testing"

	anthropic "github.com/anthropics/anthropic-sdk-go/v2"
	aoption "github.com/anthropics/anthropic-sdk-go/v2/option"
)

// The Messages ingress under failure: cuts after the first token, and
// failover before it, on the streaming and the non-streaming path.

func TestMessagesSDKSurfacesACutStreamAsAnError(t *testing.T) {
	cases := map[string]struct {
		upstream string
		errType  string
	}{
		"connection ends before message_stop": {msgStart("msg_cut", 10, 0, 0) + "event: content_block_start\ndata: {\"type\":\"content_block_start\",\"index\":0,\"content_block\":{\"type\":\"text\",\"text\":\"\"}}\n\n" +
			"event: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"index\":0,\"delta\":{\"type\":\"text_delta\",\"text\":\"The answer is\"}}\n\n", "api_error"},
		"in-band overloaded_error": {msgStart("msg_cut", 10, 0, 0) + msgTextBlock(0, "The answer is") +
			"event: error\ndata: {\"type\":\"error\",\"error\":{\"type\":\"overloaded_error\",\"message\":\"Overloaded\"}}\n\n", "overloaded_error"},
	}
	for name, c := range cases {
		t.Run(name, func(t *testing.T) {
			up := newUpstream(t, func(w http.ResponseWriter, r *http.Request, _ []byte, _ int) { sseFrames(w, c.upstream) })
			g := newGateway(t, msgRoute(t, "", "anthropic="+up.URL))
			client := g.anthropicSDK()
			s := client.Messages.NewStreaming(context.Background(), anthropic.MessageNewParams{Model: "claude", MaxTokens: 64,
				Messages: []anthropic.MessageParam{anthropic.NewUserMessage(anthropic.NewTextBlock("hi"))}})
			var text strings.Builder
			for s.Next() {
				if ev := s.Current(); ev.Type == "content_block_delta" {
					text.WriteString(ev.Delta.Text)
				}
			}
			var ae *anthropic.Error
			if err := s.Err(); !errors.As(err, &ae) || ae.Type() != anthropic.ErrorType(c.errType) {
				t.Fatalf("stream error = %v, want an %s", s.Err(), c.errType)
			}
			if text.String() != "The answer is" {
				t.Errorf("text before the error = %q", text.String())
			}
			var extra struct {
				Error struct {
					Category  string `json:"category"`
					Retryable bool   `json:"retryable"`
					Provider  string `json:"provider"`
				} `json:"error"`
			}
			json.Unmarshal([]byte(ae.RawJSON()), &extra)
			if extra.Error.Category != "interrupted" || !extra.Error.Retryable || extra.Error.Provider != "p0" {
				t.Errorf("error = %s", ae.RawJSON())
			}

			// The raw stream: the last frame is the error, nothing is invented after it.
			resp := g.postMessages(t, `{"model":"claude","max_tokens":64,"stream":true,"messages":[{"role":"user","content":"hi"}]}`)
			body := readAll(t, resp.Body)
			frames := strings.Split(strings.TrimSuffix(body, "\n\n"), "\n\n")
			last := frames[len(frames)-1]
			if !strings.HasPrefix(last, "event: error\ndata: {\"type\":\"error\",\"error\":{\"type\":\""+c.errType+"\"") {
				t.Errorf("last frame = %q", last)
			}
			if strings.Count(body, "event: error") != 1 || strings.Contains(body, "message_stop") || strings.Contains(body, "message_delta") {
				t.Errorf("stream after a cut:\n%s", body)
			}
			if rec := g.waitRecs(t, 2)[1]; rec.Outcome != "interrupted" {
				t.Errorf("record outcome = %q", rec.Outcome)
			}
		})
	}
}

func TestMessagesFailoverBeforeTheFirstTokenIsInvisible(t *testing.T) {
	failures := map[string]func(w http.ResponseWriter, r *http.Request, body []byte, n int){
		"529 overloaded": anthropicOverloaded,
		"error event before content": func(w http.ResponseWriter, r *http.Request, body []byte, n int) {
			if !strings.Contains(string(body), `"stream":true`) {
				anthropicOverloaded(w, r, body, n)
				return
			}
			sseFrames(w, msgStart("msg_dead", 10, 0, 0)+"event: error\ndata: {\"type\":\"error\",\"error\":{\"type\":\"overloaded_error\",\"message\":\"Overloaded\"}}\n\n")
		},
		"connection refused": nil,
	}
	for name, fail := range failures {
		t.Run(name, func(t *testing.T) {
			bad := "http://127.0.0.1:1"
			if fail != nil {
				bad = newUpstream(t, fail).URL
			}
			good := newUpstream(t, anthropicOK)
			g := newGateway(t, msgRoute(t, "", "anthropic="+bad, "anthropic="+good.URL))
			client := g.anthropicSDK()
			params := anthropic.MessageNewParams{Model: "claude", MaxTokens: 64, Messages: []anthropic.MessageParam{anthropic.NewUserMessage(anthropic.NewTextBlock("hi"))}}

			var raw *http.Response
			m := accumulate(t, client.Messages.NewStreaming(context.Background(), params, aoption.WithResponseInto(&raw)))
			if m.Content[0].Text != "Hello from Claude" || raw.Header.Get("x-gateway-provider") != "p1" || raw.Header.Get("x-gateway-fallback-depth") != "1" {
				t.Errorf("streaming: %s, provider %q", m.RawJSON(), raw.Header.Get("x-gateway-provider"))
			}
			// Claude Code re-sends with stream:false after a stream error:
			// the non-streaming path fails over the same way.
			whole, err := client.Messages.New(context.Background(), params, aoption.WithResponseInto(&raw))
			if err != nil || whole.Content[0].Text != "Hello from Claude" || raw.Header.Get("x-gateway-provider") != "p1" {
				t.Errorf("non-streaming: %v %v", whole, err)
			}
			if strings.Contains(string(good.body(1)), `"stream":true`) {
				t.Errorf("the non-streaming retry was sent as a stream: %s", good.body(1))
			}
		})
	}
}

func TestMessagesNoTargetLeftIsOneAnthropicError(t *testing.T) {
	a := newUpstream(t, anthropicOverloaded)
	b := newUpstream(t, anthropicOverloaded)
	g := newGateway(t, msgRoute(t, "", "anthropic="+a.URL, "anthropic="+b.URL))
	for _, stream := range []string{"true", "false"} {
		resp := g.postMessages(t, `{"model":"claude","max_tokens":64,"stream":`+stream+`,"messages":[{"role":"user","content":"hi"}]}`)
		body := readAll(t, resp.Body)
		if resp.StatusCode != 529 || resp.Header.Get("x-should-retry") != "false" || resp.Header.Get("Content-Type") != "application/json" {
			t.Errorf("stream %s: status %d, x-should-retry %q", stream, resp.StatusCode, resp.Header.Get("x-should-retry"))
		}
		var e struct {
			Type  string `json:"type"`
			Error struct {
				Type, Message, Category, Provider string
				Retryable                         bool
			} `json:"error"`
			RequestID string `json:"request_id"`
		}
		if err := json.Unmarshal([]byte(body), &e); err != nil || e.Type != "error" || e.Error.Type != "overloaded_error" ||
			e.Error.Category != "overloaded" || !e.Error.Retryable || e.Error.Provider != "p1" || e.RequestID == "" {
			t.Errorf("stream %s: body %s", stream, body)
		}
		if strings.Contains(body, `"error":{"message"`) && !strings.Contains(body, `"type":"error"`) {
			t.Errorf("OpenAI envelope on the Messages ingress: %s", body)
		}
	}
	client := g.anthropicSDK()
	_, err := client.Messages.New(context.Background(), anthropic.MessageNewParams{Model: "claude", MaxTokens: 8,
		Messages: []anthropic.MessageParam{anthropic.NewUserMessage(anthropic.NewTextBlock("hi"))}})
	var ae *anthropic.Error
	if !errors.As(err, &ae) || ae.StatusCode != 529 || ae.Type() != "overloaded_error" {
		t.Errorf("SDK error = %v", err)
	}
}
