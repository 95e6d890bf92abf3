package app

import (
	"context"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/llmgw/llmgw/pkg/config"
	"github.com/llmgw/llmgw/pkg/store"
	"github.com/llmgw/llmgw/pkg/store/embedded"
	"github.com/llmgw/llmgw/pkg/teamkey"
)

// recorded is a fake stateful component: it records its Flush and Close
// calls (and whether the gateway's store was still open at each).
type recorded struct {
	mu     sync.Mutex
	calls  []string
	alive  func() bool // reports whether the store is still open
	closed chan struct{}
}

func newRecorded(alive func() bool) *recorded {
	return &recorded{alive: alive, closed: make(chan struct{})}
}

func (r *recorded) Flush(context.Context) error { r.note("flush"); return nil }
func (r *recorded) Close() error                { r.note("close"); close(r.closed); return nil }

func (r *recorded) note(call string) {
	if r.alive != nil && !r.alive() {
		call += " after the store closed"
	}
	r.mu.Lock()
	r.calls = append(r.calls, call)
	r.mu.Unlock()
}

func (r *recorded) got() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.calls)
}

// storeAlive reports whether the embedded store file at path is still held
// open (bbolt locks it: a second open fails while the gateway has it).
func storeAlive(path string) func() bool {
	return func() bool {
		st, err := embedded.Open(path, embedded.WithNoSync())
		if err != nil {
			return true
		}
		st.Close()
		return false
	}
}

// addrWriter collects log output and hands over the address of the
// "gateway listening" line.
type addrWriter struct {
	mu   sync.Mutex
	buf  strings.Builder
	addr chan string
}

var listeningRE = regexp.MustCompile(`"addr":"(http://[0-9.:]+)"`)

func (w *addrWriter) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.buf.Write(p)
	if m := listeningRE.FindSubmatch(p); m != nil {
		w.addr <- string(m[1])
	}
	return len(p), nil
}

const fakeConfig = "providers: {p: {kind: fake, fake: {reply: hi}}}\nroutes: {m: {targets: [{provider: p, model: x}]}}\n"

func chat(t *testing.T, h http.Handler, model, key string) *httptest.ResponseRecorder {
	t.Helper()
	req := httptest.NewRequest(http.MethodPost, "/v1/chat/completions",
		strings.NewReader(`{"model":"`+model+`","messages":[{"role":"user","content":"x"}]}`))
	req.Header.Set("Content-Type", "application/json")
	if key != "" {
		req.Header.Set("Authorization", "Bearer "+key)
	}
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	return rec
}

