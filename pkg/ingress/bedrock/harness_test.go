package bedrock_test

import (
	"context"
	"crypto/x509"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/llmgw/llmgw/pkg/cache"
	"github.com/llmgw/llmgw/pkg/config"
	"github.com/llmgw/llmgw/pkg/exchange"
	"github.com/llmgw/llmgw/pkg/server"
	"github.com/llmgw/llmgw/pkg/store/embedded"
	"github.com/llmgw/llmgw/pkg/teams"
	"github.com/llmgw/llmgw/pkg/usage"
)

// The loopback harness of the Bedrock ingress tests: the real gateway
// handler with a team key, a route "claude" whose first target is dead
// (connection refused) and whose second is a fake Anthropic API speaking
// its exact wire format.

const (
	teamKey     = "llmgw_bedrock-ingress-test-key-0123456789abcdef"
	upstreamKey = "sk-ant-api03-bedrock-ingress-upstream-secret"
	profileID   = "us.anthropic.claude-sonnet-4-5-20250929-v1:0"
)

// upstream is a fake Anthropic Messages API that records what it got.
type upstream struct {
	*httptest.Server
	mu   sync.Mutex
	seen []seenReq
	// cut, when set, ends a stream after its first text delta by closing
	// the connection.
	cut bool
}

type seenReq struct {
	path   string
	header http.Header
	body   string
}

func (u *upstream) requests() []seenReq {
	u.mu.Lock()
	defer u.mu.Unlock()
	return append([]seenReq(nil), u.seen...)
}

func newUpstream(t *testing.T, cut bool) *upstream {
	u := &upstream{cut: cut}
	u.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		u.mu.Lock()
		u.seen = append(u.seen, seenReq{r.URL.Path, r.Header.Clone(), string(b)})
		u.mu.Unlock()
		w.Header().Set("request-id", "req_upstream_1")
		switch {
		case r.URL.Path == "/v1/messages/count_tokens":
			w.Header().Set("Content-Type", "application/json")
			io.WriteString(w, `{"input_tokens":42}`)
		case strings.Contains(string(b), `"stream":true`):
			u.stream(w)
		default:
			w.Header().Set("Content-Type", "application/json")
			io.WriteString(w, `{"id":"msg_01Bedrock","type":"message","role":"assistant","model":"claude-sonnet-4-5-20250929","content":[{"type":"text","text":"Hello from Claude"}],"stop_reason":"end_turn","stop_sequence":null,"usage":{"input_tokens":12,"cache_creation_input_tokens":0,"cache_read_input_tokens":0,"output_tokens":4}}`)
		}
	}))
	t.Cleanup(u.Close)
	return u
}

// stream writes Anthropic's server-sent events, flushing each.
func (u *upstream) stream(w http.ResponseWriter) {
	w.Header().Set("Content-Type", "text/event-stream; charset=utf-8")
	w.WriteHeader(http.StatusOK)
	frames := []string{
		`event: message_start` + "\n" + `data: {"type":"message_start","message":{"id":"msg_01Bedrock","type":"message","role":"assistant","model":"claude-sonnet-4-5-20250929","content":[],"stop_reason":null,"stop_sequence":null,"usage":{"input_tokens":12,"cache_creation_input_tokens":0,"cache_read_input_tokens":0,"output_tokens":1}}}`,
		`event: ping` + "\n" + `data: {"type": "ping"}`,
		`event: content_block_start` + "\n" + `data: {"type":"content_block_start","index":0,"content_block":{"type":"text","text":""}}`,
		`event: content_block_delta` + "\n" + `data: {"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"Hello"}}`,
		`event: content_block_delta` + "\n" + `data: {"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":" from Claude"}}`,
		`event: content_block_stop` + "\n" + `data: {"type":"content_block_stop","index":0}`,
		`event: message_delta` + "\n" + `data: {"type":"message_delta","delta":{"stop_reason":"end_turn","stop_sequence":null},"usage":{"output_tokens":4}}`,
		`event: message_stop` + "\n" + `data: {"type":"message_stop"}`,
	}
	for i, f := range frames {
		io.WriteString(w, f+"\n\n")
		w.(http.Flusher).Flush()
		if u.cut && i == 3 {
			conn, _, err := http.NewResponseController(w).Hijack()
			if err == nil {
				conn.Close()
			}
			return
		}
	}
}

