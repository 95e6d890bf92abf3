package usage_test

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/llmgw/llmgw/pkg/config"
	"github.com/llmgw/llmgw/pkg/internal/testkit"
	"github.com/llmgw/llmgw/pkg/store"
	"github.com/llmgw/llmgw/pkg/store/storetest"
	"github.com/llmgw/llmgw/pkg/usage"
	"github.com/llmgw/llmgw/pkg/usage/usagetest"
)

// TestNoRecordLostWhenTheStoreFails: 200 concurrent requests are recorded
// while the store fails outright, or answers slower than
// usage.store_timeout (its writes landing late, so some records are both
// written and spilled), on both backends. Each record is retried, then
// spilled to the spill file. Once the store is back, a drain and a rollup
// find every record exactly once and the exact totals.
func TestNoRecordLostWhenTheStoreFails(t *testing.T) {
	usagetest.Run(t, []usagetest.Case{
		{Name: "Failing", Fn: func(t *testing.T, open usagetest.Opener) { testBurstSpilled(t, open, storetest.Failing) }},
		{Name: "Slow", Fn: func(t *testing.T, open usagetest.Opener) { testBurstSpilled(t, open, storetest.Slow) }},
	})
}

func testBurstSpilled(t *testing.T, open usagetest.Opener, mode storetest.FaultMode) {
	clk := usagetest.NewClock(t0)
	base := open(t, clk.Now)
	fs := storetest.NewFaulty(t, base)
	fs.SetDelay(150 * time.Millisecond)
	// A short timeout while the store is slow; a long one for the drain,
	// so that a loaded machine does not time the healthy store out.
	var cfg atomic.Pointer[config.Config]
	cfg.Store(mustConfig(t, testConfig+"\nusage: {store_timeout: 50ms}\n"))
	current := cfg.Load
	logs := &testkit.SyncBuffer{}
	rec := usage.NewRecorder(fs, current, slog.New(slog.NewJSONHandler(logs, nil)))
	rec.Spill = usage.NewFileSpill(filepath.Join(t.TempDir(), "usage-spill.jsonl"))

	fs.Set(mode)
	const n = 200
	var wg sync.WaitGroup
	for i := 0; i < n; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			// What the server gives Record: 5 s, detached from the client.
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			defer cancel()
			r := sampleRecord([]string{"search", "ads"}[i%2], fmt.Sprintf("req_%03d", i), t0.Add(time.Duration(i)*time.Millisecond))
			r.CostUSD = 0.001 // 1,000,000 nano-USD each
			rec.Record(ctx, r)
		}()
	}
	wg.Wait()
	if strings.Contains(logs.String(), "usage record not stored") {
		t.Fatalf("records lost:\n%s", logs.String())
	}
	if !strings.Contains(logs.String(), "record spilled") {
		t.Fatalf("nothing spilled:\n%s", logs.String())
	}
	// While the store is down, a drain keeps everything.
	fs.Set(storetest.Failing)
	if _, err := rec.Drain(ctxT(t)); err == nil {
		t.Fatal("a drain into a failing store reported success")
	}
	fs.Set(storetest.Healthy)
	cfg.Store(mustConfig(t, testConfig+"\nusage: {store_timeout: 5s}\n"))
	time.Sleep(300 * time.Millisecond) // slow writes still in flight land
	sum, err := rec.Drain(ctxT(t))
	if err != nil {
		t.Fatalf("drain: %v", err)
	}
	if !sum.Earliest.Equal(t0.Truncate(24 * time.Hour)) {
		t.Fatalf("drain summary %+v", sum)
	}
	for _, team := range []string{"search", "ads"} {
		if got := countPartition(t, base, store.UsagePK(team, t0)); got != n/2 {
			t.Fatalf("%s: %d records stored, want %d", team, got, n/2)
		}
	}
	roller := usage.NewRoller(base, current)
	roller.Now = clk.Now
	if _, err := roller.Run(ctxT(t), t0, t0); err != nil {
		t.Fatal(err)
	}
	for _, team := range []string{"search", "ads"} {
		it, ok, err := base.Get(ctxT(t), store.RollupKey(team, t0))
		if err != nil || !ok {
			t.Fatalf("%s: no rollup (%v)", team, err)
		}
		ru, _ := usage.DecodeRollup(it)
		if ru.Requests != n/2 || ru.InputTokens != 1000*n/2 || ru.OutputTokens != 500*n/2 || ru.CostNanoUSD != 1_000_000*n/2 {
			t.Fatalf("%s rollup %+v", team, ru.Totals)
		}
	}
	// Nothing is left to drain.
	if sum, err := rec.Drain(ctxT(t)); err != nil || sum.Records != 0 {
		t.Fatalf("second drain %+v %v", sum, err)
	}
	t.Logf("mode %d: %d records drained from the spill", mode, sum.Records)
}

