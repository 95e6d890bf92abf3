// Longer than 400 lines on purpose: the conformance suite is one table of
// behaviours every backend must pass; splitting it would scatter the contract.

// Package storetest is the conformance suite of store.Store: every backend
// (store/embedded, store/dynamo, any future one) must pass [Run], so code
// tested on one backend behaves the same on the other. It also starts
// dynalite, the DynamoDB emulator, for the DynamoDB backend's tests
// ([StartDynalite], [NewDynamoStore]) and holds shared benchmarks
// ([Benchmark]).
//
// A backend's test wires its clock to the suite's manual clock:
//
//	storetest.Run(t, func(t *testing.T) store.Store {
//		s, err := embedded.Open("", embedded.WithClock(storetest.Now(t)))
//		if err != nil {
//			t.Fatal(err)
//		}
//		return s
//	})
//
// Code built on the store can test against DynamoDB semantics too:
//
//	endpoint := storetest.StartDynalite(t) // skipped without `npm ci` (fails instead when CI is set)
//	s := storetest.NewDynamoStore(t, endpoint)
//
// StartDynalite needs node (>= 20) and `npm ci` at the repository root.
package storetest

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"maps"
	"sort"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/llmgw/llmgw/pkg/store"
)

// QueryItems is how many items the pagination test writes into one
// partition. Backends should make their page or batch size much smaller
// (a few dozen) in the store they give to Run, so that the test crosses
// many pages.
const QueryItems = 1500

// opTimeout bounds every store call of the suite (like the gateway's
// callers do); generous because the emulator shares two cores with others.
const opTimeout = 30 * time.Second

// Run runs the conformance suite against stores made by newStore. newStore
// must return a new, empty store (e.g. a fresh temp file or a fresh table)
// whose clock is [Now](t); Run closes it when the subtest ends.
func Run(t *testing.T, newStore func(t *testing.T) store.Store) {
	tests := []struct {
		name string
		fn   func(t *testing.T, s store.Store, clk *Clock)
	}{
		{"RoundTrip", testRoundTrip},
		{"PutIfVersion", testPutIfVersion},
		{"PutIfAbsentIdempotent", testPutIfAbsent},
		{"ExpiredInThePast", testExpiredInThePast},
		{"ExpiryWithClock", testExpiryWithClock},
		{"Add", testAdd},
		{"AddMax", testAddMax},
		{"ConcurrentAddsLoseNothing", testConcurrentAdds},
		{"ConcurrentAddMaxNeverOvershoots", testConcurrentAddMax},
		{"QueryOrderBoundsPagination", testQuery},
		{"QueryByteOrder", testQueryByteOrder},
		{"Delete", testDelete},
		{"ContextCancellation", testContext},
		{"InvalidArguments", testInvalid},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			clk := ClockOf(t)
			s := newStore(t)
			t.Cleanup(func() {
				if err := s.Close(); err != nil {
					t.Errorf("Close: %v", err)
				}
			})
			tc.fn(t, s, clk)
		})
	}
}

// ---- helpers ----

func ctxT(t testing.TB) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), opTimeout)
	t.Cleanup(cancel)
	return ctx
}

func mustPut(t testing.TB, s store.Store, it store.Item, c store.Cond) store.Item {
	t.Helper()
	out, err := s.Put(ctxT(t), it, c)
	if err != nil {
		t.Fatalf("Put(%v, %v): %v", it.Key, c, err)
	}
	return out
}

func mustGet(t testing.TB, s store.Store, k store.Key) (store.Item, bool) {
	t.Helper()
	it, found, err := s.Get(ctxT(t), k)
	if err != nil {
		t.Fatalf("Get(%v): %v", k, err)
	}
	return it, found
}

func mustAdd(t testing.TB, s store.Store, k store.Key, deltas map[string]float64, opts store.AddOptions) store.Item {
	t.Helper()
	out, err := s.Add(ctxT(t), k, deltas, opts)
	if err != nil {
		t.Fatalf("Add(%v, %v): %v", k, deltas, err)
	}
	return out
}

func mustAbsent(t testing.TB, s store.Store, k store.Key) {
	t.Helper()
	if it, found := mustGet(t, s, k); found {
		t.Fatalf("Get(%v): found %+v, want absent", k, it)
	}
}

func mustFound(t testing.TB, s store.Store, k store.Key) store.Item {
	t.Helper()
	it, found := mustGet(t, s, k)
	if !found {
		t.Fatalf("Get(%v): absent, want found", k)
	}
	return it
}

func wantErr(t testing.TB, err, target error, what string) {
	t.Helper()
	if !errors.Is(err, target) {
		t.Fatalf("%s: got error %v, want %v", what, err, target)
	}
}

// sameContent compares everything but the version; nil and empty are equal.
func sameContent(a, b store.Item) bool {
	return a.Key == b.Key && a.Expires.Equal(b.Expires) &&
		maps.Equal(a.Nums, b.Nums) && maps.Equal(a.Strs, b.Strs) && bytes.Equal(a.Data, b.Data)
}

func wantItem(t testing.TB, got, want store.Item, what string) {
	t.Helper()
	if !sameContent(got, want) || got.Version != want.Version {
		t.Fatalf("%s:\n got  %s\n want %s", what, show(got), show(want))
	}
}

