package breaker_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/llmgw/llmgw/pkg/breaker"
	"github.com/llmgw/llmgw/pkg/config"
	"github.com/llmgw/llmgw/pkg/internal/testkit"
	"github.com/llmgw/llmgw/pkg/keyledger"
	"github.com/llmgw/llmgw/pkg/server"
	"github.com/llmgw/llmgw/pkg/store/storetest"
)

// End-to-end: two gateway handlers (two "instances") over ONE store, each
// with its own breaker and key ledger, in front of scripted
// OpenAI-compatible upstreams.
func TestEndToEnd(t *testing.T) {
	storetest.RunBackends(t, []storetest.Scenario{
		{Name: "TripOnOneInstanceSkipsDeadPrimaryOnTheOther", Fn: testE2EBreaker},
		{Name: "RateLimitedKeyMovesBothInstancesToNextKey", Fn: testE2EKeys},
	})
}

// fakeUpstream is an OpenAI-compatible upstream on loopback that counts
// requests per Authorization header.
type fakeUpstream struct {
	*httptest.Server
	hits    atomic.Int32
	mu      sync.Mutex
	byAuth  map[string]int
	respond atomic.Pointer[func(w http.ResponseWriter, auth string)]
}

func newFakeUpstream(t *testing.T) *fakeUpstream {
	u := &fakeUpstream{byAuth: map[string]int{}}
	u.set(func(w http.ResponseWriter, _ string) { completion(w, "hello") })
	u.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
		auth := r.Header.Get("Authorization")
		u.hits.Add(1)
		u.mu.Lock()
		u.byAuth[auth]++
		u.mu.Unlock()
		(*u.respond.Load())(w, auth)
	}))
	t.Cleanup(u.Close)
	return u
}

func (u *fakeUpstream) set(f func(w http.ResponseWriter, auth string)) { u.respond.Store(&f) }

func (u *fakeUpstream) hitsFor(auth string) int {
	u.mu.Lock()
	defer u.mu.Unlock()
	return u.byAuth[auth]
}

func completion(w http.ResponseWriter, text string) {
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("x-ratelimit-remaining-requests", "4999")
	w.Header().Set("x-ratelimit-remaining-tokens", "1999000")
	fmt.Fprintf(w, `{"id":"chatcmpl-B9MHDbslfkBeAs8l4bebGdFOJ6PeG","object":"chat.completion","created":1741570283,"model":"gpt-4.1-2025-04-14","choices":[{"index":0,"message":{"role":"assistant","content":%q,"refusal":null,"annotations":[]},"logprobs":null,"finish_reason":"stop"}],"usage":{"prompt_tokens":11,"completion_tokens":2,"total_tokens":13}}`, text)
}

