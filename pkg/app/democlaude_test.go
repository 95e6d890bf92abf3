package app

import (
	"context"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/llmgw/llmgw/pkg/config"
	"github.com/llmgw/llmgw/pkg/server"
)

// claudeCodeBody is a Messages request shaped like Claude Code 2.1's: adaptive
// thinking, context_management, output_config and a deferred tool, which a
// translating target must refuse.
const claudeCodeBody = `{"model":%q,"max_tokens":32000,"stream":%s,
"system":[{"type":"text","text":"You are Claude Code.","cache_control":{"type":"ephemeral"}}],
"messages":[{"role":"user","content":[{"type":"text","text":"say hi"}]}],
"thinking":{"type":"adaptive"},
"context_management":{"edits":[{"type":"clear_thinking_20251015","keep":"all"}]},
"output_config":{"effort":"high"},
"tools":[{"name":"Read","description":"read a file","input_schema":{"type":"object","properties":{"path":{"type":"string"}}},"defer_loading":true}]}`

// TestDemoServesClaudeCodeRequests: the demo config answers Claude Code's
// requests on the model names it asks for (its default claude-opus-5-5,
// the sonnet and haiku aliases, claude-sonnet-4-5) and on --model demo,
// streamed and not, failing over from flaky to steady before the first
// token, with context_management and the rest passed through (no 400).
func TestDemoServesClaudeCodeRequests(t *testing.T) {
	h, err := server.New(context.Background(), config.Demo(), server.Options{Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(h)
	defer srv.Close()
	for _, model := range []string{"claude-opus-5-5", "claude-sonnet-5-5", "claude-haiku-5-5", "claude-sonnet-4-5", "demo"} {
		for _, stream := range []string{"true", "false"} {
			body := strings.NewReader(strings.ReplaceAll(strings.ReplaceAll(claudeCodeBody, "%q", `"`+model+`"`), "%s", stream))
			req, _ := http.NewRequest(http.MethodPost, srv.URL+"/v1/messages", body)
			req.Header.Set("content-type", "application/json")
			req.Header.Set("anthropic-version", "2023-06-01")
			req.Header.Set("anthropic-beta", "context-management-2025-06-27,interleaved-thinking-2025-05-14")
			req.Header.Set("x-api-key", "unused-locally")
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			b, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			out := string(b)
			if resp.StatusCode != 200 || resp.Header.Get("x-gateway-provider") != "steady" || resp.Header.Get("x-gateway-fallback-depth") != "1" {
				t.Errorf("%s stream=%s: %d provider %q depth %q: %s", model, stream, resp.StatusCode,
					resp.Header.Get("x-gateway-provider"), resp.Header.Get("x-gateway-fallback-depth"), out)
				continue
			}
			want := []string{`"type":"message_start"`, `"text":" steady"`, `"stop_reason":"end_turn"`, "event: message_stop"}
			if stream == "false" {
				want = []string{`"type":"message"`, `Hello from the steady provider.`, `"stop_reason":"end_turn"`}
			}
			for _, w := range want {
				if !strings.Contains(out, w) {
					t.Errorf("%s stream=%s: no %s in %s", model, stream, w, out)
				}
			}
		}
	}
}