// TestAddedComponentIsFlushedAndClosedLocallyAndOnLambda: a component
// added to the gateway's list is flushed, then closed, by the local
// server's shutdown (RunLocal ending on its context) and by the Lambda
// path's SIGTERM handler (the func RunLambda registers), while the store
// is still open; it comes after the gateway's own components.
func TestAddedComponentIsFlushedAndClosedLocallyAndOnLambda(t *testing.T) {
	dir := t.TempDir()
	cfgPath := filepath.Join(dir, "gw.yaml")
	if err := os.WriteFile(cfgPath, []byte(fakeConfig), 0o600); err != nil {
		t.Fatal(err)
	}

	t.Run("local", func(t *testing.T) {
		statePath := filepath.Join(dir, "state.db")
		fake := newRecorded(storeAlive(statePath))
		logs := &addrWriter{addr: make(chan string, 1)}
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		done := make(chan error, 1)
		go func() {
			done <- RunLocal(ctx, LocalOptions{ConfigPath: cfgPath, Addr: "127.0.0.1:0", Logger: slog.New(slog.NewJSONHandler(logs, nil)),
				Store: StoreOptions{StatePath: statePath}, ReloadEvery: time.Hour, extra: []Component{fake}})
		}()
		var base string
		select {
		case base = <-logs.addr:
		case err := <-done:
			t.Fatalf("RunLocal returned before listening: %v", err)
		}
		resp, err := http.Post(base+"/v1/chat/completions", "application/json", strings.NewReader(`{"model":"m","messages":[{"role":"user","content":"x"}]}`))
		if err != nil {
			t.Fatal(err)
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		if resp.StatusCode != 200 {
			t.Fatalf("status %d", resp.StatusCode)
		}
		if got := fake.got(); len(got) != 0 {
			t.Fatalf("calls before shutdown: %v", got)
		}
		cancel()
		if err := <-done; err != nil {
			t.Fatalf("RunLocal: %v", err)
		}
		if got := fake.got(); !slices.Equal(got, []string{"flush", "close"}) {
			t.Fatalf("local shutdown called %v, want flush then close with the store open", got)
		}
		// The request's usage record was written before the store closed.
		st, err := embedded.Open(statePath)
		if err != nil {
			t.Fatal(err)
		}
		defer st.Close()
		n := 0
		st.Query(context.Background(), store.UsagePK(config.AnonymousTeam, time.Now()), "", "", func(store.Item) bool { n++; return true })
		if n != 1 {
			t.Fatalf("%d usage records after the local shutdown, want 1", n)
		}
	})

	t.Run("lambda", func(t *testing.T) {
		key, sum, err := teamkey.New()
		if err != nil {
			t.Fatal(err)
		}
		lambdaCfg := filepath.Join(dir, "lambda.yaml")
		if err := os.WriteFile(lambdaCfg, []byte(fakeConfig+"teams: {t: {keys: [{id: k1, sha256: \""+sum+"\"}]}}\n"), 0o600); err != nil {
			t.Fatal(err)
		}
		fake := newRecorded(nil)
		lg, err := newLambdaGateway(context.Background(), LambdaEnv{ConfigFile: lambdaCfg, Stage: "test"},
			slog.New(slog.NewTextHandler(io.Discard, nil)), io.Discard, []Component{fake})
		if err != nil {
			t.Fatal(err)
		}
		if rec := chat(t, lg, "m", key); rec.Code != 200 {
			t.Fatalf("status %d: %s", rec.Code, rec.Body)
		}
		names := lg.Gateway.Components()
		want := []string{"breaker", "retry budget", "key ledger", "team limiter"}
		if len(names) != len(want)+1 || !slices.Equal(names[:len(want)], want) {
			t.Fatalf("Lambda components %v, want %v then the added one", names, want)
		}
		if got := fake.got(); len(got) != 0 {
			t.Fatalf("calls before SIGTERM: %v", got)
		}
		lg.OnSIGTERM()
		if got := fake.got(); !slices.Equal(got, []string{"flush", "close"}) {
			t.Fatalf("SIGTERM called %v, want flush then close", got)
		}
		lg.OnSIGTERM() // a second signal shuts nothing down twice
		if got := fake.got(); len(got) != 2 {
			t.Fatalf("a second SIGTERM called %v", got)
		}
	})
}

// TestLocalComponentsInShutdownOrder: the local gateway's list, in the
// order Shutdown flushes and closes it (the order the data flows).
func TestLocalComponentsInShutdownOrder(t *testing.T) {
	cfg, err := config.Parse([]byte(fakeConfig))
	if err != nil {
		t.Fatal(err)
	}
	st, _, err := OpenStore(context.Background(), StoreOptions{StatePath: filepath.Join(t.TempDir(), "state.db")})
	if err != nil {
		t.Fatal(err)
	}
	g, err := Build(context.Background(), cfg, st, BuildOptions{Logger: slog.New(slog.DiscardHandler), AsyncRecords: true})
	if err != nil {
		t.Fatal(err)
	}
	defer g.Close()
	want := []string{"post-response runner", "usage record writer", "breaker", "retry budget", "key ledger", "team limiter"}
	if got := g.Components(); !slices.Equal(got, want) {
		t.Fatalf("components %v, want %v", got, want)
	}
}

// TestReloadReachesEveryComponentThroughTheApp: after Gateway.Reload
// every component serves the new config: the handler's routes, the
// authenticator's keys, the limiter's limits, the usage recorder's TTL,
// the rollups' teams and /v1/usage's teams. (A component holding the
// first config, or reading one of its own, fails its line here.)
func TestReloadReachesEveryComponentThroughTheApp(t *testing.T) {
	keyA, sumA, _ := teamkey.New()
	keyB, sumB, _ := teamkey.New()
	keyC, sumC, _ := teamkey.New()
	cfg1, err := config.Parse([]byte("providers: {p: {kind: fake, fake: {reply: hi}}}\n" +
		"routes: {m1: {targets: [{provider: p, model: x}]}}\n" +
		"teams: {a: {admin: true, keys: [{id: ka, sha256: \"" + sumA + "\"}]}}\n"))
	if err != nil {
		t.Fatal(err)
	}
	cfg2, err := config.Parse([]byte("providers: {p: {kind: fake, fake: {reply: hi}}, down: {kind: fake, fake: {fail: status, status: 503}}}\n" +
		"routes: {m2: {targets: [{provider: p, model: x}]}, m3: {attempts: 1, targets: [{provider: down, model: x}]}}\n" +
		"breaker: {consecutive_failures: 1}\n" +
		"usage: {ttl: 96h}\n" +
		"teams:\n" +
		"  b: {admin: true, keys: [{id: kb, sha256: \"" + sumB + "\"}], limits: {requests_per_minute: 1}}\n" +
		"  c: {keys: [{id: kc, sha256: \"" + sumC + "\"}]}\n"))
	if err != nil {
		t.Fatal(err)
	}
	st := embedded.OpenMemory()
	g, err := Build(context.Background(), cfg1, st, BuildOptions{Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	defer g.Close()
	if rec := chat(t, g.Handler, "m1", keyA); rec.Code != 200 {
		t.Fatalf("before the reload: %d %s", rec.Code, rec.Body)
	}
	if err := g.Reload(context.Background(), cfg2); err != nil {
		t.Fatal(err)
	}
	if g.Config() != cfg2 {
		t.Fatal("the app's config is not the reloaded one")
	}
	// Authenticator: the old key is gone, the new one works.
	if rec := chat(t, g.Handler, "m2", keyA); rec.Code != http.StatusUnauthorized {
		t.Errorf("the first config's key after the reload: %d, want 401", rec.Code)
	}
	// Handler: the new route serves, the old one is unknown.
	if rec := chat(t, g.Handler, "m2", keyB); rec.Code != 200 {
		t.Fatalf("the new route with the new key: %d %s", rec.Code, rec.Body)
	}
	if rec := chat(t, g.Handler, "m1", keyB); rec.Code != http.StatusNotFound {
		t.Errorf("the old route after the reload: %d, want 404", rec.Code)
	}
	// Limiter: the new config's limit (one request a minute) applies.
	if rec := chat(t, g.Handler, "m2", keyB); rec.Code != http.StatusTooManyRequests {
		t.Errorf("second request within the new limit of 1/min: %d, want 429", rec.Code)
	}
	// Recorder: the record of the new team expires after the new TTL.
	var expires time.Time
	st.Query(context.Background(), store.UsagePK("b", time.Now()), "", "", func(it store.Item) bool { expires = it.Expires; return true })
	if expires.IsZero() || expires.After(time.Now().Add(97*time.Hour)) {
		t.Errorf("usage record expires %v, want within the new config's 96h", expires)
	}
	// Breaker: the new config's rules (one failure trips) are in force.
	chat(t, g.Handler, "m3", keyC)
	hz := httptest.NewRecorder()
	hreq := httptest.NewRequest(http.MethodGet, "/healthz", nil)
	hreq.Header.Set("Authorization", "Bearer "+keyB) // breaker detail is the admin view
	g.Handler.ServeHTTP(hz, hreq)
	if !strings.Contains(hz.Body.String(), `"id":"down/x"`) || !strings.Contains(hz.Body.String(), `"state":"open"`) {
		t.Errorf("after one failure under consecutive_failures 1 the breaker is not open: %s", hz.Body)
	}
	// Rollups: the new config's teams.
	if teams := g.Roller.Teams(); !slices.Contains(teams, "b") || !slices.Contains(teams, "c") || slices.Contains(teams, "a") {
		t.Errorf("rollup teams %v after the reload", teams)
	}
	// /v1/usage: a team only the new config has is known.
	req := httptest.NewRequest(http.MethodGet, "/v1/usage?team=c", nil)
	req.Header.Set("Authorization", "Bearer "+keyB)
	rec := httptest.NewRecorder()
	g.Handler.ServeHTTP(rec, req)
	if rec.Code != 200 {
		t.Errorf("/v1/usage?team=c after the reload: %d %s", rec.Code, rec.Body)
	}
}
