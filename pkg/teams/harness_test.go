package teams_test

import (
	"bytes"
	"context"
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

	"github.com/llmgw/llmgw/pkg/exchange"
	"github.com/llmgw/llmgw/pkg/internal/testkit"

	"github.com/llmgw/llmgw/pkg/config"
	"github.com/llmgw/llmgw/pkg/server"
	"github.com/llmgw/llmgw/pkg/store"
	"github.com/llmgw/llmgw/pkg/teams"
	"github.com/llmgw/llmgw/pkg/usage"
	"github.com/llmgw/llmgw/pkg/usage/usagetest"
)

func ctxT(t testing.TB) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	t.Cleanup(cancel)
	return ctx
}

// syncBuffer is a goroutine-safe buffer (log sinks, process output).
type syncBuffer = testkit.SyncBuffer

// upstream is a scripted OpenAI-compatible provider.
type upstream struct {
	*httptest.Server
	hits atomic.Int32
}

// chunk builds one OpenAI stream chunk.
func chunk(choices string) string {
	return `data: {"id":"chatcmpl-1","object":"chat.completion.chunk","created":1741569952,"model":"up-model","choices":` + choices + "}\n\n"
}

func usageChunk(in, out int) string {
	return `data: {"id":"chatcmpl-1","object":"chat.completion.chunk","created":1741569952,"model":"up-model","choices":[],` +
		fmt.Sprintf(`"usage":{"prompt_tokens":%d,"completion_tokens":%d,"total_tokens":%d}}`, in, out, in+out) + "\n\n"
}

// reply answers like OpenAI with the given words: a stream when asked
// (with usage when asked), else one completion. Usage: 11 in, len(words) out.
func reply(w http.ResponseWriter, body []byte, words []string) {
	if !bytes.Contains(body, []byte(`"stream":true`)) {
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprintf(w, `{"id":"chatcmpl-1","object":"chat.completion","created":1741570283,"model":"up-model","choices":[{"index":0,"message":{"role":"assistant","content":%q},"finish_reason":"stop"}],"usage":{"prompt_tokens":11,"completion_tokens":%d,"total_tokens":%d}}`,
			strings.Join(words, ""), len(words), 11+len(words))
		return
	}
	w.Header().Set("Content-Type", "text/event-stream")
	w.WriteHeader(200)
	io.WriteString(w, chunk(`[{"index":0,"delta":{"role":"assistant","content":""},"finish_reason":null}]`))
	for _, s := range words {
		io.WriteString(w, chunk(fmt.Sprintf(`[{"index":0,"delta":{"content":%q},"finish_reason":null}]`, s)))
		w.(http.Flusher).Flush()
	}
	io.WriteString(w, chunk(`[{"index":0,"delta":{},"finish_reason":"stop"}]`))
	if bytes.Contains(body, []byte(`"include_usage":true`)) {
		io.WriteString(w, usageChunk(11, len(words)))
	}
	io.WriteString(w, "data: [DONE]\n\n")
}

func newUpstream(t *testing.T, fn func(w http.ResponseWriter, r *http.Request, body []byte)) *upstream {
	u := &upstream{}
	u.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		u.hits.Add(1)
		fn(w, r, body)
	}))
	t.Cleanup(u.Close)
	return u
}

// keyset holds fresh team keys, by name.
type keyset map[string]string

func newKeys(t *testing.T, names ...string) keyset {
	ks := keyset{}
	for _, n := range names {
		k, _, err := teams.NewKey()
		if err != nil {
			t.Fatal(err)
		}
		ks[n] = k
	}
	return ks
}

// expand replaces {hash:NAME} with the hash of key NAME and {url} with u.
func (ks keyset) expand(yaml, u string) string {
	for n, k := range ks {
		yaml = strings.ReplaceAll(yaml, "{hash:"+n+"}", teams.HashKey(k))
	}
	return strings.ReplaceAll(yaml, "{url}", u)
}

// baseYAML: route m (cheap target) and route other; teams search (m only,
// one revoked key), ads, gone (disabled) and ops (admin).
const baseYAML = `
defaults: {backoff_base: 1ms, backoff_max: 2ms, attempts: 1}
providers:
  up: {kind: openai, base_url: "{url}/v1"}
routes:
  m: {targets: [{provider: up, model: up-model}]}
  other: {targets: [{provider: up, model: up-other}]}
prices:
  "up/up-model": {input: 1, output: 2}
  "up/up-other": {input: 1, output: 2}
teams:
  search:
    keys: [{id: k1, sha256: "{hash:search}"}, {id: k0, sha256: "{hash:revoked}", revoked: true}]
    routes: [m]
    LIMITS
  ads:
    keys: [{id: k1, sha256: "{hash:ads}"}]
  gone:
    disabled: true
    keys: [{id: k1, sha256: "{hash:gone}"}]
  ops:
    admin: true
    keys: [{id: k1, sha256: "{hash:ops}"}]
`

