package server_test

import (
	"strings"
	"testing"
)

// TestAnthropicBetaOnlyFromTheAllowList: the review found any anthropic-beta
// value forwarded (a beta can switch on billed server-side tools). Values
// on server.anthropic_betas (by default what Claude Code sends) reach the
// upstream; the rest are dropped; "*" forwards everything.
func TestAnthropicBetaOnlyFromTheAllowList(t *testing.T) {
	for _, tc := range []struct{ extra, sent, want string }{
		{"", "claude-code-20250219,interleaved-thinking-2025-05-14,web-fetch-2025-09-10, code-execution-2025-08-25,fine-grained-tool-streaming-2025-05-14",
			"claude-code-20250219,interleaved-thinking-2025-05-14,fine-grained-tool-streaming-2025-05-14"},
		{"", "mcp-client-2025-04-04", ""},
		{"server: {anthropic_betas: [my-beta-2030-01-01]}\n", "claude-code-20250219,my-beta-2030-01-01", "my-beta-2030-01-01"},
		{"server: {anthropic_betas: ['*']}\n", "anything-at-all", "anything-at-all"},
	} {
		up := newUpstream(t, anthropicOK)
		g := newGateway(t, tc.extra+msgRoute(t, "", "anthropic="+up.URL))
		resp := g.postMessages(t, `{"model":"claude","max_tokens":5,"messages":[{"role":"user","content":"hi"}]}`, "anthropic-beta", tc.sent)
		if resp.StatusCode != 200 {
			t.Fatalf("%s: %d %s", tc.sent, resp.StatusCode, readAll(t, resp.Body))
		}
		if got := strings.Join(up.header(0).Values("Anthropic-Beta"), ","); got != tc.want {
			t.Errorf("sent %q with %q: upstream got %q, want %q", tc.sent, tc.extra, got, tc.want)
		}
	}
}