func show(it store.Item) string {
	exp := "never"
	if !it.Expires.IsZero() {
		exp = it.Expires.Format(time.RFC3339Nano)
	}
	return fmt.Sprintf("{key %v ver %d expires %s nums %v strs %v data %q}", it.Key, it.Version, exp, it.Nums, it.Strs, it.Data)
}

func queryAll(t testing.TB, s store.Store, pk, from, to string) []store.Item {
	t.Helper()
	var out []store.Item
	if err := s.Query(ctxT(t), pk, from, to, func(it store.Item) bool {
		out = append(out, it)
		return true
	}); err != nil {
		t.Fatalf("Query(%q, %q, %q): %v", pk, from, to, err)
	}
	return out
}

// ---- tests ----

func testRoundTrip(t *testing.T, s store.Store, clk *Clock) {
	k := store.Key{PK: "rt", SK: "one"}
	mustAbsent(t, s, k)

	in := store.Item{
		Key:     k,
		Version: 42, // ignored
		Expires: clk.Now().Add(time.Hour + 500*time.Millisecond),
		Nums:    map[string]float64{"a": 1.5, "b": -2, "zero": 0, "big": 1 << 53},
		Strs:    map[string]string{"s": "hello", "u": "ünïcode ✓", "empty": ""},
		Data:    []byte{0, 1, 2, 0xff, '{', '}'},
	}
	want := store.Item{
		Key:     k,
		Version: 1,
		Expires: clk.Now().Add(time.Hour + time.Second).UTC(), // rounded up to a second
		Nums:    maps.Clone(in.Nums),
		Strs:    maps.Clone(in.Strs),
		Data:    bytes.Clone(in.Data),
	}
	got := mustPut(t, s, in, store.Always())
	wantItem(t, got, want, "Put result")
	if got.Expires.Location() != time.UTC {
		t.Fatalf("Expires not in UTC: %v", got.Expires.Location())
	}
	read := mustFound(t, s, k)
	wantItem(t, read, want, "Get after Put")

	// Returned maps are the caller's: mutating them changes nothing stored.
	read.Nums["a"] = 99
	read.Strs["s"] = "changed"
	read.Data[0] = 9
	got.Nums["a"] = 98
	in.Nums["a"] = 97
	wantItem(t, mustFound(t, s, k), want, "Get after mutating returned maps")

	// No expiry, no attributes.
	bare := mustPut(t, s, store.Item{Key: store.Key{PK: "rt", SK: "bare"}}, store.Always())
	wantItem(t, bare, store.Item{Key: bare.Key, Version: 1}, "bare Put")
	wantItem(t, mustFound(t, s, bare.Key), store.Item{Key: bare.Key, Version: 1}, "bare Get")

	// Keys are exact: neither another SK nor another PK sees the item.
	mustAbsent(t, s, store.Key{PK: "rt", SK: "on"})
	mustAbsent(t, s, store.Key{PK: "r", SK: "tone"})
}