// deadURL is the URL of a port nothing listens on any more.
func deadURL(t *testing.T) string {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close()
	return "http://" + addr
}

// gateway is the gateway on loopback, over TLS (the Go SDK sends a
// bearer token over HTTPS only, as a Function URL serves).
type gateway struct {
	URL    string
	client *http.Client
	cert   *x509.Certificate
	mu     sync.Mutex
	recs   []exchange.Record
}

func (g *gateway) records(t *testing.T, n int) []exchange.Record {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for {
		g.mu.Lock()
		recs := append([]exchange.Record(nil), g.recs...)
		g.mu.Unlock()
		if len(recs) >= n || time.Now().After(deadline) {
			if len(recs) != n {
				t.Fatalf("%d usage records, want %d", len(recs), n)
			}
			return recs
		}
		time.Sleep(2 * time.Millisecond)
	}
}

// newGateway serves route "claude" over a dead target and live (a fake
// Anthropic API), with a team key.
func newGateway(t *testing.T, live *upstream) *gateway {
	t.Helper()
	t.Setenv("LLMGW_TEST_BEDROCK_UPSTREAM_KEY", upstreamKey)
	return gatewayWith(t, fmt.Sprintf("  live: {kind: anthropic, base_url: %q, keys: [{env: LLMGW_TEST_BEDROCK_UPSTREAM_KEY}]}\n", live.URL),
		"claude-live")
}

// gatewayWith serves route "claude" (listing profileID) over a dead
// Anthropic target, then provider live (given in providers) with model.
func gatewayWith(t *testing.T, providers, model string) *gateway {
	return gatewayRoute(t, providers, model, "")
}

// gatewayRoute is gatewayWith with more settings of the route (YAML
// lines indented four spaces), and the response cache stage wired.
func gatewayRoute(t *testing.T, providers, model, extra string) *gateway {
	t.Helper()
	t.Setenv("LLMGW_TEST_BEDROCK_UPSTREAM_KEY", upstreamKey)
	yaml := fmt.Sprintf(`defaults: {attempts: 1, backoff_base: 1ms, backoff_max: 2ms}
providers:
  dead: {kind: anthropic, base_url: %q, keys: [{env: LLMGW_TEST_BEDROCK_UPSTREAM_KEY}]}
%sroutes:
  claude:
%s    bedrock_model_ids: [%q]
    targets:
      - {provider: dead, model: claude-dead, max_tokens: 1024}
      - {provider: live, model: %q, max_tokens: 1024}
teams:
  aws:
    keys: [{id: k1, sha256: %q}]
`, deadURL(t), providers, extra, profileID, model, teams.HashKey(teamKey))
	return serveYAML(t, yaml)
}

// serveYAML serves a gateway config (its team keys hash teamKey) over
// TLS, with the team limiter (limits and budgets), the response cache
// stage wired and usage records kept.
func serveYAML(t *testing.T, yaml string) *gateway {
	t.Helper()
	cfg, err := config.Parse([]byte(yaml))
	if err != nil {
		t.Fatalf("config: %v", err)
	}
	log := slog.New(slog.NewJSONHandler(io.Discard, nil))
	current := func() *config.Config { return cfg }
	g := &gateway{}
	h, err := server.New(context.Background(), cfg, server.Options{
		Logger: log,
		Front: server.Front{Authenticate: teams.NewAuthenticator(current, log).Authenticate,
			Admit: teams.NewLimiter(embedded.OpenMemory(), current, log).Admit},
		Stages: server.Stages{Cache: cache.New(embedded.OpenMemory(), cache.Options{Logger: log})},
		Reporting: server.Reporting{Cost: usage.Cost, Record: func(_ context.Context, r *exchange.Record) {
			g.mu.Lock()
			g.recs = append(g.recs, *r)
			g.mu.Unlock()
		}},
	})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewTLSServer(h)
	t.Cleanup(srv.Close)
	g.URL, g.client, g.cert = srv.URL, srv.Client(), srv.Certificate()
	return g
}
