package app

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/llmgw/llmgw/pkg/config"
)

// TestAssembledGatewayReportsKeyHeadroomAndRecordsUsage runs the gateway
// as local mode builds it (embedded store, shared state, usage) and checks
// that /healthz shows what the key ledger learned from rate-limit headers,
// by fingerprint only, and that the request left a usage record.
func TestAssembledGatewayReportsKeyHeadroomAndRecordsUsage(t *testing.T) {
	const secret = "sk-SENTINEL-app-test-000000000000"
	t.Setenv("APP_TEST_KEY", secret)
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("x-ratelimit-remaining-requests", "42")
		w.Header().Set("x-ratelimit-reset-requests", "20s")
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, `{"id":"chatcmpl-1","object":"chat.completion","created":1,"model":"gpt-4.1","choices":[{"index":0,"message":{"role":"assistant","content":"hi"},"finish_reason":"stop"}],"usage":{"prompt_tokens":5,"completion_tokens":1,"total_tokens":6}}`)
	}))
	defer up.Close()
	cfg, err := config.Parse([]byte(`
providers:
  p: {kind: openai, base_url: "` + up.URL + `/v1", keys: [{env: APP_TEST_KEY}]}
routes:
  m: {targets: [{provider: p, model: gpt-4.1}]}
prices:
  "gpt-4.1": {input: 2, output: 8}
`))
	if err != nil {
		t.Fatal(err)
	}
	st, _, err := OpenStore(context.Background(), StoreOptions{StatePath: filepath.Join(t.TempDir(), "state.db")})
	if err != nil {
		t.Fatal(err)
	}
	g, err := Build(context.Background(), cfg, st, BuildOptions{Logger: slog.New(slog.NewTextHandler(io.Discard, nil)), AnonymousWithoutTeams: true})
	if err != nil {
		t.Fatal(err)
	}
	defer g.Close()
	srv := httptest.NewServer(g.Handler)
	defer srv.Close()
	resp, err := http.Post(srv.URL+"/v1/chat/completions", "application/json", strings.NewReader(`{"model":"m","messages":[{"role":"user","content":"x"}]}`))
	if err != nil || resp.StatusCode != 200 {
		t.Fatalf("chat: %v %v", err, resp)
	}
	resp.Body.Close()
	g.Ledger.Wait()
	var health struct {
		Targets []struct {
			Keys []struct {
				Fingerprint string `json:"fingerprint"`
				Available   bool   `json:"available"`
				Headroom    []struct {
					Dimension string  `json:"dimension"`
					Remaining float64 `json:"remaining"`
				} `json:"headroom"`
			} `json:"keys"`
		} `json:"targets"`
	}
	deadline := time.Now().Add(5 * time.Second)
	for {
		r, err := http.Get(srv.URL + "/healthz")
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(r.Body)
		r.Body.Close()
		if strings.Contains(string(body), "SENTINEL") {
			t.Fatalf("healthz shows the key: %s", body)
		}
		json.Unmarshal(body, &health)
		if k := health.Targets[0].Keys; len(k) == 1 && len(k[0].Headroom) > 0 {
			if k[0].Headroom[0].Dimension != "requests" || k[0].Headroom[0].Remaining != 42 || !strings.HasPrefix(k[0].Fingerprint, "k-") {
				t.Fatalf("healthz keys = %s", body)
			}
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("healthz never showed the key's headroom: %s", body)
		}
		time.Sleep(20 * time.Millisecond)
	}
	// The usage record is in the store: the rollup sees it. The record is
	// written after the response's last byte (the client may finish
	// first), so poll until it lands.
	deadline = time.Now().Add(5 * time.Second)
	for {
		if _, err := g.Roller.Run(context.Background(), time.Now().UTC(), time.Now().UTC()); err != nil {
			t.Fatal(err)
		}
		u, err := http.Get(srv.URL + "/v1/usage")
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(u.Body)
		u.Body.Close()
		if strings.Contains(string(body), `"requests": 1`) || strings.Contains(string(body), `"requests":1`) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("usage = %s", body)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// TestInstancesShareOneRetryBudget: two gateways built over one store
// spend one retry budget (issue 13, item 13): first attempts counted by
// one instance fund the other's retries.
func TestInstancesShareOneRetryBudget(t *testing.T) {
	cfg, err := config.Parse([]byte("providers: {p: {kind: fake}}\nroutes: {m: {targets: [{provider: p, model: x}]}}\n"))
	if err != nil {
		t.Fatal(err)
	}
	st, _, err := OpenStore(context.Background(), StoreOptions{StatePath: filepath.Join(t.TempDir(), "state.db")})
	if err != nil {
		t.Fatal(err)
	}
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	a, err := Build(context.Background(), cfg, st, BuildOptions{Logger: log})
	if err != nil {
		t.Fatal(err)
	}
	b, err := Build(context.Background(), cfg, st, BuildOptions{Logger: log})
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close() // closes the shared store
	for i := 0; i < 100; i++ {
		a.Budget.Request("p")
	}
	a.Budget.Flush()
	allowed := 0
	for i := 0; i < 30; i++ {
		if b.Budget.Retry("p", 0.1, 2) {
			allowed++
		}
	}
	if allowed != 10 {
		t.Fatalf("B may retry %d times, want 10 (10%% of A's 100 first attempts)", allowed)
	}
	b.Budget.Flush()
}
