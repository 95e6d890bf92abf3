package locality_test

import (
	"context"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/llmgw/llmgw/pkg/exchange"
	"github.com/llmgw/llmgw/pkg/locality"
	"github.com/llmgw/llmgw/pkg/store"
	"github.com/llmgw/llmgw/pkg/store/storetest"
)

// countingStore counts the writes that reach the table.
type countingStore struct {
	store.Store
	puts atomic.Int32
}

func (s *countingStore) Put(ctx context.Context, it store.Item, c store.Cond) (store.Item, error) {
	s.puts.Add(1)
	return s.Store.Put(ctx, it, c)
}

func TestPlacesWriteOnlyWhenTheServedPlaceChanges(t *testing.T) {
	storetest.RunBackends(t, []storetest.Scenario{{Name: "WritesOnChange", Fn: testWritesOnChange}})
}

func testWritesOnChange(t *testing.T, e *storetest.Env) {
	st := &countingStore{Store: e.Store}
	p := locality.New(st, locality.Options{Now: e.Now, Timeout: 5 * time.Second})
	ctx := context.Background()
	const ttl = time.Hour
	serve := func(to locality.Place) {
		t.Helper()
		from, found, err := p.Get(ctx, "conv")
		if err != nil {
			t.Fatal(err)
		}
		if _, err := p.Note(ctx, "conv", from, found, to, ttl); err != nil {
			t.Fatal(err)
		}
	}
	b := locality.Place{Target: "pb/m", Key: "fp2"}
	for range 10 {
		serve(b)
		e.Advance(time.Minute)
	}
	if n := st.puts.Load(); n != 1 {
		t.Fatalf("%d writes for ten requests served at one place, want 1", n)
	}
	if pl, found, _ := p.Get(ctx, "conv"); !found || pl.Target != b.Target || pl.Key != b.Key {
		t.Fatalf("stored %+v %v", pl, found)
	}
	serve(locality.Place{Target: "pa/m", Key: "fp1"}) // moved
	serve(locality.Place{Target: "pa/m", Key: "fp2"}) // another key
	if n := st.puts.Load(); n != 3 {
		t.Fatalf("%d writes after two moves, want 3", n)
	}
	// An active conversation keeps its item alive: past half its TTL the
	// next request rewrites it, once.
	e.Advance(31 * time.Minute)
	serve(locality.Place{Target: "pa/m", Key: "fp2"})
	serve(locality.Place{Target: "pa/m", Key: "fp2"})
	if n := st.puts.Load(); n != 4 {
		t.Fatalf("%d writes after the refresh, want 4", n)
	}
	// Idle past its TTL, the conversation has no place.
	e.Advance(2 * time.Hour)
	if _, found, _ := p.Get(ctx, "conv"); found {
		t.Fatal("a place outlived its TTL")
	}
}

func TestAffinityNamesAConversationByItsStablePrefixOrItsCacheKey(t *testing.T) {
	turn := func(first string, n int) *exchange.Request {
		p := &exchange.Prompt{System: []exchange.Block{{Type: exchange.BlockText, Text: "You are terse."}},
			Tools: []exchange.Tool{{Name: "Read", Description: "Read a file"}}}
		p.Messages = append(p.Messages, exchange.Message{Role: exchange.RoleUser, Content: []exchange.Block{{Type: exchange.BlockText, Text: first}}})
		for i := 1; i < n; i++ {
			p.Messages = append(p.Messages,
				exchange.Message{Role: exchange.RoleAssistant, Content: []exchange.Block{{Type: exchange.BlockText, Text: "answer"}}},
				exchange.Message{Role: exchange.RoleUser, Content: []exchange.Block{{Type: exchange.BlockText, Text: "more"}}})
		}
		return &exchange.Request{Route: "r", Prompt: p}
	}
	one := locality.Affinity(turn("Rust?", 1), "team-a", "")
	otherTools := turn("Rust?", 1)
	otherTools.Prompt.Tools[0].Schema = []byte(`{"type":"object"}`)
	if one == "" || locality.Affinity(turn("Rust?", 4), "team-a", "") != one {
		t.Fatal("later turns of one conversation are named differently")
	}
	for name, other := range map[string]string{
		"another first message": locality.Affinity(turn("Go?", 1), "team-a", ""),
		"another team":          locality.Affinity(turn("Rust?", 1), "team-b", ""),
		"other tools":           locality.Affinity(otherTools, "team-a", ""),
		"a prompt_cache_key":    locality.Affinity(turn("Rust?", 1), "team-a", "k"),
	} {
		if other == one {
			t.Errorf("%s names the same conversation", name)
		}
	}
	if locality.Affinity(turn("Rust?", 1), "team-a", "k") != locality.Affinity(turn("Go?", 3), "team-a", "k") {
		t.Error("one prompt_cache_key names two conversations")
	}
	if locality.Affinity(turn("Rust?", 1), "team-a", "k") == locality.Affinity(turn("Rust?", 1), "team-b", "k") {
		t.Error("two teams' prompt_cache_keys share a conversation")
	}
}

// BenchmarkAffinity hashes the stable prefix of a Claude Code sized
// request: a 12 KB system prompt, 40 tools of 2 KB of schema each and a
// first message, on every request of a cache_locality route.
func BenchmarkAffinity(b *testing.B) {
	p := &exchange.Prompt{System: []exchange.Block{{Type: exchange.BlockText, Text: strings.Repeat("You are Claude Code. ", 600)}}}
	for i := range 40 {
		p.Tools = append(p.Tools, exchange.Tool{Name: fmt.Sprintf("tool_%d", i), Description: strings.Repeat("does a thing ", 30),
			Schema: []byte(`{"type":"object","properties":{"path":{"type":"string","description":"` + strings.Repeat("x", 1600) + `"}}}`)})
	}
	p.Messages = []exchange.Message{{Role: exchange.RoleUser, Content: []exchange.Block{{Type: exchange.BlockText, Text: "Summarise a.go"}}}}
	rq := &exchange.Request{Route: "claude", Prompt: p}
	b.ReportAllocs()
	for b.Loop() {
		if locality.Affinity(rq, "team", "") == "" {
			b.Fatal("no hash")
		}
	}
}