func testPutIfVersion(t *testing.T, s store.Store, _ *Clock) {
	k := store.Key{PK: "ver", SK: "x"}
	v1 := mustPut(t, s, store.Item{Key: k, Nums: map[string]float64{"a": 1}, Strs: map[string]string{"old": "o"}}, store.Always())
	if v1.Version != 1 {
		t.Fatalf("first version %d, want 1", v1.Version)
	}
	// Always replaces the whole item and increments the version.
	v2 := mustPut(t, s, store.Item{Key: k, Nums: map[string]float64{"b": 2}}, store.Always())
	want2 := store.Item{Key: k, Version: 2, Nums: map[string]float64{"b": 2}}
	wantItem(t, v2, want2, "Put Always over v1")
	wantItem(t, mustFound(t, s, k), want2, "Get v2")

	// Stale version: conflict, nothing changes.
	_, err := s.Put(ctxT(t), store.Item{Key: k, Nums: map[string]float64{"stale": 1}}, store.IfVersion(1))
	wantErr(t, err, store.ErrConflict, "Put IfVersion(stale)")
	if errors.Is(err, store.ErrLimit) {
		t.Fatal("a version conflict must not match ErrLimit")
	}
	wantItem(t, mustFound(t, s, k), want2, "Get after stale Put")

	// Future version: conflict too.
	_, err = s.Put(ctxT(t), store.Item{Key: k}, store.IfVersion(3))
	wantErr(t, err, store.ErrConflict, "Put IfVersion(future)")

	// Current version: ok, increments.
	v3 := mustPut(t, s, store.Item{Key: k, Strs: map[string]string{"c": "3"}}, store.IfVersion(2))
	wantItem(t, v3, store.Item{Key: k, Version: 3, Strs: map[string]string{"c": "3"}}, "Put IfVersion(current)")

	// Add increments the same version, and IfVersion sees it.
	if got := mustAdd(t, s, k, map[string]float64{"n": 1}, store.AddOptions{}); got.Version != 4 {
		t.Fatalf("Add after v3: version %d, want 4", got.Version)
	}
	_, err = s.Put(ctxT(t), store.Item{Key: k}, store.IfVersion(3))
	wantErr(t, err, store.ErrConflict, "Put IfVersion(3) after Add")
	if got := mustPut(t, s, store.Item{Key: k}, store.IfVersion(4)); got.Version != 5 {
		t.Fatalf("Put IfVersion(4): version %d, want 5", got.Version)
	}

	// IfVersion on an absent item: conflict, and nothing is created.
	missing := store.Key{PK: "ver", SK: "missing"}
	_, err = s.Put(ctxT(t), store.Item{Key: missing}, store.IfVersion(1))
	wantErr(t, err, store.ErrConflict, "Put IfVersion on absent item")
	mustAbsent(t, s, missing)

	// Optimistic read-modify-write from many goroutines: every successful
	// CAS is counted exactly once.
	ck := store.Key{PK: "ver", SK: "cas"}
	mustPut(t, s, store.Item{Key: ck, Nums: map[string]float64{"n": 0}}, store.Always())
	var wg sync.WaitGroup
	var wins atomic.Int64
	for g := 0; g < 8; g++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; i < 5; {
				cur, found, err := s.Get(ctxT(t), ck)
				if err != nil || !found {
					t.Errorf("Get: %v %v", found, err)
					return
				}
				next := store.Item{Key: ck, Nums: map[string]float64{"n": cur.Nums["n"] + 1}}
				_, err = s.Put(ctxT(t), next, store.IfVersion(cur.Version))
				switch {
				case err == nil:
					wins.Add(1)
					i++
				case !errors.Is(err, store.ErrConflict):
					t.Errorf("Put IfVersion: %v", err)
					return
				}
			}
		}()
	}
	wg.Wait()
	final := mustFound(t, s, ck)
	if final.Nums["n"] != 40 || wins.Load() != 40 || final.Version != 41 {
		t.Fatalf("CAS loop: n=%v wins=%d version=%d, want 40, 40, 41", final.Nums["n"], wins.Load(), final.Version)
	}

	// Racing unconditional Puts: all succeed, each counts one version.
	ak := store.Key{PK: "ver", SK: "always"}
	for g := 0; g < 8; g++ {
		wg.Add(1)
		go func(g int) {
			defer wg.Done()
			for i := 0; i < 5; i++ {
				it := store.Item{Key: ak, Nums: map[string]float64{"g": float64(g)}}
				if _, err := s.Put(ctxT(t), it, store.Always()); err != nil {
					t.Errorf("racing Put Always: %v", err)
					return
				}
			}
		}(g)
	}
	wg.Wait()
	if got := mustFound(t, s, ak); got.Version != 40 {
		t.Fatalf("after 40 racing Put Always: version %d, want 40", got.Version)
	}
}

func testPutIfAbsent(t *testing.T, s store.Store, _ *Clock) {
	k := store.Key{PK: "abs", SK: "x"}
	first := store.Item{Key: k, Strs: map[string]string{"who": "first"}, Data: []byte(`{"a":1}`)}
	got := mustPut(t, s, first, store.IfAbsent())
	want := first
	want.Version = 1
	wantItem(t, got, want, "first IfAbsent")

	// The retry of the same create, and a different create: both conflict,
	// and the item is unchanged.
	_, err := s.Put(ctxT(t), first, store.IfAbsent())
	wantErr(t, err, store.ErrConflict, "second IfAbsent (same item)")
	_, err = s.Put(ctxT(t), store.Item{Key: k, Strs: map[string]string{"who": "second"}}, store.IfAbsent())
	wantErr(t, err, store.ErrConflict, "second IfAbsent (other item)")
	wantItem(t, mustFound(t, s, k), want, "Get after conflicting IfAbsent")

	// Racing creators: exactly one wins.
	rk := store.Key{PK: "abs", SK: "race"}
	var wg sync.WaitGroup
	var wins atomic.Int64
	for g := 0; g < 10; g++ {
		wg.Add(1)
		go func(g int) {
			defer wg.Done()
			_, err := s.Put(ctxT(t), store.Item{Key: rk, Nums: map[string]float64{"g": float64(g)}}, store.IfAbsent())
			switch {
			case err == nil:
				wins.Add(1)
			case !errors.Is(err, store.ErrConflict):
				t.Errorf("racing IfAbsent: %v", err)
			}
		}(g)
	}
	wg.Wait()
	if wins.Load() != 1 {
		t.Fatalf("%d racing IfAbsent puts succeeded, want exactly 1", wins.Load())
	}
	if it := mustFound(t, s, rk); it.Version != 1 {
		t.Fatalf("raced item version %d, want 1", it.Version)
	}
}

