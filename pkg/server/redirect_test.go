package server_test

import (
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"
)

// An upstream's redirect is never followed, whatever the kind and however
// the key travels (Authorization, x-api-key, x-goog-api-key, api-key, a
// SigV4 signature): the 3xx is a provider error, and the host it names
// never sees the key or the prompt.
func TestUpstreamRedirectsAreNeverFollowed(t *testing.T) {
	t.Setenv("REDIRECT_TEST_KEY", "sk-redirect-secret-0001")
	t.Setenv("AWS_ACCESS_KEY_ID", "AKIDTEST")
	t.Setenv("AWS_SECRET_ACCESS_KEY", "secret")
	t.Setenv("AWS_SESSION_TOKEN", "session-token-secret")
	for _, tc := range []struct{ name, provider, path string }{
		{"authorization", `{kind: openai, base_url: "%s/v1", keys: [{env: REDIRECT_TEST_KEY}]}`, "/v1/chat/completions"},
		{"api-key", `{kind: openai, base_url: "%s/v1", auth_header: api-key, keys: [{env: REDIRECT_TEST_KEY}]}`, "/v1/chat/completions"},
		{"x-api-key", `{kind: anthropic, base_url: "%s", keys: [{env: REDIRECT_TEST_KEY}]}`, "/v1/chat/completions"},
		{"x-goog-api-key", `{kind: gemini, base_url: "%s", keys: [{env: REDIRECT_TEST_KEY}]}`, "/v1/chat/completions"},
		{"sigv4", `{kind: bedrock, region: us-east-1, endpoint: "%s"}`, "/v1/chat/completions"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			elsewhere := newUpstream(t, func(w http.ResponseWriter, _ *http.Request, _ []byte, _ int) {
				w.WriteHeader(http.StatusOK)
			})
			redirecting := newUpstream(t, func(w http.ResponseWriter, r *http.Request, _ []byte, _ int) {
				w.Header().Set("Location", elsewhere.URL+r.URL.Path)
				w.WriteHeader(http.StatusTemporaryRedirect)
			})
			g := newGateway(t, fastPolicy+fmt.Sprintf(`
providers:
  p: `+tc.provider+`
routes:
  m: {attempts: 1, targets: [{provider: p, model: some-model}]}
`, redirecting.URL))
			resp := g.post(t, `{"model":"m","messages":[{"role":"user","content":"the secret prompt"}]}`)
			body, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if redirecting.hits.Load() == 0 {
				t.Fatalf("the upstream was never called (status %d: %s)", resp.StatusCode, body)
			}
			if n := elsewhere.hits.Load(); n != 0 {
				t.Fatalf("the redirect was followed: the other host got %d requests, headers %v", n, elsewhere.header(0))
			}
			if resp.StatusCode < 500 || strings.Contains(string(body), "sk-redirect-secret") {
				t.Fatalf("status %d body %s: want a provider error without the key", resp.StatusCode, body)
			}
		})
	}
}
