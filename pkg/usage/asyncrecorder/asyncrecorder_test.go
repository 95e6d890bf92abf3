package asyncrecorder_test

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/llmgw/llmgw/pkg/config"
	"github.com/llmgw/llmgw/pkg/exchange"
	"github.com/llmgw/llmgw/pkg/store"
	"github.com/llmgw/llmgw/pkg/store/embedded"
	"github.com/llmgw/llmgw/pkg/usage"
	"github.com/llmgw/llmgw/pkg/usage/asyncrecorder"
)

// blockingWriter records what it is given; RecordBatch blocks until
// release is closed.
type blockingWriter struct {
	mu      sync.Mutex
	sync    []string
	batched []string
	entered chan struct{}
	release chan struct{}
	once    sync.Once
}

func (w *blockingWriter) Record(_ context.Context, rec *exchange.Record) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.sync = append(w.sync, rec.RequestID)
}

func (w *blockingWriter) RecordBatch(_ context.Context, recs []*exchange.Record) {
	w.once.Do(func() { close(w.entered) })
	<-w.release
	w.mu.Lock()
	defer w.mu.Unlock()
	for _, r := range recs {
		w.batched = append(w.batched, r.RequestID)
	}
}

func TestFullQueueWritesSynchronouslyAndCloseFlushes(t *testing.T) {
	w := &blockingWriter{entered: make(chan struct{}), release: make(chan struct{})}
	r := asyncrecorder.New(w, asyncrecorder.Options{Queue: 2, MaxBatch: 1})
	ctx := context.Background()
	rec := &exchange.Record{RequestID: "r0"}
	r.Record(ctx, rec)
	<-w.entered // the writer holds r0 and is blocked: the queue is empty
	for i := 1; i <= 5; i++ {
		rec.RequestID = fmt.Sprintf("r%d", i) // the caller reuses its record
		r.Record(ctx, rec)
	}
	// r1 and r2 fill the queue; r3..r5 are written synchronously, at once.
	w.mu.Lock()
	gotSync := fmt.Sprint(w.sync)
	w.mu.Unlock()
	if gotSync != "[r3 r4 r5]" || r.Synchronous() != 3 {
		t.Fatalf("synchronous writes %s (count %d), want [r3 r4 r5]", gotSync, r.Synchronous())
	}
	close(w.release)
	if err := r.Close(ctx); err != nil {
		t.Fatal(err)
	}
	if got := fmt.Sprint(w.batched); got != "[r0 r1 r2]" {
		t.Fatalf("batched %s, want [r0 r1 r2]: Close must write everything queued", got)
	}
	rec.RequestID = "late"
	r.Record(ctx, rec) // after Close: synchronous, not dropped
	if w.sync[len(w.sync)-1] != "late" {
		t.Fatalf("a record after Close was not written: %v", w.sync)
	}
}

func TestBatchesLandInTheEmbeddedStore(t *testing.T) {
	st, err := embedded.Open("")
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	cfg := &config.Config{}
	rec := usage.NewRecorder(st, func() *config.Config { return cfg }, nil)
	r := asyncrecorder.New(rec, asyncrecorder.Options{Queue: 16, MaxBatch: 8})
	ctx := context.Background()
	at := time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC)
	const n = 100
	for i := 0; i < n; i++ {
		r.Record(ctx, &exchange.Record{RequestID: fmt.Sprintf("req-%03d", i), Time: at, Outcome: "ok", Status: 200})
	}
	// One record twice: stored once.
	r.Record(ctx, &exchange.Record{RequestID: "req-000", Time: at, Outcome: "ok", Status: 200})
	if err := r.Close(ctx); err != nil {
		t.Fatal(err)
	}
	count := 0
	if err := st.Query(ctx, store.UsagePK(config.AnonymousTeam, at), "", "", func(store.Item) bool { count++; return true }); err != nil {
		t.Fatal(err)
	}
	if count != n {
		t.Fatalf("%d records stored, want %d", count, n)
	}
}

// batchCounter counts RecordBatch calls and the records in them.
type batchCounter struct {
	mu      sync.Mutex
	batches [][]string
}

func (w *batchCounter) Record(_ context.Context, rec *exchange.Record) {
	w.RecordBatch(context.Background(), []*exchange.Record{rec})
}

func (w *batchCounter) RecordBatch(_ context.Context, recs []*exchange.Record) {
	w.mu.Lock()
	defer w.mu.Unlock()
	var ids []string
	for _, r := range recs {
		ids = append(ids, r.RequestID)
	}
	w.batches = append(w.batches, ids)
}

// TestLingerBatchesATrickle: records arriving one at a time, each after
// the previous one was taken, are written as one batch when they come
// within Linger of the first; without Linger each is its own write. Close
// writes a lingering batch at once.
func TestLingerBatchesATrickle(t *testing.T) {
	for _, tc := range []struct {
		linger      time.Duration
		wantBatches int
	}{{time.Hour, 1}, {-1, 5}} {
		w := &batchCounter{}
		r := asyncrecorder.New(w, asyncrecorder.Options{Linger: tc.linger})
		for i := 0; i < 5; i++ {
			r.Record(context.Background(), &exchange.Record{RequestID: fmt.Sprint("r", i)})
			time.Sleep(5 * time.Millisecond) // the writer has taken it
		}
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		if err := r.Close(ctx); err != nil {
			t.Fatalf("linger %v: Close waited for the linger: %v", tc.linger, err)
		}
		cancel()
		w.mu.Lock()
		n, got := len(w.batches), fmt.Sprint(w.batches)
		w.mu.Unlock()
		if n != tc.wantBatches {
			t.Errorf("linger %v: batches %s, want %d", tc.linger, got, tc.wantBatches)
		}
	}
}