func testExpiredInThePast(t *testing.T, s store.Store, clk *Clock) {
	past := clk.Now().Add(-time.Hour)
	k := store.Key{PK: "exp", SK: "a"}
	stale := store.Item{Key: k, Expires: past, Nums: map[string]float64{"c": 100}, Strs: map[string]string{"s": "stale"}, Data: []byte("stale")}
	if got := mustPut(t, s, stale, store.Always()); got.Version != 1 {
		t.Fatalf("Put of an expired item: version %d", got.Version)
	}

	// Get and Query: absent.
	mustAbsent(t, s, k)
	if items := queryAll(t, s, "exp", "", ""); len(items) != 0 {
		t.Fatalf("Query returned expired items: %v", items)
	}

	// IfVersion on it: conflict (it does not exist).
	_, err := s.Put(ctxT(t), store.Item{Key: k}, store.IfVersion(1))
	wantErr(t, err, store.ErrConflict, "Put IfVersion on an expired item")
	wantErr(t, s.Delete(ctxT(t), k, store.IfVersion(1)), store.ErrConflict, "Delete IfVersion on an expired item")

	// IfAbsent over it: succeeds, replaces everything; the version goes on.
	fresh := mustPut(t, s, store.Item{Key: k, Nums: map[string]float64{"d": 1}}, store.IfAbsent())
	wantItem(t, fresh, store.Item{Key: k, Version: 2, Nums: map[string]float64{"d": 1}}, "IfAbsent over expired")
	wantItem(t, mustFound(t, s, k), fresh, "Get after IfAbsent over expired")

	// Add over an expired item: starts from zero, drops the stale
	// attributes, takes the new expiry, continues the version.
	k2 := store.Key{PK: "exp", SK: "b"}
	staleB := store.Item{Key: k2, Expires: past, Nums: map[string]float64{"c": 100, "other": 7}, Strs: map[string]string{"s": "stale"}, Data: []byte("x")}
	mustPut(t, s, staleB, store.Always())
	mustPut(t, s, staleB, store.Always()) // version 2, so that 3 below shows continuity
	exp := clk.Now().Add(time.Minute)
	got := mustAdd(t, s, k2, map[string]float64{"c": 5}, store.AddOptions{Expires: exp})
	want := store.Item{Key: k2, Version: 3, Expires: exp.UTC(), Nums: map[string]float64{"c": 5}}
	wantItem(t, got, want, "Add over expired")
	wantItem(t, mustFound(t, s, k2), want, "Get after Add over expired")

	// Racing Adds over an expired item: one replaces it, none is lost.
	k5 := store.Key{PK: "exp", SK: "race"}
	mustPut(t, s, store.Item{Key: k5, Expires: past, Nums: map[string]float64{"c": 100}}, store.Always())
	var wg sync.WaitGroup
	for g := 0; g < 10; g++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if _, err := s.Add(ctxT(t), k5, map[string]float64{"c": 1}, store.AddOptions{}); err != nil {
				t.Errorf("racing Add over expired: %v", err)
			}
		}()
	}
	wg.Wait()
	if got := mustFound(t, s, k5); got.Nums["c"] != 10 || got.Version != 11 {
		t.Fatalf("10 racing Adds over an expired item: %s, want c=10 version 11", show(got))
	}
	if err := s.Delete(ctxT(t), k5, store.Always()); err != nil {
		t.Fatal(err)
	}

	// Add with a limit over an expired item: judged from zero.
	k3 := store.Key{PK: "exp", SK: "c"}
	mustPut(t, s, store.Item{Key: k3, Expires: past, Nums: map[string]float64{"c": 100}}, store.Always())
	got = mustAdd(t, s, k3, map[string]float64{"c": 5}, store.AddOptions{Max: map[string]float64{"c": 10}})
	wantItem(t, got, store.Item{Key: k3, Version: 2, Nums: map[string]float64{"c": 5}}, "Add with Max over expired")
	// ... and a limit that fails even from zero changes nothing.
	k4 := store.Key{PK: "exp", SK: "d"}
	mustPut(t, s, store.Item{Key: k4, Expires: past, Nums: map[string]float64{"c": 1}}, store.Always())
	_, err = s.Add(ctxT(t), k4, map[string]float64{"c": 11}, store.AddOptions{Max: map[string]float64{"c": 10}})
	wantErr(t, err, store.ErrLimit, "Add over limit on expired item")
	mustAbsent(t, s, k4)

	// Only the live items are queried.
	items := queryAll(t, s, "exp", "", "")
	if len(items) != 3 || items[0].Key.SK != "a" || items[1].Key.SK != "b" || items[2].Key.SK != "c" {
		t.Fatalf("Query after revivals: got %d items %v", len(items), items)
	}
}

