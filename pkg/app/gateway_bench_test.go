package app

import (
	"context"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"testing"

	"github.com/llmgw/llmgw/pkg/config"
	"github.com/llmgw/llmgw/pkg/fakellm"
	"github.com/llmgw/llmgw/pkg/requestlog"
)

// BenchmarkAssembledChat is one non-streaming request through the gateway
// as local mode assembles it (embedded store without fsync, shared
// breaker and ledger, usage record, the request line through
// requestlog.JSONHandler), against an in-process upstream: the gateway's
// own cost per request, without the network. records=sync writes the
// usage record before the handler returns (Lambda's way); records=async
// queues it for the background writer (local mode's way), which is
// flushed before each run ends, so both pay for every record.
func BenchmarkAssembledChat(b *testing.B) {
	for _, async := range []bool{false, true} {
		name := "records=sync"
		if async {
			name = "records=async"
		}
		b.Run(name, func(b *testing.B) { benchmarkAssembledChat(b, async) })
	}
}

func benchmarkAssembledChat(b *testing.B, async bool) {
	up := httptest.NewServer(&fakellm.Handler{Script: &config.FakeScript{Reply: "Hello there, this is a short reply."}})
	defer up.Close()
	cfg, err := config.Parse([]byte(`
providers:
  p: {kind: openai, base_url: "` + up.URL + `/v1"}
routes:
  m: {targets: [{provider: p, model: gpt-4.1}]}
`))
	if err != nil {
		b.Fatal(err)
	}
	st, _, err := OpenStore(context.Background(), StoreOptions{StatePath: filepath.Join(b.TempDir(), "state.db")})
	if err != nil {
		b.Fatal(err)
	}
	g, err := Build(context.Background(), cfg, st, BuildOptions{Logger: slog.New(requestlog.NewJSONHandler(io.Discard, nil)),
		AnonymousWithoutTeams: true, AsyncRecords: async})
	if err != nil {
		b.Fatal(err)
	}
	defer func() {
		if err := g.Close(); err != nil {
			b.Fatal(err)
		}
	}()
	body := `{"model":"m","messages":[{"role":"system","content":"You are a helpful assistant."},{"role":"user","content":"Write a haiku about gateways and the sea."}]}`
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		w := httptest.NewRecorder()
		// A keyless gateway serves only local names (httptest's default
		// Host is example.com).
		req := httptest.NewRequest(http.MethodPost, "http://localhost/v1/chat/completions", strings.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		g.Handler.ServeHTTP(w, req)
		if w.Code != 200 {
			b.Fatalf("status %d: %s", w.Code, w.Body)
		}
	}
	if g.records != nil {
		if err := g.records.Close(context.Background()); err != nil { // the queued writes count too
			b.Fatal(err)
		}
	}
}
