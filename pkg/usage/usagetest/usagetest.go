// Package usagetest holds test helpers for usage accounting and team
// limits: running a test on both store backends (embedded always, DynamoDB
// via dynalite), a settable clock, a store that remembers every item written
// through it (to scan storage for secrets and text), and a store that is
// down.
package usagetest

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/llmgw/llmgw/pkg/store"
	"github.com/llmgw/llmgw/pkg/store/dynamo"
	"github.com/llmgw/llmgw/pkg/store/embedded"
	"github.com/llmgw/llmgw/pkg/store/storetest"
)

// Clock is a settable clock, safe for concurrent use.
type Clock struct {
	mu sync.Mutex
	t  time.Time
}

// NewClock returns a clock reading t.
func NewClock(t time.Time) *Clock { return &Clock{t: t} }

// Now reads the clock.
func (c *Clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

// Set moves the clock to t.
func (c *Clock) Set(t time.Time) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.t = t
}

// Advance moves the clock by d.
func (c *Clock) Advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.t = c.t.Add(d)
}

// Opener returns a new, empty store whose expiry clock is now; the store is
// closed when t ends.
type Opener func(t testing.TB, now func() time.Time) store.Store

// Case is one test run on every backend.
type Case struct {
	Name string
	Fn   func(t *testing.T, open Opener)
}

// Run runs every case on the embedded store, then on DynamoDB (dynalite,
// started once for all cases; a fresh table per store). Without node or
// dynalite the DynamoDB half is skipped, or fails when CI is set (see
// storetest.StartDynalite).
func Run(t *testing.T, cases []Case) {
	t.Run("embedded", func(t *testing.T) {
		open := func(t testing.TB, now func() time.Time) store.Store {
			s, err := embedded.Open("", embedded.WithClock(now), embedded.WithQueryBatch(37))
			if err != nil {
				t.Fatalf("embedded.Open: %v", err)
			}
			t.Cleanup(func() { s.Close() })
			return s
		}
		for _, c := range cases {
			t.Run(c.Name, func(t *testing.T) { c.Fn(t, open) })
		}
	})
	t.Run("dynamodb", func(t *testing.T) {
		endpoint := storetest.StartDynalite(t)
		open := func(t testing.TB, now func() time.Time) store.Store {
			// Small pages: record partitions are read across many pages.
			return storetest.NewDynamoStore(t, endpoint, dynamo.WithClock(now), dynamo.WithPageSize(41))
		}
		for _, c := range cases {
			t.Run(c.Name, func(t *testing.T) { c.Fn(t, open) })
		}
	})
}

// Spy is a store that remembers every item written through it (Put and
// Add, including the keys of Deletes), so a test can scan all storage.
type Spy struct {
	store.Store
	mu      sync.Mutex
	written []store.Item
}

// NewSpy wraps s.
func NewSpy(s store.Store) *Spy { return &Spy{Store: s} }

// Put implements store.Putter.
func (s *Spy) Put(ctx context.Context, it store.Item, c store.Cond) (store.Item, error) {
	s.note(it)
	return s.Store.Put(ctx, it, c)
}

// Add implements store.Adder.
func (s *Spy) Add(ctx context.Context, k store.Key, deltas map[string]float64, opts store.AddOptions) (store.Item, error) {
	nums := map[string]float64{}
	for n, v := range deltas {
		nums[n] = v
	}
	s.note(store.Item{Key: k, Nums: nums})
	return s.Store.Add(ctx, k, deltas, opts)
}

func (s *Spy) note(it store.Item) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.written = append(s.written, it)
}

// Written returns every item written so far.
func (s *Spy) Written() []store.Item {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]store.Item(nil), s.written...)
}

// Dump renders an item completely (key, attribute names and values, data)
// for scanning.
func Dump(it store.Item) string {
	out := it.Key.PK + "\x00" + it.Key.SK + "\x00" + string(it.Data)
	for n, v := range it.Nums {
		out += fmt.Sprintf("\x00%s=%g", n, v)
	}
	for n, v := range it.Strs {
		out += "\x00" + n + "=" + v
	}
	return out
}

// ErrDown is what a Down store answers.
var ErrDown = errors.New("usagetest: store is down (connection refused)")

// Down is a store that fails every call, like an unreachable DynamoDB.
type Down struct{}

var _ store.Store = Down{}

// Get implements store.Getter.
func (Down) Get(context.Context, store.Key) (store.Item, bool, error) {
	return store.Item{}, false, ErrDown
}

// Put implements store.Putter.
func (Down) Put(context.Context, store.Item, store.Cond) (store.Item, error) {
	return store.Item{}, ErrDown
}

// Add implements store.Adder.
func (Down) Add(context.Context, store.Key, map[string]float64, store.AddOptions) (store.Item, error) {
	return store.Item{}, ErrDown
}

// Query implements store.Querier.
func (Down) Query(context.Context, string, string, string, func(store.Item) bool) error {
	return ErrDown
}

// Delete implements store.Deleter.
func (Down) Delete(context.Context, store.Key, store.Cond) error { return ErrDown }

// Close implements io.Closer.
func (Down) Close() error { return nil }

// Switch is a store that can be taken down and brought back.
type Switch struct {
	store.Store
	mu   sync.Mutex
	down bool
}

// SetDown takes the store down (true) or brings it back (false).
func (s *Switch) SetDown(down bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.down = down
}

func (s *Switch) cur() store.Store {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.down {
		return Down{}
	}
	return s.Store
}

// Get implements store.Getter.
func (s *Switch) Get(ctx context.Context, k store.Key) (store.Item, bool, error) {
	return s.cur().Get(ctx, k)
}

// Put implements store.Putter.
func (s *Switch) Put(ctx context.Context, it store.Item, c store.Cond) (store.Item, error) {
	return s.cur().Put(ctx, it, c)
}

// Add implements store.Adder.
func (s *Switch) Add(ctx context.Context, k store.Key, d map[string]float64, o store.AddOptions) (store.Item, error) {
	return s.cur().Add(ctx, k, d, o)
}

// Query implements store.Querier.
func (s *Switch) Query(ctx context.Context, pk, from, to string, fn func(store.Item) bool) error {
	return s.cur().Query(ctx, pk, from, to, fn)
}

// Delete implements store.Deleter.
func (s *Switch) Delete(ctx context.Context, k store.Key, c store.Cond) error {
	return s.cur().Delete(ctx, k, c)
}
