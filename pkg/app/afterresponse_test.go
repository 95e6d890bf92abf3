package app

import (
	"context"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/llmgw/llmgw/pkg/config"
	"github.com/llmgw/llmgw/pkg/internal/testkit"
	"github.com/llmgw/llmgw/pkg/requestlog"
	"github.com/llmgw/llmgw/pkg/store"
	"github.com/llmgw/llmgw/pkg/store/embedded"
)

// TestAfterResponseIsBoundedAndWaited: work beyond the limit runs inline
// (the caller waits: back-pressure), and Wait returns only once every
// background piece has finished.
func TestAfterResponseIsBoundedAndWaited(t *testing.T) {
	a := newAfterResponse(2)
	release := make(chan struct{})
	var done atomic.Int32
	for i := 0; i < 2; i++ {
		a.Go(func() { <-release; done.Add(1) })
	}
	inline := false
	a.Go(func() { inline = true }) // both slots are busy
	if !inline {
		t.Fatal("work beyond the limit did not run inline")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Millisecond)
	if err := a.Wait(ctx); err == nil {
		t.Fatal("Wait returned while work was still running")
	}
	cancel()
	close(release)
	if err := a.Wait(context.Background()); err != nil || done.Load() != 2 {
		t.Fatalf("Wait: %v, %d pieces done", err, done.Load())
	}
}

// TestLocalModeRecordsEveryRequestFromTheBackground: the local gateway
// (AsyncRecords) behind a real net/http server, many kept-alive requests at
// once, streamed and whole: the post-response work runs after the handler
// returned (under the race detector, next to net/http's own end of the
// request), and after Close every request has its record and log line.
func TestLocalModeRecordsEveryRequestFromTheBackground(t *testing.T) {
	cfg, err := config.Parse([]byte(`
providers:
  steady: {kind: fake, fake: {reply: "Hello from a fake model."}}
routes:
  m: {targets: [{provider: steady, model: fake-1}]}
`))
	if err != nil {
		t.Fatal(err)
	}
	statePath := filepath.Join(t.TempDir(), "state.db")
	st, _, err := OpenStore(context.Background(), StoreOptions{StatePath: statePath})
	if err != nil {
		t.Fatal(err)
	}
	var logs testkit.SyncBuffer
	g, err := Build(context.Background(), cfg, st, BuildOptions{Logger: slog.New(requestlog.NewJSONHandler(&logs, nil)),
		AnonymousWithoutTeams: true, AsyncRecords: true})
	if err != nil {
		t.Fatal(err)
	}
	if g.after == nil {
		t.Fatal("local mode without the background runner")
	}
	srv := httptest.NewServer(g.Handler)
	const workers, each = 8, 25
	var wg sync.WaitGroup
	for w := 0; w < workers; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; i < each; i++ {
				body := `{"model":"m","messages":[{"role":"user","content":"x"}]}`
				if i%2 == 0 {
					body = `{"model":"m","stream":true,"messages":[{"role":"user","content":"x"}]}`
				}
				resp, err := http.Post(srv.URL+"/v1/chat/completions", "application/json", strings.NewReader(body))
				if err != nil {
					t.Error(err)
					return
				}
				io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
				if resp.StatusCode != 200 {
					t.Errorf("status %d", resp.StatusCode)
				}
			}
		}()
	}
	wg.Wait()
	srv.Close() // as http.Server.Shutdown: every handler has returned
	if err := g.Close(); err != nil {
		t.Fatal(err)
	}
	if n := strings.Count(logs.String(), `"route":"m"`); n != workers*each {
		t.Errorf("%d request log lines, want %d", n, workers*each)
	}
	st2, err := embedded.Open(statePath)
	if err != nil {
		t.Fatal(err)
	}
	defer st2.Close()
	records := 0
	if err := st2.Query(context.Background(), store.UsagePK(config.AnonymousTeam, time.Now()), "", "", func(store.Item) bool {
		records++
		return true
	}); err != nil {
		t.Fatal(err)
	}
	if records != workers*each {
		t.Fatalf("%d usage records after Close, want %d", records, workers*each)
	}
}
