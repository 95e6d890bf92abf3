package provider_test

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/llmgw/llmgw/pkg/exchange"
	"github.com/llmgw/llmgw/pkg/gwerr"
	"github.com/llmgw/llmgw/pkg/provider"
)

// The one HTTP send: the adapter's own headers, then the common ones (the
// static headers and the key win over the adapter's), every response
// reported to the call, and an error status read (at most MaxErrBody) and
// classified by the adapter with the key to redact.
func TestSenderPost(t *testing.T) {
	var got http.Header
	var status = http.StatusOK
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		got = r.Header.Clone()
		b, _ := io.ReadAll(r.Body)
		w.WriteHeader(status)
		_, _ = w.Write(append([]byte("echo:"), b...))
	}))
	defer up.Close()
	var seen []int
	call := &provider.Call{Req: &exchange.Request{TraceParent: "00-abc-def-01"}, Key: exchange.NewKey("sk-secret", 0),
		OnResponse: func(s int, _ http.Header) { seen = append(seen, s) }}
	var classified struct {
		body, secret string
	}
	s := &provider.Sender{Provider: "p", Client: up.Client(), Headers: map[string]string{"X-Team": "core", "X-Own": "static"}, AuthHeader: "x-api-key",
		StatusError: func(resp *http.Response, body []byte, secret string) error {
			classified.body, classified.secret = string(body), secret
			return provider.StatusError("p", resp.StatusCode, "", "", 0)
		}}
	resp, err := s.Post(context.Background(), call, up.URL, []byte(`{"a":1}`), true, func(h http.Header) {
		h.Set("X-Own", "adapter")
		h.Set("Anthropic-Version", "v")
	})
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if string(b) != `echo:{"a":1}` {
		t.Errorf("body %q", b)
	}
	for k, want := range map[string]string{"X-Api-Key": "sk-secret", "X-Own": "static", "Anthropic-Version": "v", "X-Team": "core",
		"Accept": "text/event-stream", "Content-Type": "application/json", "Traceparent": "00-abc-def-01"} {
		if got.Get(k) != want {
			t.Errorf("%s: %q, want %q", k, got.Get(k), want)
		}
	}

	status = http.StatusTooManyRequests
	_, err = s.Post(context.Background(), call, up.URL, []byte(strings.Repeat("x", provider.MaxErrBody)), false, nil)
	if gwerr.As(err).Category != gwerr.RateLimited {
		t.Errorf("429: err %v", err)
	}
	if len(classified.body) != provider.MaxErrBody || classified.secret != "sk-secret" {
		t.Errorf("StatusError got %d body bytes and secret %v", len(classified.body), classified.secret == "sk-secret")
	}
	if len(seen) != 2 || seen[0] != 200 || seen[1] != 429 {
		t.Errorf("OnResponse saw %v, want [200 429]", seen)
	}
}