func testExpiryWithClock(t *testing.T, s store.Store, clk *Clock) {
	k := store.Key{PK: "clock", SK: "a"}
	mustPut(t, s, store.Item{Key: k, Expires: clk.Now().Add(10 * time.Second), Nums: map[string]float64{"n": 1}}, store.Always())
	clk.Advance(9 * time.Second)
	mustFound(t, s, k)
	if n := len(queryAll(t, s, "clock", "", "")); n != 1 {
		t.Fatalf("Query before expiry: %d items, want 1", n)
	}
	clk.Advance(time.Second) // exactly at Expires: gone
	if _, found := mustGet(t, s, k); found {
		t.Fatal("item still live at its expiry time: does the store use storetest.Now(t) as its clock?")
	}
	if n := len(queryAll(t, s, "clock", "", "")); n != 0 {
		t.Fatalf("Query at expiry: %d items, want 0", n)
	}
	mustPut(t, s, store.Item{Key: k}, store.IfAbsent())

	// Add's expiry is set on creation and kept afterwards.
	w := store.Key{PK: "clock", SK: "window"}
	e1 := clk.Now().Add(time.Minute)
	got := mustAdd(t, s, w, map[string]float64{"n": 1}, store.AddOptions{Expires: e1})
	if !got.Expires.Equal(e1) {
		t.Fatalf("Add create: expires %v, want %v", got.Expires, e1)
	}
	got = mustAdd(t, s, w, map[string]float64{"n": 1}, store.AddOptions{Expires: e1.Add(time.Hour)})
	if !got.Expires.Equal(e1) || got.Nums["n"] != 2 {
		t.Fatalf("Add on live item changed expiry or lost count: %s", show(got))
	}
	clk.Advance(time.Minute)
	e2 := clk.Now().Add(time.Minute)
	got = mustAdd(t, s, w, map[string]float64{"n": 1}, store.AddOptions{Expires: e2})
	wantItem(t, got, store.Item{Key: w, Version: 3, Expires: e2.UTC(), Nums: map[string]float64{"n": 1}}, "Add after window expired")

	// An item without expiry gets one from Add (and keeps its attributes).
	p := store.Key{PK: "clock", SK: "perm"}
	mustPut(t, s, store.Item{Key: p, Strs: map[string]string{"s": "x"}}, store.Always())
	got = mustAdd(t, s, p, map[string]float64{"n": 1}, store.AddOptions{Expires: e2})
	wantItem(t, got, store.Item{Key: p, Version: 2, Expires: e2.UTC(), Nums: map[string]float64{"n": 1}, Strs: map[string]string{"s": "x"}}, "Add on item without expiry")
}

func testAdd(t *testing.T, s store.Store, _ *Clock) {
	k := store.Key{PK: "add", SK: "a"}
	got := mustAdd(t, s, k, map[string]float64{"a": 1, "b": 2.5}, store.AddOptions{})
	wantItem(t, got, store.Item{Key: k, Version: 1, Nums: map[string]float64{"a": 1, "b": 2.5}}, "Add creating")
	got = mustAdd(t, s, k, map[string]float64{"a": -3, "c": 0}, store.AddOptions{})
	want := store.Item{Key: k, Version: 2, Nums: map[string]float64{"a": -2, "b": 2.5, "c": 0}}
	wantItem(t, got, want, "Add with negative delta")
	wantItem(t, mustFound(t, s, k), want, "Get after Add")

	// Add keeps the other attributes of an existing item.
	p := store.Key{PK: "add", SK: "put"}
	mustPut(t, s, store.Item{Key: p, Nums: map[string]float64{"n": 10}, Strs: map[string]string{"s": "keep"}, Data: []byte("keep")}, store.Always())
	got = mustAdd(t, s, p, map[string]float64{"n": -10, "m": 1}, store.AddOptions{})
	want = store.Item{Key: p, Version: 2, Nums: map[string]float64{"n": 0, "m": 1}, Strs: map[string]string{"s": "keep"}, Data: []byte("keep")}
	wantItem(t, got, want, "Add on a Put item")
	wantItem(t, mustFound(t, s, p), want, "Get after Add on a Put item")

	// No deltas: still a write (creates, bumps the version).
	e := store.Key{PK: "add", SK: "empty"}
	wantItem(t, mustAdd(t, s, e, nil, store.AddOptions{}), store.Item{Key: e, Version: 1}, "Add with no deltas")
	wantItem(t, mustAdd(t, s, e, nil, store.AddOptions{}), store.Item{Key: e, Version: 2}, "Add with no deltas again")

	// Adding to a string attribute is invalid and changes nothing.
	_, err := s.Add(ctxT(t), p, map[string]float64{"s": 1}, store.AddOptions{})
	wantErr(t, err, store.ErrInvalid, "Add to a string attribute")
	wantItem(t, mustFound(t, s, p), want, "Get after invalid Add")
}

