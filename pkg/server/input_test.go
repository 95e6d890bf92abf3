package server_test

import (
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	"github.com/llmgw/llmgw/pkg/exchange"
	"github.com/llmgw/llmgw/pkg/server"
)

func TestBadInputGetsClear4xxAndNoUpstreamCall(t *testing.T) {
	up := newUpstream(t, okHandler)
	g := newGateway(t, "server: {max_body_bytes: 2048}\n"+oneRoute("", up.URL))
	big := `{"model":"m","messages":[{"role":"user","content":"` + strings.Repeat("x", 4096) + `"}]}`
	cases := []struct {
		name, method, path, body string
		hdr                      []string
		status                   int
		code                     string
	}{
		{"invalid json", "POST", "/v1/chat/completions", `{"model":"m",`, nil, 400, "invalid_request"},
		{"missing model", "POST", "/v1/chat/completions", `{"messages":[{"role":"user","content":"x"}]}`, nil, 400, "invalid_request"},
		{"missing messages", "POST", "/v1/chat/completions", `{"model":"m"}`, nil, 400, "invalid_request"},
		{"body too large", "POST", "/v1/chat/completions", big, nil, 400, "body_too_large"},
		{"unknown model", "POST", "/v1/chat/completions", `{"model":"nope","messages":[{"role":"user","content":"x"}]}`, nil, 404, "model_not_found"},
		{"wrong method", "GET", "/v1/chat/completions", "", nil, 405, "method_not_allowed"},
		{"unknown path", "POST", "/v1/audio/speech", `{}`, nil, 404, "unknown_url"},
		{"bad accept for stream", "POST", "/v1/chat/completions", streamBody, []string{"Accept", "image/png"}, 400, "not_acceptable"},
		{"redirect field", "POST", "/v1/chat/completions", `{"model":"m","base_url":"http://127.0.0.2","messages":[{"role":"user","content":"x"}]}`, nil, 400, "invalid_request"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			req, _ := http.NewRequest(tc.method, g.URL+tc.path, strings.NewReader(tc.body))
			req.Header.Set("Content-Type", "application/json")
			for i := 0; i+1 < len(tc.hdr); i += 2 {
				req.Header.Set(tc.hdr[i], tc.hdr[i+1])
			}
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			out := readAll(t, resp.Body)
			if resp.StatusCode != tc.status {
				t.Errorf("status %d, want %d: %s", resp.StatusCode, tc.status, out)
			}
			var env struct {
				Error struct {
					Message string `json:"message"`
					Type    string `json:"type"`
					Code    string `json:"code"`
				} `json:"error"`
			}
			if err := json.Unmarshal([]byte(out), &env); err != nil || env.Error.Message == "" || env.Error.Code != tc.code {
				t.Errorf("not the OpenAI error shape with code %q: %s", tc.code, out)
			}
			if resp.Header.Get("x-request-id") == "" || resp.Header.Get("x-gateway-error-category") == "" {
				t.Errorf("headers = %v", resp.Header)
			}
		})
	}
	if up.hits.Load() != 0 {
		t.Errorf("bad input reached the upstream %d times", up.hits.Load())
	}
}

func TestPanicInRequestPathIsRecovered(t *testing.T) {
	up := newUpstream(t, okHandler)
	g := newGateway(t, oneRoute("", up.URL), func(o *server.Options) {
		o.Record = func(_ context.Context, r *exchange.Record) {
			if r.Route == "m" {
				panic("hook bug")
			}
		}
	})
	resp := g.post(t, chatBody)
	readAll(t, resp.Body)
	// The hook runs after the response's last byte: wait for it.
	waitFor(t, func() bool { return strings.Contains(g.logs.String(), `"msg":"panic"`) }, "panic not logged: "+g.logs.String())
	// The process survived and keeps serving.
	resp = g.post(t, `{"model":"other","messages":[{"role":"user","content":"x"}]}`)
	readAll(t, resp.Body)
	if resp.StatusCode != 404 {
		t.Errorf("status %d after a recovered panic", resp.StatusCode)
	}
}
