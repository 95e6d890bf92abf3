package embedded_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/llmgw/llmgw/pkg/store"
	"github.com/llmgw/llmgw/pkg/store/embedded"
	"github.com/llmgw/llmgw/pkg/store/storetest"
)

func newStore(t testing.TB) *embedded.Store {
	t.Helper()
	// A small batch makes the suite's Query cross many batches.
	s, err := embedded.Open("", embedded.WithClock(storetest.Now(t)), embedded.WithQueryBatch(17))
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func TestConformance(t *testing.T) {
	storetest.Run(t, func(t *testing.T) store.Store { return newStore(t) })
}

func TestConformanceMemory(t *testing.T) {
	storetest.Run(t, func(t *testing.T) store.Store {
		return embedded.OpenMemory(embedded.WithClock(storetest.Now(t)), embedded.WithQueryBatch(17))
	})
}

func BenchmarkEmbedded(b *testing.B) {
	storetest.Benchmark(b, func(b *testing.B) store.Store {
		s, err := embedded.Open("")
		if err != nil {
			b.Fatal(err)
		}
		return s
	})
}

func TestPersistsAcrossReopen(t *testing.T) {
	path := filepath.Join(t.TempDir(), "store.db")
	s, err := embedded.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	k := store.Key{PK: "p", SK: "s"}
	if _, err := s.Add(ctx, k, map[string]float64{"n": 3}, store.AddOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(path); err != nil {
		t.Fatalf("a named file must survive Close: %v", err)
	}
	s, err = embedded.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	it, found, err := s.Get(ctx, k)
	if err != nil || !found || it.Nums["n"] != 3 || it.Version != 1 {
		t.Fatalf("after reopen: %+v %v %v", it, found, err)
	}
}

func TestPutBatchWritesEachItemUnderItsCondition(t *testing.T) {
	for name, s := range map[string]*embedded.Store{"file": newStore(t), "memory": embedded.OpenMemory()} {
		t.Run(name, func(t *testing.T) {
			defer s.Close()
			ctx := context.Background()
			taken := store.Key{PK: "p", SK: "taken"}
			if _, err := s.Put(ctx, store.Item{Key: taken, Data: []byte("old")}, store.Always()); err != nil {
				t.Fatal(err)
			}
			items := []store.Item{
				{Key: store.Key{PK: "p", SK: "a"}, Data: []byte("a")},
				{Key: taken, Data: []byte("new")},
				{Key: store.Key{PK: "", SK: "bad"}},
				{Key: store.Key{PK: "p", SK: "b"}, Data: []byte("b")},
			}
			errs := s.PutBatch(ctx, items, store.IfAbsent())
			if len(errs) != len(items) || errs[0] != nil || errs[3] != nil {
				t.Fatalf("errs = %v", errs)
			}
			if !errors.Is(errs[1], store.ErrConflict) || !errors.Is(errs[2], store.ErrInvalid) {
				t.Fatalf("errs = %v: want conflict for the taken key, invalid for the bad one", errs)
			}
			for sk, want := range map[string]string{"a": "a", "b": "b", "taken": "old"} {
				it, ok, err := s.Get(ctx, store.Key{PK: "p", SK: sk})
				if err != nil || !ok || string(it.Data) != want || it.Version != 1 {
					t.Fatalf("%s: %+v %v %v, want data %q version 1", sk, it, ok, err, want)
				}
			}
		})
	}
}
