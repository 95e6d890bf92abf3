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

func TestSafeAddrKeepsUnauthenticatedGatewayOnLoopback(t *testing.T) {
	cases := []struct {
		in, want string
		auth     bool
		note     bool
	}{
		{"127.0.0.1:8080", "127.0.0.1:8080", false, true},
		{"localhost:9000", "localhost:9000", false, true},
		{"0.0.0.0:8080", "127.0.0.1:8080", false, true},
		{":8080", "127.0.0.1:8080", false, true},
		{"0.0.0.0:8080", "0.0.0.0:8080", true, false},
	}
	for _, tc := range cases {
		got, note, err := SafeAddr(tc.in, tc.auth)
		if err != nil || got != tc.want || (note != "") != tc.note {
			t.Errorf("SafeAddr(%q, %v) = %q, %q, %v", tc.in, tc.auth, got, note, err)
		}
	}
	if _, _, err := SafeAddr("nonsense", false); err == nil {
		t.Error("bad address accepted")
	}
}

// TestDemoConfigShowsFailoverWithoutKeys runs the built-in demo config: the
// quick start's promise that failover is visible with no keys.
func TestDemoConfigShowsFailoverWithoutKeys(t *testing.T) {
	h, err := server.New(context.Background(), config.Demo(), server.Options{Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(h)
	defer srv.Close()
	post := func(body string) (*http.Response, string) {
		resp, err := http.Post(srv.URL+"/v1/chat/completions", "application/json", strings.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp, string(b)
	}
	resp, out := post(`{"model":"demo","messages":[{"role":"user","content":"hi"}]}`)
	if resp.StatusCode != 200 || resp.Header.Get("x-gateway-provider") != "steady" || !strings.Contains(out, "steady provider") {
		t.Errorf("demo: %d %s %s", resp.StatusCode, resp.Header.Get("x-gateway-provider"), out)
	}
	_, out = post(`{"model":"demo-midstream","stream":true,"messages":[{"role":"user","content":"hi"}]}`)
	if !strings.Contains(out, `"category":"interrupted"`) || strings.Contains(out, "[DONE]") {
		t.Errorf("demo-midstream: %s", out)
	}
}
