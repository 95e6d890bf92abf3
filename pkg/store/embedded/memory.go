package embedded

import (
	"bytes"
	"errors"
	"slices"
	"sync"
)

// OpenMemory returns a store kept in memory only: the same semantics as a
// file store (it passes the same conformance suite), nothing on disk, and
// nothing to clean up if it is never closed. Use it for tests and for a
// gateway whose shared state need not outlive the process. Close makes
// later calls fail.
func OpenMemory(opts ...Option) *Store {
	s := newStore(opts)
	s.sp = &memSpace{vals: map[string][]byte{}}
	return s
}

// errClosed is returned by a memory store's calls after Close.
var errClosed = errors.New("store closed")

// memSpace is a sorted in-memory key space. One writer at a time (the
// Store's write slot already serialises writers); readers share.
type memSpace struct {
	mu     sync.RWMutex
	keys   []string          // sorted
	vals   map[string][]byte // key -> value
	closed bool
}

func (m *memSpace) update(fn func(b bucket) error) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.closed {
		return errClosed
	}
	b := &memBucket{m: m, undo: map[string][]byte{}}
	if err := fn(b); err != nil {
		b.rollback()
		return err
	}
	return nil
}

func (m *memSpace) view(fn func(b bucket) error) error {
	m.mu.RLock()
	defer m.mu.RUnlock()
	if m.closed {
		return errClosed
	}
	return fn(&memBucket{m: m})
}

func (m *memSpace) close() error {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.closed, m.keys, m.vals = true, nil, nil
	return nil
}

// memBucket is a memSpace inside one transaction. In an update it keeps
// the previous value of every key it writes, to roll back on error.
type memBucket struct {
	m    *memSpace
	undo map[string][]byte // key -> value before this transaction (nil: absent); nil map in a view
}

// Get returns the value of k, nil if absent.
func (b *memBucket) Get(k []byte) []byte { return b.m.vals[string(k)] }

func (b *memBucket) remember(k string) {
	if _, done := b.undo[k]; done {
		return
	}
	b.undo[k] = b.m.vals[k] // nil when absent
}

// Put sets the value of k (in an update only).
func (b *memBucket) Put(k, v []byte) error {
	if b.undo == nil {
		return errors.New("put in a read-only transaction")
	}
	key := string(k)
	b.remember(key)
	if _, ok := b.m.vals[key]; !ok {
		i, _ := slices.BinarySearch(b.m.keys, key)
		b.m.keys = slices.Insert(b.m.keys, i, key)
	}
	b.m.vals[key] = bytes.Clone(v)
	return nil
}

// Delete removes k if present (in an update only).
func (b *memBucket) Delete(k []byte) error {
	if b.undo == nil {
		return errors.New("delete in a read-only transaction")
	}
	key := string(k)
	if _, ok := b.m.vals[key]; !ok {
		return nil
	}
	b.remember(key)
	b.del(key)
	return nil
}

func (b *memBucket) del(key string) {
	delete(b.m.vals, key)
	if i, ok := slices.BinarySearch(b.m.keys, key); ok {
		b.m.keys = slices.Delete(b.m.keys, i, i+1)
	}
}

// rollback restores every key written in the transaction.
func (b *memBucket) rollback() {
	for key, old := range b.undo {
		b.del(key)
		if old != nil {
			i, _ := slices.BinarySearch(b.m.keys, key)
			b.m.keys = slices.Insert(b.m.keys, i, key)
			b.m.vals[key] = old
		}
	}
}

func (b *memBucket) cursor() cursor { return &memCursor{m: b.m} }

// memCursor walks the sorted keys. It is only used in views, where the
// keys do not change under it.
type memCursor struct {
	m *memSpace
	i int
}

func (c *memCursor) at() ([]byte, []byte) {
	if c.i >= len(c.m.keys) {
		return nil, nil
	}
	k := c.m.keys[c.i]
	return []byte(k), c.m.vals[k]
}

// Seek moves to the first key >= k.
func (c *memCursor) Seek(k []byte) ([]byte, []byte) {
	c.i, _ = slices.BinarySearch(c.m.keys, string(k))
	return c.at()
}

// Next moves to the next key.
func (c *memCursor) Next() ([]byte, []byte) {
	c.i++
	return c.at()
}