func upstreamError(w http.ResponseWriter, status int, hdr ...string) {
	for i := 0; i+1 < len(hdr); i += 2 {
		w.Header().Set(hdr[i], hdr[i+1])
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	io.WriteString(w, `{"error":{"message":"nope","type":"server_error","param":null,"code":null}}`)
}

// e2eSecrets are the provider keys the config's references resolve to.
var e2eSecrets = map[string]string{"E2E_KEY_ONE": "sk-e2e-one", "E2E_KEY_TWO": "sk-e2e-two"}

func resolveTestKey(_ context.Context, ref config.KeyRef) (string, bool, error) {
	s, ok := e2eSecrets[ref.Env]
	return s, ok, nil
}

// instance is one gateway instance: the real handler with its own breaker
// and ledger over the scenario's store, served on loopback.
type instance struct {
	*httptest.Server
	br   *breaker.Breaker
	kl   *keyledger.Ledger
	logs *testkit.SyncBuffer
}

func newInstance(t *testing.T, e *storetest.Env, cfg *config.Config) *instance {
	t.Helper()
	logs := &testkit.SyncBuffer{}
	log := slog.New(slog.NewJSONHandler(logs, nil))
	br := breaker.New(e.Store, cfg.Breaker, breaker.Options{Now: e.Now, StoreTimeout: generous, Logger: log})
	t.Cleanup(br.Wait)
	kl := keyledger.New(e.Store, keyledger.Options{Now: e.Now, StoreTimeout: generous, Logger: log})
	t.Cleanup(kl.Wait)
	h, err := server.New(context.Background(), cfg, server.Options{
		Logger: log,
		Upstream: server.Upstream{
			Breakers:   br,
			Keys:       kl,
			ResolveKey: resolveTestKey,
			Sleep:      func(ctx context.Context, _ time.Duration) error { return ctx.Err() }, // never wait on backoff
		},
	})
	if err != nil {
		t.Fatalf("server.New: %v", err)
	}
	in := &instance{Server: httptest.NewServer(h), br: br, kl: kl, logs: logs}
	t.Cleanup(in.Close)
	return in
}

// chat sends a non-streaming request and returns the status and the
// provider that served it.
func (in *instance) chat(t *testing.T) (int, string) {
	t.Helper()
	resp, err := http.Post(in.URL+"/v1/chat/completions", "application/json",
		strings.NewReader(`{"model":"m","messages":[{"role":"user","content":"hi"}]}`))
	if err != nil {
		t.Fatalf("post: %v", err)
	}
	defer resp.Body.Close()
	io.Copy(io.Discard, resp.Body)
	// Background store work after the request (flushes, writes) lands
	// before the test looks at another instance.
	in.br.Wait()
	in.kl.Wait()
	return resp.StatusCode, resp.Header.Get("x-gateway-provider")
}

// health returns the breaker state and key fingerprints+availability of
// one target from GET /healthz.
func (in *instance) health(t *testing.T, target string) (state string, keysAvail map[string]bool) {
	t.Helper()
	resp, err := http.Get(in.URL + "/healthz")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var h struct {
		Targets []struct {
			ID      string `json:"id"`
			Breaker struct {
				State string `json:"state"`
			} `json:"breaker"`
			Keys []struct {
				Fingerprint string `json:"fingerprint"`
				Available   bool   `json:"available"`
			} `json:"keys"`
		} `json:"targets"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&h); err != nil {
		t.Fatal(err)
	}
	for _, tg := range h.Targets {
		if tg.ID == target {
			keysAvail = map[string]bool{}
			for _, k := range tg.Keys {
				keysAvail[k.Fingerprint] = k.Available
			}
			return tg.Breaker.State, keysAvail
		}
	}
	t.Fatalf("no target %s in /healthz", target)
	return "", nil
}

func e2eConfig(t *testing.T, primary, secondary string, extra string) *config.Config {
	t.Helper()
	yaml := fmt.Sprintf(`
defaults:
  backoff_base: 1ms
  backoff_max: 2ms
  retry_after_cap: 60s
%s
providers:
  primary:
    kind: openai
    base_url: %q
    keys: [{env: E2E_KEY_ONE}, {env: E2E_KEY_TWO, priority: 1}]
  secondary: {kind: openai, base_url: %q}
routes:
  m:
    targets:
      - {provider: primary, model: up-primary}
      - {provider: secondary, model: up-secondary}
`, extra, primary+"/v1", secondary+"/v1")
	cfg, err := config.Parse([]byte(yaml))
	if err != nil {
		t.Fatalf("config: %v", err)
	}
	return cfg
}

func testE2EBreaker(t *testing.T, e *storetest.Env) {
	primary, secondary := newFakeUpstream(t), newFakeUpstream(t)
	cfg := e2eConfig(t, primary.URL, secondary.URL, "breaker: {consecutive_failures: 2, cooldown: 30s}")
	a, b := newInstance(t, e, cfg), newInstance(t, e, cfg)
	for name, in := range map[string]*instance{"A": a, "B": b} {
		if st, prov := in.chat(t); st != 200 || prov != "primary" {
			t.Fatalf("%s warm-up: %d from %q", name, st, prov)
		}
	}

	// The primary dies. A's request fails on it twice (two attempts), which
	// trips its breaker, and is served by the secondary.
	primary.set(func(w http.ResponseWriter, _ string) { upstreamError(w, http.StatusServiceUnavailable) })
	if st, prov := a.chat(t); st != 200 || prov != "secondary" {
		t.Fatalf("A with a dead primary: %d from %q", st, prov)
	}
	if state, _ := a.health(t, "primary/up-primary"); state != "open" {
		t.Fatalf("A's breaker for the primary is %q, want open", state)
	}
	hits := primary.hits.Load()

	// One cache period later, B's next request goes straight to the
	// secondary: the primary is not touched.
	e.Advance(breaker.DefaultCacheTTL)
	if st, prov := b.chat(t); st != 200 || prov != "secondary" {
		t.Fatalf("B: %d from %q", st, prov)
	}
	if n := primary.hits.Load(); n != hits {
		t.Fatalf("B sent %d requests to the primary that A's instance had tripped", n-hits)
	}
	if state, _ := b.health(t, "primary/up-primary"); state != "open" {
		t.Fatalf("B's /healthz shows the primary's breaker %q, want open", state)
	}
	if n := a.logs.Count(`"msg":"breaker"`); n != 1 || b.logs.Count(`"to":"open"`) != 1 {
		t.Fatalf("want one transition line on each instance:\nA:\n%s\nB:\n%s", a.logs, b.logs)
	}
	if st, prov := a.chat(t); st != 200 || prov != "secondary" || primary.hits.Load() != hits {
		t.Fatalf("A again: %d from %q, primary hits %d -> %d", st, prov, hits, primary.hits.Load())
	}
}

func testE2EKeys(t *testing.T, e *storetest.Env) {
	primary, secondary := newFakeUpstream(t), newFakeUpstream(t)
	cfg := e2eConfig(t, primary.URL, secondary.URL, "")
	a, b := newInstance(t, e, cfg), newInstance(t, e, cfg)
	const one, two = "Bearer sk-e2e-one", "Bearer sk-e2e-two"
	for name, in := range map[string]*instance{"A": a, "B": b} {
		if st, prov := in.chat(t); st != 200 || prov != "primary" {
			t.Fatalf("%s warm-up: %d from %q", name, st, prov)
		}
	}
	if primary.hitsFor(one) != 2 || primary.hitsFor(two) != 0 {
		t.Fatalf("warm-up used the wrong key: %v", primary.byAuth)
	}

	// Key 1 hits its rate limit: 429 with Retry-After: 30.
	primary.set(func(w http.ResponseWriter, auth string) {
		if auth == one {
			upstreamError(w, http.StatusTooManyRequests, "Retry-After", "30")
			return
		}
		completion(w, "hello from key 2")
	})
	if st, prov := a.chat(t); st != 200 || prov != "primary" {
		t.Fatalf("A after key 1's 429: %d from %q", st, prov)
	}
	if primary.hitsFor(one) != 3 || primary.hitsFor(two) != 1 {
		t.Fatalf("A should have tried key 1 once and moved to key 2: %v", primary.byAuth)
	}

	e.Advance(keyledger.DefaultCacheTTL)
	for name, in := range map[string]*instance{"A": a, "B": b} {
		if st, prov := in.chat(t); st != 200 || prov != "primary" {
			t.Fatalf("%s: %d from %q", name, st, prov)
		}
	}
	if primary.hitsFor(one) != 3 || primary.hitsFor(two) != 3 {
		t.Fatalf("key 1 was used during its rate limit: %v", primary.byAuth)
	}
	if _, avail := b.health(t, "primary/up-primary"); len(avail) != 2 || avail[key(one)] || !avail[key(two)] {
		t.Fatalf("B's /healthz key availability = %v", avail)
	}

	// After the reset, key 1 is first again on both.
	primary.set(func(w http.ResponseWriter, _ string) { completion(w, "hello") })
	e.Advance(30 * time.Second)
	for name, in := range map[string]*instance{"A": a, "B": b} {
		if st, _ := in.chat(t); st != 200 {
			t.Fatalf("%s after the reset: %d", name, st)
		}
	}
	if primary.hitsFor(one) != 5 {
		t.Fatalf("key 1 not back after its reset: %v", primary.byAuth)
	}
}

// key returns the fingerprint of an Authorization header's key.
func key(auth string) string { return keyledger.Fingerprint(strings.TrimPrefix(auth, "Bearer ")) }