func testAddMax(t *testing.T, s store.Store, _ *Clock) {
	k := store.Key{PK: "max", SK: "budget"}
	limit := store.AddOptions{Max: map[string]float64{"used": 100}}
	if got := mustAdd(t, s, k, map[string]float64{"used": 60}, limit); got.Nums["used"] != 60 {
		t.Fatalf("first reservation: %s", show(got))
	}
	if got := mustAdd(t, s, k, map[string]float64{"used": 40}, limit); got.Nums["used"] != 100 {
		t.Fatalf("reservation up to the limit exactly: %s", show(got))
	}
	before := mustFound(t, s, k)
	_, err := s.Add(ctxT(t), k, map[string]float64{"used": 1}, limit)
	wantErr(t, err, store.ErrLimit, "Add over the limit")
	if errors.Is(err, store.ErrConflict) {
		t.Fatal("ErrLimit must be distinct from ErrConflict")
	}
	wantItem(t, mustFound(t, s, k), before, "Get after refused Add")

	// Settling with a negative delta under the same limit.
	if got := mustAdd(t, s, k, map[string]float64{"used": -30}, limit); got.Nums["used"] != 70 {
		t.Fatalf("settling: %s", show(got))
	}

	// A refused Add on an absent item creates nothing.
	absent := store.Key{PK: "max", SK: "absent"}
	_, err = s.Add(ctxT(t), absent, map[string]float64{"x": 11}, store.AddOptions{Max: map[string]float64{"x": 10}})
	wantErr(t, err, store.ErrLimit, "Add over the limit on an absent item")
	mustAbsent(t, s, absent)

	// Several attributes: one over its limit refuses the whole Add.
	m := store.Key{PK: "max", SK: "multi"}
	mustAdd(t, s, m, map[string]float64{"req": 9, "tok": 100}, store.AddOptions{})
	before = mustFound(t, s, m)
	_, err = s.Add(ctxT(t), m, map[string]float64{"req": 1, "tok": 1000}, store.AddOptions{Max: map[string]float64{"req": 10, "tok": 1000}})
	wantErr(t, err, store.ErrLimit, "Add with one attribute over its limit")
	wantItem(t, mustFound(t, s, m), before, "Get after refused multi-attribute Add")
	got := mustAdd(t, s, m, map[string]float64{"req": 1, "tok": 900}, store.AddOptions{Max: map[string]float64{"req": 10, "tok": 1000}})
	if got.Nums["req"] != 10 || got.Nums["tok"] != 1000 {
		t.Fatalf("multi-attribute Add at both limits: %s", show(got))
	}

	// A limit on an attribute not being added: current <= max.
	g := store.Key{PK: "max", SK: "gate"}
	mustAdd(t, s, g, map[string]float64{"n": 1}, store.AddOptions{Max: map[string]float64{"open": 0}}) // open absent = 0
	mustAdd(t, s, g, map[string]float64{"open": 1}, store.AddOptions{})
	_, err = s.Add(ctxT(t), g, map[string]float64{"n": 1}, store.AddOptions{Max: map[string]float64{"open": 0}})
	wantErr(t, err, store.ErrLimit, "Add gated by another attribute")

	// Negative current values: current + delta <= max is still the rule,
	// also when delta alone exceeds max.
	n := store.Key{PK: "max", SK: "neg"}
	mustAdd(t, s, n, map[string]float64{"v": -5}, store.AddOptions{})
	if got := mustAdd(t, s, n, map[string]float64{"v": 10}, store.AddOptions{Max: map[string]float64{"v": 6}}); got.Nums["v"] != 5 {
		t.Fatalf("-5 + 10 <= 6: %s", show(got))
	}
	_, err = s.Add(ctxT(t), n, map[string]float64{"w": 10}, store.AddOptions{Max: map[string]float64{"w": 6}})
	wantErr(t, err, store.ErrLimit, "absent attribute: 0 + 10 > 6")
}

func testConcurrentAdds(t *testing.T, s store.Store, _ *Clock) {
	const goroutines, each = 50, 20
	k := store.Key{PK: "conc", SK: "counter"}
	var wg sync.WaitGroup
	var mu sync.Mutex
	seen := map[float64]bool{}
	for g := 0; g < goroutines; g++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; i < each; i++ {
				got, err := s.Add(ctxT(t), k, map[string]float64{"n": 1, "m": 2}, store.AddOptions{})
				if err != nil {
					t.Errorf("Add: %v", err)
					return
				}
				mu.Lock()
				seen[got.Nums["n"]] = true
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	if t.Failed() {
		return
	}
	final := mustFound(t, s, k)
	const total = goroutines * each
	if final.Nums["n"] != total || final.Nums["m"] != 2*total || final.Version != total {
		t.Fatalf("after %d concurrent Adds: %s", total, show(final))
	}
	// Each Add returned its own post-update value: 1..total, each once.
	if len(seen) != total {
		t.Fatalf("Adds returned %d distinct values, want %d", len(seen), total)
	}
}

func testConcurrentAddMax(t *testing.T, s store.Store, _ *Clock) {
	const goroutines, size, limit = 20, 7.0, 100.0
	k := store.Key{PK: "conc", SK: "reserve"}
	opts := store.AddOptions{Max: map[string]float64{"r": limit}}
	var wg sync.WaitGroup
	var granted atomic.Int64
	for g := 0; g < goroutines; g++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			// Bounded: a store that never says ErrLimit fails, not hangs.
			for i := 0; i < 30; i++ {
				got, err := s.Add(ctxT(t), k, map[string]float64{"r": size}, opts)
				if errors.Is(err, store.ErrLimit) {
					return
				}
				if err != nil {
					t.Errorf("Add: %v", err)
					return
				}
				if got.Nums["r"] > limit {
					t.Errorf("overshoot: r = %v > %v", got.Nums["r"], limit)
				}
				granted.Add(1)
			}
		}()
	}
	wg.Wait()
	if t.Failed() {
		return
	}
	final := mustFound(t, s, k)
	if want := float64(granted.Load()) * size; final.Nums["r"] != want || want != 98 {
		t.Fatalf("granted %d reservations of %v, stored %v; want 14 and 98", granted.Load(), size, final.Nums["r"])
	}
	// Settle everything concurrently with negative deltas.
	for i := int64(0); i < granted.Load(); i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if _, err := s.Add(ctxT(t), k, map[string]float64{"r": -size}, opts); err != nil {
				t.Errorf("settle: %v", err)
			}
		}()
	}
	wg.Wait()
	if final := mustFound(t, s, k); final.Nums["r"] != 0 {
		t.Fatalf("after settling: %s", show(final))
	}
}

