package server_test

import (
	"bytes"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"

	anthropic "github.com/anthropics/anthropic-sdk-go/v2"
	aoption "github.com/anthropics/anthropic-sdk-go/v2/option"
)

// Helpers for the Messages ingress tests: fake Anthropic upstreams that
// answer in Anthropic's exact wire format, routes over them, and the
// official Anthropic Go SDK pointed at the gateway.

const (
	msgKeyEnv = "LLMGW_TEST_MSG_ANTHROPIC_KEY"
	msgKey    = "sk-ant-api03-upstream-secret-0123456789"
)

// msgRoute is a config with one route "claude" over targets given as
// "anthropic=URL", "openai=URL" (an OpenAI-compatible base URL, /v1
// added) or "bedrock=URL", plus extra route settings (indented).
func msgRoute(t *testing.T, extra string, targets ...string) string {
	t.Helper()
	t.Setenv(msgKeyEnv, msgKey)
	var b strings.Builder
	b.WriteString("defaults: {attempts: 1, backoff_base: 1ms, backoff_max: 2ms}\nproviders:\n")
	for i, tg := range targets {
		kind, url, _ := strings.Cut(tg, "=")
		switch kind {
		case "anthropic":
			fmt.Fprintf(&b, "  p%d: {kind: anthropic, base_url: %q, keys: [{env: %s}]}\n", i, url, msgKeyEnv)
		case "openai":
			fmt.Fprintf(&b, "  p%d: {kind: openai, base_url: %q}\n", i, url+"/v1")
		case "bedrock":
			fmt.Fprintf(&b, "  p%d: {kind: bedrock, region: us-east-1, endpoint: %q}\n", i, url)
		}
	}
	b.WriteString("routes:\n  claude:\n" + extra + "    targets:\n")
	for i := range targets {
		fmt.Fprintf(&b, "      - {provider: p%d, model: up-model-%d, max_tokens: 1024}\n", i, i)
	}
	return b.String()
}

// anthropicSDK is the official Anthropic client pointed at the gateway.
func (g *gateway) anthropicSDK(opts ...aoption.RequestOption) anthropic.Client {
	o := append([]aoption.RequestOption{aoption.WithBaseURL(g.URL + "/"), aoption.WithAPIKey("sk-ant-client-key-never-forwarded"),
		aoption.WithMaxRetries(0)}, opts...)
	return anthropic.NewClient(o...)
}

// postMessages sends a raw request to /v1/messages?beta=true, as Claude
// Code does.
func (g *gateway) postMessages(t *testing.T, body string, hdr ...string) *http.Response {
	t.Helper()
	req, _ := http.NewRequest(http.MethodPost, g.URL+"/v1/messages?beta=true", strings.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("anthropic-version", "2023-06-01")
	for i := 0; i+1 < len(hdr); i += 2 {
		req.Header.Set(hdr[i], hdr[i+1])
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("post: %v", err)
	}
	t.Cleanup(func() { resp.Body.Close() })
	return resp
}

// Anthropic frames, as the API writes them.
func msgStart(id string, in, cacheRead, cacheWrite int) string {
	return fmt.Sprintf(`event: message_start
data: {"type":"message_start","message":{"id":%q,"type":"message","role":"assistant","model":"claude-sonnet-4-5-20250929","content":[],"stop_reason":null,"stop_sequence":null,"usage":{"input_tokens":%d,"cache_creation_input_tokens":%d,"cache_read_input_tokens":%d,"output_tokens":1}}}

`, id, in, cacheWrite, cacheRead)
}

func msgTextBlock(i int, words ...string) string {
	s := fmt.Sprintf("event: content_block_start\ndata: {\"type\":\"content_block_start\",\"index\":%d,\"content_block\":{\"type\":\"text\",\"text\":\"\"}}\n\n", i)
	for _, w := range words {
		s += fmt.Sprintf("event: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"index\":%d,\"delta\":{\"type\":\"text_delta\",\"text\":%q}}\n\n", i, w)
	}
	return s + fmt.Sprintf("event: content_block_stop\ndata: {\"type\":\"content_block_stop\",\"index\":%d}\n\n", i)
}

func msgToolBlock(i int, id, name, args string) string {
	return fmt.Sprintf("event: content_block_start\ndata: {\"type\":\"content_block_start\",\"index\":%d,\"content_block\":{\"type\":\"tool_use\",\"id\":%q,\"name\":%q,\"input\":{}}}\n\n", i, id, name) +
		fmt.Sprintf("event: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"index\":%d,\"delta\":{\"type\":\"input_json_delta\",\"partial_json\":%q}}\n\n", i, args) +
		fmt.Sprintf("event: content_block_stop\ndata: {\"type\":\"content_block_stop\",\"index\":%d}\n\n", i)
}

func msgEnd(stop string, seq string, out int) string {
	s := "null"
	if seq != "" {
		s = fmt.Sprintf("%q", seq)
	}
	return fmt.Sprintf("event: message_delta\ndata: {\"type\":\"message_delta\",\"delta\":{\"stop_reason\":%q,\"stop_sequence\":%s},\"usage\":{\"output_tokens\":%d}}\n\n", stop, s, out) +
		"event: message_stop\ndata: {\"type\":\"message_stop\"}\n\n"
}

// msgText is a whole text answer.
func msgText(words ...string) string {
	return msgStart("msg_01XFDUDYJgAACzvnptvVoYEL", 25, 100, 20) + "event: ping\ndata: {\"type\": \"ping\"}\n\n" + msgTextBlock(0, words...) + msgEnd("end_turn", "", 15)
}

// sseFrames writes frames, flushing each.
func sseFrames(w http.ResponseWriter, stream string) {
	w.Header().Set("Content-Type", "text/event-stream; charset=utf-8")
	w.Header().Set("request-id", "req_upstream_1")
	w.WriteHeader(http.StatusOK)
	for _, f := range strings.SplitAfter(stream, "\n\n") {
		io.WriteString(w, f)
		w.(http.Flusher).Flush()
	}
}

// msgBody is a whole Message.
func msgBody(text string) string {
	return fmt.Sprintf(`{"id":"msg_013Zva2CMHLNnXjNJJKqJ2EF","type":"message","role":"assistant","model":"claude-sonnet-4-5-20250929","content":[{"type":"text","text":%q}],"stop_reason":"end_turn","stop_sequence":null,"usage":{"input_tokens":2095,"cache_creation_input_tokens":0,"cache_read_input_tokens":1800,"output_tokens":503}}`, text)
}

// anthropicOK answers streaming and non-streaming Messages requests.
func anthropicOK(w http.ResponseWriter, r *http.Request, body []byte, _ int) {
	if bytes.Contains(body, []byte(`"stream":true`)) {
		sseFrames(w, msgText("Hello", " from", " Claude"))
		return
	}
	w.Header().Set("Content-Type", "application/json")
	io.WriteString(w, msgBody("Hello from Claude"))
}

// anthropicOverloaded answers 529 overloaded_error.
func anthropicOverloaded(w http.ResponseWriter, _ *http.Request, _ []byte, _ int) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(529)
	io.WriteString(w, `{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"},"request_id":"req_011CSHoEeqs5C35K2UUqR7Fy"}`)
}