// gw is a gateway under test: the real pkg/server handler with this
// package's Authenticator and Limiter and pkg/usage's Recorder and Cost.
type gw struct {
	*httptest.Server
	up   *upstream
	keys keyset
	cfg  atomic.Pointer[config.Config]
	spy  *usagetest.Spy
	sw   *usagetest.Switch
	logs *syncBuffer
	clk  *usagetest.Clock
	auth *teams.Authenticator
	lim  *teams.Limiter
	rec  *usage.Recorder
	yaml string

	inflight sync.WaitGroup
}

// gwOptions shape a test gateway.
type gwOptions struct {
	limits   string // YAML lines under teams.search (e.g. "limits: {...}")
	extra    string // YAML appended to the config
	upstream func(w http.ResponseWriter, r *http.Request, body []byte)
	open     usagetest.Opener
	now      time.Time // the limiter's clock (default 2026-11-03T10:00:30Z)
}

func newGW(t *testing.T, o gwOptions) *gw {
	t.Helper()
	if o.upstream == nil {
		o.upstream = func(w http.ResponseWriter, _ *http.Request, body []byte) { reply(w, body, []string{"Hello", " world"}) }
	}
	if o.now.IsZero() {
		o.now = time.Date(2026, 11, 3, 10, 0, 30, 0, time.UTC)
	}
	g := &gw{keys: newKeys(t, "search", "revoked", "ads", "gone", "ops"), logs: &syncBuffer{}, clk: usagetest.NewClock(o.now)}
	g.up = newUpstream(t, o.upstream)
	g.yaml = strings.Replace(g.keys.expand(baseYAML, g.up.URL), "LIMITS", o.limits, 1) + o.extra
	if !strings.Contains(o.extra, "usage:") {
		g.yaml += "\nusage: {store_timeout: 5s}\n"
	}
	g.setConfig(t, g.yaml)
	var base store.Store
	if o.open != nil {
		base = o.open(t, g.clk.Now) // the store and the limiter share a clock
	} else {
		base = usagetest.Down{}
	}
	g.sw = &usagetest.Switch{Store: base}
	g.spy = usagetest.NewSpy(g.sw)
	log := slog.New(slog.NewJSONHandler(g.logs, nil))
	current := func() *config.Config { return g.cfg.Load() }
	g.auth = teams.NewAuthenticator(current, log)
	g.lim = teams.NewLimiter(g.spy, current, log)
	g.lim.Now = g.clk.Now
	g.rec = usage.NewRecorder(g.spy, current, log)
	h, err := server.New(context.Background(), g.cfg.Load(), server.Options{
		Logger: log,
		Front: server.Front{
			Authenticate: g.auth.Authenticate,
			Admit:        g.lim.Admit,
		},
		Upstream: server.Upstream{
			Sleep: func(ctx context.Context, d time.Duration) error { return ctx.Err() },
		},
		Reporting: server.Reporting{
			Record: g.rec.Record,
			Cost:   usage.Cost,
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	// Usage records and settlement happen after the response's last byte,
	// before the handler returns: call waits for the handlers.
	g.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		g.inflight.Add(1)
		defer g.inflight.Done()
		h.ServeHTTP(w, r)
	}))
	t.Cleanup(g.Close)
	return g
}

// setConfig swaps the config in force (what an SSM reload does).
func (g *gw) setConfig(t *testing.T, yaml string) {
	t.Helper()
	cfg, err := config.Parse([]byte(yaml))
	if err != nil {
		t.Fatalf("config: %v\n%s", err, yaml)
	}
	g.cfg.Store(cfg)
}

// call posts a chat request with a key ("" sends no Authorization).
func (g *gw) call(t *testing.T, key, body string, hdr ...string) (*http.Response, string) {
	t.Helper()
	req, _ := http.NewRequest(http.MethodPost, g.URL+"/v1/chat/completions", strings.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	if key != "" {
		req.Header.Set("Authorization", "Bearer "+key)
	}
	for i := 0; i+1 < len(hdr); i += 2 {
		req.Header.Set(hdr[i], hdr[i+1])
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("post: %v", err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	g.inflight.Wait()
	return resp, string(b)
}

// records returns the usage records stored for team (the server stamps
// records with the wall clock: today's partition, and yesterday's just
// after midnight).
func (g *gw) records(t *testing.T, team string) []exchange.Record {
	t.Helper()
	var out []exchange.Record
	days := []string{store.Day(time.Now().Add(-time.Minute))}
	if d := store.Day(time.Now()); d != days[0] {
		days = append(days, d)
	}
	for _, d := range days {
		day, _ := time.Parse(time.DateOnly, d)
		err := g.sw.Query(ctxT(t), store.UsagePK(team, day), "", "", func(it store.Item) bool {
			var r exchange.Record
			if err := usage.DecodeRecord(it, &r); err != nil {
				t.Fatal(err)
			}
			out = append(out, r)
			return true
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	return out
}

const chatBody = `{"model":"m","messages":[{"role":"user","content":"hi"}]}`
