package app

import (
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/llmgw/llmgw/pkg/config"
	"github.com/llmgw/llmgw/pkg/store/embedded"
	"github.com/llmgw/llmgw/pkg/teamkey"
)

// healthz reads GET /healthz with the given Host and key ("" for none).
func healthz(t *testing.T, h http.Handler, host, key string) (map[string]json.RawMessage, string) {
	t.Helper()
	req := httptest.NewRequest(http.MethodGet, "/healthz", nil)
	req.Host = host
	if key != "" {
		req.Header.Set("Authorization", "Bearer "+key)
	}
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	if rec.Code != 200 {
		t.Fatalf("healthz: %d %s", rec.Code, rec.Body)
	}
	var m map[string]json.RawMessage
	if err := json.Unmarshal(rec.Body.Bytes(), &m); err != nil {
		t.Fatal(err)
	}
	return m, rec.Body.String()
}

func keyedConfig(t *testing.T, adminSum, userSum string) *config.Config {
	t.Helper()
	cfg, err := config.Parse([]byte("providers: {p: {kind: fake, fake: {reply: hi}}}\n" +
		"routes: {m: {targets: [{provider: p, model: x}]}, hidden: {targets: [{provider: p, model: secret-upstream-id}]}}\n" +
		"teams:\n  ops: {admin: true, keys: [{id: ko, sha256: \"" + adminSum + "\"}]}\n" +
		"  dev: {routes: [m], keys: [{id: kd, sha256: \"" + userSum + "\"}]}\n"))
	if err != nil {
		t.Fatal(err)
	}
	return cfg
}

// TestReloadNeverTurnsAKeyedGatewayKeyless is the review's attack: editing
// the config to `teams: {}` while a keyed gateway ran made it serve every
// caller without a key. The reload is refused, the old config stays, and
// the admin view of /healthz names the failed reload.
func TestReloadNeverTurnsAKeyedGatewayKeyless(t *testing.T) {
	adminKey, adminSum, _ := teamkey.New()
	userKey, userSum, _ := teamkey.New()
	cfg := keyedConfig(t, adminSum, userSum)
	g, err := Build(context.Background(), cfg, embedded.OpenMemory(), BuildOptions{Logger: slog.New(slog.DiscardHandler), AnonymousWithoutTeams: true})
	if err != nil {
		t.Fatal(err)
	}
	defer g.Close()
	for _, teams := range []string{"teams: {}\n", ""} {
		keyless, err := config.Parse([]byte(fakeConfig + teams))
		if err != nil {
			t.Fatal(err)
		}
		if err := g.Reload(context.Background(), keyless); !errors.Is(err, ErrKeylessReload) {
			t.Fatalf("reload to %q: %v, want ErrKeylessReload", teams, err)
		}
	}
	if g.Config() != cfg {
		t.Fatal("the refused config is in force")
	}
	if rec := chat(t, g.Handler, "m", ""); rec.Code != http.StatusUnauthorized {
		t.Errorf("no key after the refused reload: %d, want 401", rec.Code)
	}
	if rec := chat(t, g.Handler, "m", userKey); rec.Code != 200 {
		t.Errorf("a team key after the refused reload: %d %s", rec.Code, rec.Body)
	}
	admin, body := healthz(t, g.Handler, "gw.example", adminKey)
	var cs struct {
		Version  string    `json:"version"`
		LoadedAt time.Time `json:"loaded_at"`
		Failed   *struct {
			At    time.Time `json:"at"`
			Error string    `json:"error"`
		} `json:"last_failed_reload"`
	}
	if err := json.Unmarshal(admin["config"], &cs); err != nil || cs.Failed == nil ||
		!strings.Contains(cs.Failed.Error, "refused") || cs.Failed.At.IsZero() || cs.Version != configVersion(cfg) || cs.LoadedAt.IsZero() {
		t.Errorf("admin healthz config = %s", admin["config"])
	}
	if !strings.Contains(body, "secret-upstream-id") || admin["targets"] == nil {
		t.Errorf("admin healthz lacks the targets: %s", body)
	}
	// A team may still get a config with other teams.
	other := keyedConfig(t, adminSum, userSum)
	if err := g.Reload(context.Background(), other); err != nil {
		t.Fatal(err)
	}
}