func testQuery(t *testing.T, s store.Store, clk *Clock) {
	const pk = "q"
	sk := func(i int) string { return fmt.Sprintf("item-%05d", i) }
	// Neighbouring partitions must never leak into the results.
	for _, other := range []string{"p", "q0", "q#", "qq", "Q"} {
		mustPut(t, s, store.Item{Key: store.Key{PK: other, SK: sk(5)}}, store.Always())
	}
	// Write QueryItems items with a few writers (the emulator is slow
	// per request, not per connection).
	idx := make(chan int)
	var wg sync.WaitGroup
	for w := 0; w < 8; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range idx {
				it := store.Item{Key: store.Key{PK: pk, SK: sk(i)}, Nums: map[string]float64{"i": float64(i)}}
				if _, err := s.Put(ctxT(t), it, store.IfAbsent()); err != nil {
					t.Errorf("Put: %v", err)
				}
			}
		}()
	}
	for i := 0; i < QueryItems; i++ {
		idx <- i
	}
	close(idx)
	wg.Wait()
	if t.Failed() {
		return
	}
	// An expired item in the middle is skipped.
	mustPut(t, s, store.Item{Key: store.Key{PK: pk, SK: sk(700) + "x"}, Expires: clk.Now().Add(-time.Second)}, store.Always())

	check := func(from, to string, first, n int) {
		t.Helper()
		items := queryAll(t, s, pk, from, to)
		if len(items) != n {
			t.Fatalf("Query [%q, %q): %d items, want %d", from, to, len(items), n)
		}
		for j, it := range items {
			if it.Key.PK != pk || it.Key.SK != sk(first+j) || it.Nums["i"] != float64(first+j) || it.Version != 1 {
				t.Fatalf("Query [%q, %q): item %d is %s, want SK %s", from, to, j, show(it), sk(first+j))
			}
		}
	}
	check("", "", 0, QueryItems)           // whole partition, across pages
	check(sk(100), sk(200), 100, 100)      // skFrom inclusive, skTo exclusive
	check(sk(100), sk(100)+"\x00", 100, 1) // a single item
	check(sk(QueryItems-100), "", QueryItems-100, 100)
	check("", sk(50), 0, 50)
	check("", sk(0), 0, 0)
	check(sk(300), sk(300), 0, 0)          // empty range
	check(sk(301), sk(300), 0, 0)          // inverted range
	check("item-", "item.", 0, QueryItems) // prefix range
	check("zzz", "", 0, 0)

	// Early stop: fn returning false ends the Query without error.
	calls := 0
	if err := s.Query(ctxT(t), pk, "", "", func(store.Item) bool {
		calls++
		return calls < 10
	}); err != nil {
		t.Fatalf("Query with early stop: %v", err)
	}
	if calls != 10 {
		t.Fatalf("early stop: fn called %d times, want 10", calls)
	}

	// fn may use the store (no deadlock, no iterator invalidation).
	calls = 0
	if err := s.Query(ctxT(t), pk, sk(0), sk(60), func(it store.Item) bool {
		calls++
		if _, err := s.Add(ctxT(t), store.Key{PK: "q-side", SK: it.Key.SK}, map[string]float64{"seen": 1}, store.AddOptions{}); err != nil {
			t.Errorf("Add inside Query: %v", err)
			return false
		}
		if _, err := s.Put(ctxT(t), store.Item{Key: store.Key{PK: pk, SK: it.Key.SK + "-new"}, Expires: clk.Now().Add(-time.Second)}, store.Always()); err != nil {
			t.Errorf("Put inside Query: %v", err)
			return false
		}
		return true
	}); err != nil {
		t.Fatalf("Query with writes in fn: %v", err)
	}
	if calls != 60 {
		t.Fatalf("Query with writes in fn: %d calls, want 60", calls)
	}
}

func testQueryByteOrder(t *testing.T, s store.Store, _ *Clock) {
	sks := []string{"b", "a", "B", "é", "z", "~", "a#", "a%", "aa", "0", "ÿ", "日本"}
	for _, sk := range sks {
		mustPut(t, s, store.Item{Key: store.Key{PK: "order", SK: sk}}, store.Always())
	}
	want := append([]string(nil), sks...)
	sort.Strings(want) // byte order, as DynamoDB sorts UTF-8 strings
	items := queryAll(t, s, "order", "", "")
	got := make([]string, len(items))
	for i, it := range items {
		got[i] = it.Key.SK
	}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("Query order:\n got  %q\n want %q", got, want)
	}
}