// TestFileSpill: lines are appended whole and fsync'd; a drain renames the
// file aside, so spills during a drain go to a fresh file and none is
// lost; a failed drain keeps its records for the next; a line torn by a
// crash is skipped.
func TestFileSpill(t *testing.T) {
	path := filepath.Join(t.TempDir(), "state", "usage-spill.jsonl")
	sp := usage.NewFileSpill(path)
	ctx := ctxT(t)
	for i := 0; i < 5; i++ {
		if err := sp.Spill(ctx, []byte(fmt.Sprintf(`{"n":%d}`, i))); err != nil {
			t.Fatal(err)
		}
	}
	if err := sp.Spill(ctx, []byte("two\nlines")); !errors.Is(err, store.ErrInvalid) {
		t.Fatalf("a record with a newline: %v", err)
	}
	if fi, err := os.Stat(path); err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("spill file %v %v", fi, err)
	}
	// A drain that fails on the third record keeps all of them; records
	// spilled during it are kept too.
	var seen []string
	boom := errors.New("store down")
	n, err := sp.Drain(ctx, func(_ context.Context, b []byte) error {
		if len(seen) == 2 {
			if err := sp.Spill(ctx, []byte(`{"n":5}`)); err != nil {
				t.Fatal(err)
			}
			return boom
		}
		seen = append(seen, string(b))
		return nil
	})
	if !errors.Is(err, boom) || n != 2 {
		t.Fatalf("failed drain: %d %v", n, err)
	}
	// A crash mid-append leaves a torn last line.
	f, _ := os.OpenFile(path, os.O_WRONLY|os.O_APPEND, 0)
	f.WriteString(`{"n":6,"tor`)
	f.Close()
	var all []string
	if _, err := sp.Drain(ctx, func(_ context.Context, b []byte) error { all = append(all, string(b)); return nil }); err != nil {
		t.Fatal(err)
	}
	want := []string{`{"n":0}`, `{"n":1}`, `{"n":2}`, `{"n":3}`, `{"n":4}`, `{"n":5}`}
	if strings.Join(all, " ") != strings.Join(want, " ") {
		t.Fatalf("drained %v, want %v (the retried file first, then the new one, torn line skipped)", all, want)
	}
	left, _ := filepath.Glob(path + "*")
	if len(left) != 0 {
		t.Fatalf("files left after a full drain: %v", left)
	}
}

// TestRecordWithoutSpillIsLoggedLost: without a spill a record the store
// does not take is logged as lost (the behaviour the spill removes).
func TestRecordWithoutSpillIsLoggedLost(t *testing.T) {
	logs := &testkit.SyncBuffer{}
	rec := usage.NewRecorder(usagetest.Down{}, cfgFunc(t, testConfig), slog.New(slog.NewJSONHandler(logs, nil)))
	rec.Record(ctxT(t), sampleRecord("search", "req_x", t0))
	if !strings.Contains(logs.String(), "usage record not stored") {
		t.Fatalf("logs:\n%s", logs.String())
	}
	// A record's retries end before its context does, leaving time to spill.
	ctx, cancel := context.WithTimeout(context.Background(), 700*time.Millisecond)
	defer cancel()
	start := time.Now()
	slow := storetest.NewFaulty(t, usagetest.Down{})
	slow.Set(storetest.Blocking)
	rec = usage.NewRecorder(slow, cfgFunc(t, testConfig), slog.New(slog.NewJSONHandler(logs, nil)))
	sp := &memSpill{}
	rec.Spill = sp
	rec.Record(ctx, sampleRecord("search", "req_y", t0))
	if len(sp.got) != 1 || ctx.Err() != nil {
		t.Fatalf("spilled %d after %v (context: %v)", len(sp.got), time.Since(start), ctx.Err())
	}
}

// memSpill is a Spill in memory.
type memSpill struct {
	mu  sync.Mutex
	got [][]byte
}

func (m *memSpill) Spill(_ context.Context, b []byte) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.got = append(m.got, b)
	return nil
}

func (m *memSpill) Drain(context.Context, func(context.Context, []byte) error) (int, error) {
	return 0, nil
}
