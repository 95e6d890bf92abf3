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
	"time"

	"github.com/llmgw/llmgw/pkg/config"
	"github.com/llmgw/llmgw/pkg/store"
	"github.com/llmgw/llmgw/pkg/store/embedded"
	"github.com/llmgw/llmgw/pkg/store/storetest"
	"github.com/llmgw/llmgw/pkg/usage"
)

// TestLocalGatewaySpillsAndDrainsUsage: with the store failing, the
// assembled local gateway spills its usage records to the file next to
// the state, and its drain loop writes them into the store once it is back.
func TestLocalGatewaySpillsAndDrainsUsage(t *testing.T) {
	cfg, err := config.Parse([]byte(`
providers: {steady: {kind: fake, fake: {reply: "hi"}}}
routes: {m: {targets: [{provider: steady, model: fake-1}]}}
usage: {store_timeout: 50ms}
`))
	if err != nil {
		t.Fatal(err)
	}
	state := filepath.Join(t.TempDir(), "state.db")
	base, err := embedded.Open(state)
	if err != nil {
		t.Fatal(err)
	}
	fs := storetest.NewFaulty(t, base)
	spill := usage.NewFileSpill(usage.DefaultSpillFile(state))
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	g, err := Build(context.Background(), cfg, fs, BuildOptions{Logger: log, AnonymousWithoutTeams: true, Spill: spill})
	if err != nil {
		t.Fatal(err)
	}
	defer g.Close()
	srv := httptest.NewServer(g.Handler)
	defer srv.Close()
	fs.Set(storetest.Failing)
	for i := 0; i < 5; i++ {
		resp, err := http.Post(srv.URL+"/v1/chat/completions", "application/json", strings.NewReader(`{"model":"m","messages":[{"role":"user","content":"x"}]}`))
		if err != nil || resp.StatusCode != 200 {
			t.Fatalf("chat: %v %v", err, resp)
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
	}
	if fi, err := os.Stat(spill.Path()); err != nil || fi.Size() == 0 {
		t.Fatalf("nothing spilled to %s: %v", spill.Path(), err)
	}
	fs.Set(storetest.Healthy)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go drainLoop(ctx, g.Recorder, 20*time.Millisecond, log)
	deadline := time.Now().Add(10 * time.Second)
	for {
		n := 0
		base.Query(context.Background(), store.UsagePK(config.AnonymousTeam, time.Now()), "", "", func(store.Item) bool { n++; return true })
		if n == 5 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d of 5 records drained", n)
		}
		time.Sleep(20 * time.Millisecond)
	}
}