func testDelete(t *testing.T, s store.Store, clk *Clock) {
	k := store.Key{PK: "del", SK: "a"}
	if err := s.Delete(ctxT(t), k, store.Always()); err != nil {
		t.Fatalf("Delete of an absent item: %v", err)
	}
	mustPut(t, s, store.Item{Key: k}, store.Always())
	mustPut(t, s, store.Item{Key: k}, store.Always()) // version 2
	wantErr(t, s.Delete(ctxT(t), k, store.IfVersion(1)), store.ErrConflict, "Delete IfVersion(stale)")
	mustFound(t, s, k)
	if err := s.Delete(ctxT(t), k, store.IfVersion(2)); err != nil {
		t.Fatalf("Delete IfVersion(current): %v", err)
	}
	mustAbsent(t, s, k)
	wantErr(t, s.Delete(ctxT(t), k, store.IfVersion(2)), store.ErrConflict, "Delete IfVersion of a deleted item")
	// A deleted record is gone: a new item starts at version 1.
	if got := mustPut(t, s, store.Item{Key: k}, store.IfAbsent()); got.Version != 1 {
		t.Fatalf("Put after Delete: version %d, want 1", got.Version)
	}
	if err := s.Delete(ctxT(t), k, store.Always()); err != nil {
		t.Fatalf("Delete Always: %v", err)
	}
	mustAbsent(t, s, k)
	// Expired items can be deleted unconditionally.
	e := store.Key{PK: "del", SK: "expired"}
	mustPut(t, s, store.Item{Key: e, Expires: clk.Now().Add(-time.Second)}, store.Always())
	if err := s.Delete(ctxT(t), e, store.Always()); err != nil {
		t.Fatalf("Delete of an expired item: %v", err)
	}
	if got := mustPut(t, s, store.Item{Key: e}, store.IfAbsent()); got.Version != 1 {
		t.Fatalf("Put after deleting an expired item: version %d, want 1", got.Version)
	}
	wantErr(t, s.Delete(ctxT(t), k, store.IfAbsent()), store.ErrInvalid, "Delete IfAbsent")
}

func testContext(t *testing.T, s store.Store, _ *Clock) {
	k := store.Key{PK: "ctx", SK: "a"}
	cancelled, cancel := context.WithCancel(context.Background())
	cancel()
	expired, cancel2 := context.WithDeadline(context.Background(), time.Now().Add(-time.Second))
	defer cancel2()

	for _, c := range []struct {
		name string
		ctx  context.Context
		want error
	}{{"cancelled", cancelled, context.Canceled}, {"deadline", expired, context.DeadlineExceeded}} {
		ops := map[string]func() error{
			"Get": func() error { _, _, err := s.Get(c.ctx, k); return err },
			"Put": func() error { _, err := s.Put(c.ctx, store.Item{Key: k}, store.Always()); return err },
			"PutIfAbsent": func() error {
				_, err := s.Put(c.ctx, store.Item{Key: k}, store.IfAbsent())
				return err
			},
			"Add": func() error {
				_, err := s.Add(c.ctx, k, map[string]float64{"n": 1}, store.AddOptions{})
				return err
			},
			"Delete": func() error { return s.Delete(c.ctx, k, store.Always()) },
			"Query": func() error {
				return s.Query(c.ctx, "ctx", "", "", func(store.Item) bool {
					t.Error("fn called under a dead context")
					return true
				})
			},
		}
		for name, op := range ops {
			start := time.Now()
			err := op()
			if !errors.Is(err, c.want) {
				t.Fatalf("%s with %s context: got %v, want %v", name, c.name, err, c.want)
			}
			if d := time.Since(start); d > 2*time.Second {
				t.Fatalf("%s with %s context took %v", name, c.name, d)
			}
		}
	}
	mustAbsent(t, s, k) // no write happened

	// Cancelling during a Query stops it: fn is not called again and the
	// Query reports the cancellation.
	for i := 0; i < 30; i++ {
		mustPut(t, s, store.Item{Key: store.Key{PK: "ctx", SK: fmt.Sprintf("%03d", i)}}, store.Always())
	}
	ctx, cancel3 := context.WithCancel(context.Background())
	defer cancel3()
	calls := 0
	err := s.Query(ctx, "ctx", "", "", func(store.Item) bool {
		calls++
		if calls == 5 {
			cancel3()
		}
		return true
	})
	wantErr(t, err, context.Canceled, "Query cancelled from fn")
	if calls != 5 {
		t.Fatalf("fn called %d times, want 5 (no calls after cancellation)", calls)
	}
}

func testInvalid(t *testing.T, s store.Store, _ *Clock) {
	ctx := ctxT(t)
	k := store.Key{PK: "inv", SK: "a"}
	_, _, err := s.Get(ctx, store.Key{PK: "inv"})
	wantErr(t, err, store.ErrInvalid, "Get with empty SK")
	_, err = s.Put(ctx, store.Item{Key: k, Nums: map[string]float64{store.AttrVersion: 3}}, store.Always())
	wantErr(t, err, store.ErrInvalid, "Put with reserved attribute")
	_, err = s.Put(ctx, store.Item{Key: k}, store.IfVersion(0))
	wantErr(t, err, store.ErrInvalid, "Put IfVersion(0)")
	_, err = s.Add(ctx, k, map[string]float64{"n": 1e300}, store.AddOptions{})
	wantErr(t, err, store.ErrInvalid, "Add out of range")
	err = s.Query(ctx, "", "", "", func(store.Item) bool { return true })
	wantErr(t, err, store.ErrInvalid, "Query empty PK")
	mustAbsent(t, s, k)
}