// TestHealthzDetailNeedsAnAdminKey: routes hidden from teams, upstream model
// ids, key fingerprints and breaker state are for admin teams only; anyone
// else learns whether the gateway serves and its version.
func TestHealthzDetailNeedsAnAdminKey(t *testing.T) {
	adminKey, adminSum, _ := teamkey.New()
	userKey, userSum, _ := teamkey.New()
	t.Setenv("HEALTHZ_TEST_KEY", "sk-healthz-SENTINEL-0000000000")
	cfg := keyedConfig(t, adminSum, userSum)
	g, err := Build(context.Background(), cfg, embedded.OpenMemory(), BuildOptions{Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	defer g.Close()
	for who, key := range map[string]string{"no key": "", "a team key": userKey, "a bad key": "llmgw_nope"} {
		m, body := healthz(t, g.Handler, "gw.example", key)
		if len(m) != 2 || string(m["status"]) != `"ok"` || m["version"] == nil {
			t.Errorf("%s: healthz = %s, want only status and version", who, body)
		}
	}
	m, body := healthz(t, g.Handler, "gw.example", adminKey)
	if m["routes"] == nil || m["targets"] == nil || m["config"] == nil || !strings.Contains(body, "hidden") {
		t.Errorf("admin: healthz = %s", body)
	}
}

// TestKeylessLocalGatewayServesOnlyLocalHosts: DNS rebinding. A keyless
// gateway answers a request carrying Host: attacker.example with 403 in
// the client API's error shape and no upstream call; /healthz shows such a
// request only the public view; the bound address and loopback names
// serve.
func TestKeylessLocalGatewayServesOnlyLocalHosts(t *testing.T) {
	cfg, err := config.Parse([]byte(fakeConfig))
	if err != nil {
		t.Fatal(err)
	}
	g, err := Build(context.Background(), cfg, embedded.OpenMemory(), BuildOptions{Logger: slog.New(slog.DiscardHandler),
		AnonymousWithoutTeams: true, BoundHost: "127.0.0.9"})
	if err != nil {
		t.Fatal(err)
	}
	defer g.Close()
	for _, path := range []string{"/v1/chat/completions", "/v1/messages"} {
		for host, want := range map[string]int{"attacker.example:8080": 403, "127.0.0.1:8080": 200, "localhost": 200, "127.0.0.9:4000": 200} {
			body := `{"model":"m","max_tokens":5,"messages":[{"role":"user","content":"x"}]}`
			req := httptest.NewRequest(http.MethodPost, path, strings.NewReader(body))
			req.Host = host
			req.Header.Set("Content-Type", "application/json")
			rec := httptest.NewRecorder()
			g.Handler.ServeHTTP(rec, req)
			if rec.Code != want {
				t.Errorf("%s Host %s: %d %s, want %d", path, host, rec.Code, rec.Body, want)
			}
			if want == 403 {
				shape := `"error":{"message"`
				if path == "/v1/messages" {
					shape = `"type":"error","error":{"type":"permission_error"`
				}
				if !strings.Contains(rec.Body.String(), shape) || !strings.Contains(rec.Body.String(), "host") {
					t.Errorf("%s: refusal %s is not in the API's shape", path, rec.Body)
				}
			}
		}
	}
	if m, body := healthz(t, g.Handler, "attacker.example", ""); len(m) != 2 {
		t.Errorf("keyless, foreign Host: healthz = %s, want the public view", body)
	}
	if m, body := healthz(t, g.Handler, "127.0.0.1:8080", ""); m["targets"] == nil {
		t.Errorf("keyless, local Host: healthz = %s, want the full view", body)
	}
}

// TestConfigWatcherKeepsTheKeyedConfigAndReportsFailedEdits runs the local
// file watcher: an edit to `teams: {}` and a syntax error are each refused,
// the config in force stays, and /healthz (admin) names the last failure.
func TestConfigWatcherKeepsTheKeyedConfigAndReportsFailedEdits(t *testing.T) {
	adminKey, adminSum, _ := teamkey.New()
	_, userSum, _ := teamkey.New()
	cfg := keyedConfig(t, adminSum, userSum)
	g, err := Build(context.Background(), cfg, embedded.OpenMemory(), BuildOptions{Logger: slog.New(slog.DiscardHandler), AnonymousWithoutTeams: true})
	if err != nil {
		t.Fatal(err)
	}
	defer g.Close()
	path := filepath.Join(t.TempDir(), "gw.yaml")
	if err := os.WriteFile(path, []byte(fakeConfig+"teams: {x: {}}\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go watchConfig(ctx, path, time.Millisecond, g.Reload, g.ReloadFailed, slog.New(slog.DiscardHandler))
	for i, edit := range []struct{ doc, want string }{
		{fakeConfig + "teams: {}\n", "refused"},
		{fakeConfig + "teams: {a: [\n", "YAML"},
	} {
		before := time.Now()
		// Polled (not timed): the bound only turns a missing failure into a
		// test failure instead of a hang. The edit is written again with a
		// different size each round (the watcher may start after a write,
		// or see two within one modification-time tick), renamed into place
		// so it never reads a half-written file.
		for n, deadline := 0, time.Now().Add(time.Minute); ; n++ {
			if time.Now().After(deadline) {
				t.Fatalf("edit %d: no failed reload recorded", i)
			}
			tmp := path + ".new"
			if err := os.WriteFile(tmp, []byte(edit.doc+strings.Repeat("#", n+10*i+1)+"\n"), 0o600); err != nil {
				t.Fatal(err)
			}
			if err := os.Rename(tmp, path); err != nil {
				t.Fatal(err)
			}
			st := g.cfgState.get()
			// (A failure of the previous edit may still arrive first.)
			if f := st.LastFailedReload; f != nil && !f.At.Before(before) && strings.Contains(f.Error, edit.want) {
				break
			}
			time.Sleep(time.Millisecond)
		}
		if g.Config() != cfg {
			t.Fatalf("edit %d replaced the config in force", i)
		}
	}
	if m, _ := healthz(t, g.Handler, "x", adminKey); m["config"] == nil {
		t.Error("no config status in the admin view")
	}
}
