package server_test

import (
	"net/http"
	"strings"
	"testing"
)

// TestOversizeStringsAreRefusedBeforeAnyWrite is the review's attack: a
// 3 MB model name came back whole as a 3 MB error body and log line, and
// 110 KB ones made usage records (and the team's rollup) too large to store.
// Every ingress answers 400 in its own shape, bounded, with no upstream
// call and a record without the name; neighbouring strings (an end-user
// id, metadata, a role, a path, a model path, an Accept header) are bounded
// the same way.
func TestOversizeStringsAreRefusedBeforeAnyWrite(t *testing.T) {
	up := newUpstream(t, okHandler)
	g := newGateway(t, "server: {max_body_bytes: 8388608}\n"+oneRoute("", up.URL))
	huge := strings.Repeat("M", 3<<20)
	cases := []struct{ name, path, body, want string }{
		{"chat model", "/v1/chat/completions", `{"model":"` + huge + `","messages":[{"role":"user","content":"x"}]}`, "model"},
		{"chat user", "/v1/chat/completions", `{"model":"m","user":"` + huge + `","messages":[{"role":"user","content":"x"}]}`, "user"},
		{"chat metadata", "/v1/chat/completions", `{"model":"m","metadata":{"k":"` + huge + `"},"messages":[{"role":"user","content":"x"}]}`, "metadata"},
		{"chat role", "/v1/chat/completions", `{"model":"m","messages":[{"role":"` + huge + `","content":"x"}]}`, "role"},
		{"messages model", "/v1/messages", `{"model":"` + huge + `","max_tokens":5,"messages":[{"role":"user","content":"x"}]}`, "model"},
		{"messages user id", "/v1/messages", `{"model":"m","max_tokens":5,"metadata":{"user_id":"` + huge + `"},"messages":[{"role":"user","content":"x"}]}`, "user"},
		{"count_tokens model", "/v1/messages/count_tokens", `{"model":"` + huge + `","messages":[{"role":"user","content":"x"}]}`, "model"},
		{"responses model", "/v1/responses", `{"model":"` + huge + `","input":"x"}`, "model"},
		{"embeddings model", "/v1/embeddings", `{"model":"` + huge + `","input":"x"}`, "model"},
		{"embeddings user", "/v1/embeddings", `{"model":"m","user":"` + huge + `","input":"x"}`, "user"},
	}
	for _, c := range cases {
		req, _ := http.NewRequest(http.MethodPost, g.URL+c.path, strings.NewReader(c.body))
		req.Header.Set("Content-Type", "application/json")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		body := readAll(t, resp.Body)
		resp.Body.Close()
		if resp.StatusCode != 400 || len(body) > 4096 || !strings.Contains(body, c.want) || !strings.Contains(body, `"error"`) {
			t.Errorf("%s: %d, %d-byte body %.300s; want a short 400 naming %q", c.name, resp.StatusCode, len(body), body, c.want)
		}
	}
	for _, p := range []string{"/v1/" + strings.Repeat("p", 500<<10), "/v1/models/" + strings.Repeat("p", 500<<10)} {
		resp, err := http.Get(g.URL + p)
		if err != nil {
			t.Fatal(err)
		}
		if body := readAll(t, resp.Body); resp.StatusCode != 404 || len(body) > 4096 {
			t.Errorf("GET a %d-byte path: %d with a %d-byte body", len(p), resp.StatusCode, len(body))
		}
		resp.Body.Close()
	}
	resp := g.post(t, `{"model":"m","stream":true,"messages":[{"role":"user","content":"x"}]}`, "Accept", strings.Repeat("a", 500<<10))
	if body := readAll(t, resp.Body); resp.StatusCode != 400 || len(body) > 4096 {
		t.Errorf("a 500 KB Accept header: %d with a %d-byte body", resp.StatusCode, len(body))
	}
	if n := up.hits.Load(); n != 0 {
		t.Errorf("%d upstream calls, want 0", n)
	}
	for _, r := range g.waitRecs(t, len(cases)+1) {
		if len(r.Route) > 256 {
			t.Errorf("a usage record carries a %d-byte route", len(r.Route))
		}
	}
	if n := len(g.logs.String()); n > 200_000 {
		t.Errorf("the log holds %d bytes: an oversize string was logged whole", n)
	}
}
