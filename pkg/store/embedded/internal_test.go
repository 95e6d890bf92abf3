package embedded

import (
	"context"
	"errors"
	"os"
	"testing"
	"time"

	"github.com/llmgw/llmgw/pkg/store"
)

func TestTempFileRemovedOnClose(t *testing.T) {
	s, err := Open("")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(s.tmpPath); err != nil {
		t.Fatalf("temp file while open: %v", err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatalf("second Close: %v", err)
	}
	if _, err := os.Stat(s.tmpPath); !os.IsNotExist(err) {
		t.Fatalf("temp file after Close: %v", err)
	}
	if _, _, err := s.Get(context.Background(), store.Key{PK: "a", SK: "b"}); err == nil {
		t.Fatal("Get after Close succeeded")
	}
}

// A writer waiting for the single write slot gives up when its context ends,
// instead of blocking behind a long transaction.
func TestWriteWaitHonoursContext(t *testing.T) {
	s, err := Open("")
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	k := store.Key{PK: "slow", SK: "x"}

	s.writeSem <- struct{}{} // another writer holds the slot
	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel()
	start := time.Now()
	_, err = s.Add(ctx, k, map[string]float64{"n": 1}, store.AddOptions{})
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("got %v, want DeadlineExceeded", err)
	}
	if d := time.Since(start); d > 2*time.Second {
		t.Fatalf("took %v", d)
	}
	<-s.writeSem
	if _, err := s.Add(context.Background(), k, map[string]float64{"n": 1}, store.AddOptions{}); err != nil {
		t.Fatal(err)
	}
}

// A memory transaction that fails leaves nothing behind: new keys vanish,
// overwritten and deleted keys get their old values back.
func TestMemoryUpdateRollsBack(t *testing.T) {
	m := &memSpace{vals: map[string][]byte{}}
	if err := m.update(func(b bucket) error { return b.Put([]byte("keep"), []byte("old")) }); err != nil {
		t.Fatal(err)
	}
	boom := errors.New("boom")
	err := m.update(func(b bucket) error {
		b.Put([]byte("new"), []byte("x"))
		b.Put([]byte("keep"), []byte("changed"))
		b.Delete([]byte("keep"))
		b.Put([]byte("keep"), []byte("again"))
		return boom
	})
	if !errors.Is(err, boom) {
		t.Fatalf("update = %v, want the function's error", err)
	}
	if len(m.keys) != 1 || m.keys[0] != "keep" || string(m.vals["keep"]) != "old" || m.vals["new"] != nil {
		t.Fatalf("after rollback: keys %q, vals %q", m.keys, m.vals)
	}
}

func TestMemoryClosed(t *testing.T) {
	s := OpenMemory()
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Add(context.Background(), store.Key{PK: "a", SK: "b"}, map[string]float64{"n": 1}, store.AddOptions{}); err == nil {
		t.Fatal("Add after Close succeeded")
	}
}
