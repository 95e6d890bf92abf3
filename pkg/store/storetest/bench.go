package storetest

import (
	"context"
	"fmt"
	"sync/atomic"
	"testing"

	"github.com/llmgw/llmgw/pkg/store"
)

// Benchmark measures the basic operations of stores made by newStore (one
// store per sub-benchmark; Benchmark closes it). Run with -benchmem:
//
//	Get          read of one small item
//	Put          Put Always over 64 rotating keys (the DynamoDB backend
//	             reads the version first: two requests)
//	PutIfAbsent  create of a new key each time (one request)
//	Add          Add with a limit to one counter (one request)
//	AddParallel  Add to one hot counter from GOMAXPROCS goroutines
func Benchmark(b *testing.B, newStore func(b *testing.B) store.Store) {
	ctx := context.Background()
	item := func(k store.Key) store.Item {
		return store.Item{Key: k, Nums: map[string]float64{"tokens": 1234, "cost": 56}, Strs: map[string]string{"model": "gpt-4o"}}
	}
	with := func(name string, fn func(b *testing.B, s store.Store)) {
		b.Run(name, func(b *testing.B) {
			s := newStore(b)
			defer s.Close()
			b.ReportAllocs()
			fn(b, s)
		})
	}
	with("Get", func(b *testing.B, s store.Store) {
		k := store.Key{PK: "bench", SK: "get"}
		if _, err := s.Put(ctx, item(k), store.Always()); err != nil {
			b.Fatal(err)
		}
		for b.Loop() {
			if _, found, err := s.Get(ctx, k); err != nil || !found {
				b.Fatal(found, err)
			}
		}
	})
	with("Put", func(b *testing.B, s store.Store) {
		i := 0
		for b.Loop() {
			k := store.Key{PK: "bench", SK: fmt.Sprintf("put-%02d", i%64)}
			i++
			if _, err := s.Put(ctx, item(k), store.Always()); err != nil {
				b.Fatal(err)
			}
		}
	})
	with("PutIfAbsent", func(b *testing.B, s store.Store) {
		i := 0
		for b.Loop() {
			k := store.Key{PK: "bench", SK: fmt.Sprintf("new-%09d", i)}
			i++
			if _, err := s.Put(ctx, item(k), store.IfAbsent()); err != nil {
				b.Fatal(err)
			}
		}
	})
	with("Add", func(b *testing.B, s store.Store) {
		k := store.Key{PK: "bench", SK: "add"}
		opts := store.AddOptions{Max: map[string]float64{"tokens": 1e15}}
		for b.Loop() {
			if _, err := s.Add(ctx, k, map[string]float64{"tokens": 100, "requests": 1}, opts); err != nil {
				b.Fatal(err)
			}
		}
	})
	with("AddParallel", func(b *testing.B, s store.Store) {
		k := store.Key{PK: "bench", SK: "hot"}
		var failed atomic.Bool
		b.RunParallel(func(pb *testing.PB) {
			for pb.Next() {
				if _, err := s.Add(ctx, k, map[string]float64{"requests": 1}, store.AddOptions{}); err != nil {
					failed.Store(true)
				}
			}
		})
		if failed.Load() {
			b.Fatal("an Add failed")
		}
	})
}
