package app

import (
	"context"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/llmgw/llmgw/pkg/teamkey"
)

// TestLambdaHandlerLeavesCORSToTheFunctionURL: on Lambda the Function URL
// answers preflights and adds the CORS headers (the stack configures it
// from the seeded server.cors), so the function adds none even when its
// config has server.cors: a second Access-Control-Allow-Origin would make
// browsers refuse the response.
func TestLambdaHandlerLeavesCORSToTheFunctionURL(t *testing.T) {
	key, sum, err := teamkey.New()
	if err != nil {
		t.Fatal(err)
	}
	cfg := filepath.Join(t.TempDir(), "gw.yaml")
	doc := "server: {cors: {allow_origins: [https://app.example.com]}}\n" +
		"providers: {a: {kind: fake, fake: {reply: hi}}}\nroutes: {m: {targets: [{provider: a, model: x}]}}\n" +
		"teams: {t: {keys: [{id: k1, sha256: \"" + sum + "\"}]}}\n"
	if err := os.WriteFile(cfg, []byte(doc), 0o600); err != nil {
		t.Fatal(err)
	}
	h, err := NewLambdaHandler(context.Background(), LambdaEnv{ConfigFile: cfg, Stage: "test"}, slog.New(slog.NewTextHandler(io.Discard, nil)), io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	req := httptest.NewRequest(http.MethodPost, "/v1/chat/completions", strings.NewReader(`{"model":"m","messages":[{"role":"user","content":"x"}]}`))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Authorization", "Bearer "+key)
	req.Header.Set("Origin", "https://app.example.com")
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	if rec.Code != 200 {
		t.Fatalf("status %d: %s", rec.Code, rec.Body)
	}
	for k := range rec.Header() {
		if strings.HasPrefix(strings.ToLower(k), "access-control-") {
			t.Errorf("the Lambda handler set %s", k)
		}
	}
}
