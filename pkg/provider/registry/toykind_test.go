package registry_test

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/tidwall/gjson"

	"github.com/llmgw/llmgw/pkg/config"
	"github.com/llmgw/llmgw/pkg/provider/internal/toy"
	"github.com/llmgw/llmgw/pkg/provider/registry"
	"github.com/llmgw/llmgw/pkg/server"
)

// A provider kind is one package and one registry line: with the toy
// kind's package (pkg/provider/internal/toy) and the Register line below,
// a config naming kind toy loads (its options checked by the toy's
// descriptor), and a Chat Completions request is served by the toy
// upstream through the real gateway, with the key in the toy's header.
func TestAToyKindIsOnePackageAndOneRegistryLine(t *testing.T) {
	registry.Register(toy.Descriptor) // the one registry line

	var got struct {
		path, key string
		req       toy.Request
	}
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		got.path, got.key = r.URL.Path, r.Header.Get(toy.KeyHeader)
		b, _ := io.ReadAll(r.Body)
		_ = json.Unmarshal(b, &got.req)
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(toy.Response{Text: "toy says hi", InputTokens: 3, OutputTokens: 3})
	}))
	defer up.Close()
	t.Setenv("TOY_KEY", "toy-secret")

	if _, err := config.Parse([]byte("providers: {t: {kind: toy, base_url: \"" + up.URL + "\"}}\nroutes: {m: {targets: [{provider: t, model: m1, options: {voice: shouty}}]}}\n")); err == nil ||
		!strings.Contains(err.Error(), `routes.m.targets[0].options.voice: "shouty" is not loud or quiet`) {
		t.Fatalf("a bad toy target option: err %v, want the toy descriptor's check", err)
	}
	cfg, err := config.Parse([]byte("providers: {t: {kind: toy, base_url: \"" + up.URL + "\", keys: [{env: TOY_KEY}]}}\n" +
		"routes: {toy-model: {targets: [{provider: t, model: m1, options: {voice: loud}}]}}\n"))
	if err != nil {
		t.Fatal(err)
	}
	h, err := server.New(context.Background(), cfg, server.Options{Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		t.Fatal(err)
	}
	gw := httptest.NewServer(h)
	defer gw.Close()

	resp, err := http.Post(gw.URL+"/v1/chat/completions", "application/json",
		strings.NewReader(`{"model":"toy-model","messages":[{"role":"user","content":"hi"}]}`))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("status %d: %s", resp.StatusCode, body)
	}
	if c := gjson.GetBytes(body, "choices.0.message.content").String(); c != "toy says hi" {
		t.Errorf("content %q, want the toy's answer (body %s)", c, body)
	}
	if got.path != "/generate" || got.key != "toy-secret" || got.req.Model != "m1" || len(got.req.Messages) != 1 || got.req.Messages[0].Text == "" {
		t.Errorf("upstream got path %q key set %v model %q request %+v", got.path, got.key == "toy-secret", got.req.Model, got.req.Messages)
	}
	if p := resp.Header.Get("x-gateway-provider"); p != "t" {
		t.Errorf("x-gateway-provider %q, want t", p)
	}
}
