// Package embedded implements store.Store on a local bbolt file, or in
// memory ([OpenMemory]): the backend for tests and for running the gateway
// locally with no AWS.
//
// It gives the same semantics as the DynamoDB backend (package store/dynamo)
// and passes the same conformance suite (package store/storetest): the same
// conflict errors, TTL treatment (expired items are absent to every
// operation, and are never deleted by the store itself) and version
// increments. Every write is one bbolt read-write transaction, so each
// operation is atomic and the store is safe for concurrent use.
//
// bbolt is not context-aware: every call checks its context before starting,
// waits for the single writer slot in a context-aware way, and reads check
// the context again after the transaction. A write that has committed
// returns its result even if the context ended meanwhile (the write
// happened; an error would lie).
//
// Layout: one bucket, "items" (in memory: one sorted map); the bbolt key of an item is the 4-byte
// big-endian length of its PK, the PK, then the SK, so the items of one
// partition are contiguous and in SK byte order, exactly as in DynamoDB. The
// value is a small JSON document (version, ttl, numbers, strings, data).
package embedded

import (
	"bytes"
	"context"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"maps"
	"os"
	"sync"
	"time"

	bolt "go.etcd.io/bbolt"

	"github.com/llmgw/llmgw/pkg/store"
)

var bucketName = []byte("items")

// defaultQueryBatch is how many entries Query reads per read transaction.
const defaultQueryBatch = 256

// Store is the embedded backend. Create it with [Open] (a file) or
// [OpenMemory]; it is safe for concurrent use. Close it to release the file.
type Store struct {
	sp       space
	now      func() time.Time
	batch    int
	tmpPath  string        // removed on Close when Open was given no path
	writeSem chan struct{} // one writer at a time, acquired honouring ctx
	noSync   bool          // skip fsync per commit (WithNoSync)

	closeOnce sync.Once
	closeErr  error
}

var _ store.Store = (*Store)(nil)

// Open opens (creating if needed) the store file at path. An empty path
// means a new temporary file, removed on Close, written without fsync (its
// contents do not outlive the process anyway): use it for tests and the
// default local run.
func Open(path string, opts ...Option) (*Store, error) {
	s := newStore(opts)
	bopts := &bolt.Options{Timeout: 2 * time.Second, NoSync: s.noSync} // Timeout: fail instead of hanging on a file locked by another process
	if path == "" {
		f, err := os.CreateTemp("", "llmgw-store-*.db")
		if err != nil {
			return nil, fmt.Errorf("embedded: create temp file: %w", err)
		}
		path = f.Name()
		if err := f.Close(); err != nil {
			_ = os.Remove(path)
			return nil, fmt.Errorf("embedded: create temp file: %w", err)
		}
		s.tmpPath = path
		bopts.NoSync = true
		bopts.NoFreelistSync = true
	}
	db, err := bolt.Open(path, 0o600, bopts)
	if err != nil {
		if s.tmpPath != "" {
			_ = os.Remove(s.tmpPath)
		}
		return nil, fmt.Errorf("embedded: open %s: %w", path, err)
	}
	if err := db.Update(func(tx *bolt.Tx) error {
		_, err := tx.CreateBucketIfNotExists(bucketName)
		return err
	}); err != nil {
		_ = db.Close()
		if s.tmpPath != "" {
			_ = os.Remove(s.tmpPath)
		}
		return nil, fmt.Errorf("embedded: init %s: %w", path, err)
	}
	s.sp = boltSpace{db}
	return s, nil
}

// newStore returns a Store with opts applied and no space yet.
func newStore(opts []Option) *Store {
	s := &Store{now: time.Now, batch: defaultQueryBatch, writeSem: make(chan struct{}, 1)}
	for _, o := range opts {
		o(s)
	}
	return s
}

// Close closes the file (and removes it if it was temporary), or drops a
// memory store's contents. Calls after Close fail.
func (s *Store) Close() error {
	s.closeOnce.Do(func() {
		s.closeErr = s.sp.close()
		if s.tmpPath != "" {
			if err := os.Remove(s.tmpPath); err != nil && s.closeErr == nil {
				s.closeErr = err
			}
		}
		if s.closeErr != nil {
			s.closeErr = fmt.Errorf("embedded: close: %w", s.closeErr)
		}
	})
	return s.closeErr
}

// record is the stored form of an item.
type record struct {
	Ver  int64              `json:"v"`
	TTL  int64              `json:"t,omitempty"`
	Nums map[string]float64 `json:"n,omitempty"`
	Strs map[string]string  `json:"s,omitempty"`
	Data []byte             `json:"d,omitempty"`
}

func (r *record) item(k store.Key) store.Item {
	it := store.Item{Key: k, Version: r.Ver, Expires: store.ExpiresFromTTL(r.TTL)}
	if len(r.Nums) > 0 {
		it.Nums = r.Nums
	}
	if len(r.Strs) > 0 {
		it.Strs = r.Strs
	}
	if len(r.Data) > 0 {
		it.Data = r.Data
	}
	return it
}

func prefix(pk string) []byte {
	b := make([]byte, 4, 4+len(pk))
	binary.BigEndian.PutUint32(b, uint32(len(pk)))
	return append(b, pk...)
}

func dbKey(k store.Key) []byte { return append(prefix(k.PK), k.SK...) }

// load decodes the record stored under k, or returns nil. The result does
// not alias the space's memory (json.Unmarshal copies).
func load(b bucket, k []byte) (*record, error) {
	v := b.Get(k)
	if v == nil {
		return nil, nil
	}
	var r record
	if err := json.Unmarshal(v, &r); err != nil {
		return nil, fmt.Errorf("decode record: %w", err)
	}
	return &r, nil
}

func save(b bucket, k []byte, r *record) error {
	v, err := json.Marshal(r)
	if err != nil {
		return fmt.Errorf("encode record: %w", err)
	}
	return b.Put(k, v)
}

// write runs fn in a read-write transaction, waiting for the writer slot in
// a context-aware way.
func (s *Store) write(ctx context.Context, fn func(b bucket, now time.Time) error) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	select {
	case s.writeSem <- struct{}{}:
	case <-ctx.Done():
		return ctx.Err()
	}
	defer func() { <-s.writeSem }()
	if err := ctx.Err(); err != nil {
		return err
	}
	return s.sp.update(func(b bucket) error { return fn(b, s.now()) })
}

// Get implements store.Getter.
func (s *Store) Get(ctx context.Context, k store.Key) (store.Item, bool, error) {
	if err := k.Validate(); err != nil {
		return store.Item{}, false, fmt.Errorf("embedded: get %v: %w", k, err)
	}
	if err := ctx.Err(); err != nil {
		return store.Item{}, false, fmt.Errorf("embedded: get %v: %w", k, err)
	}
	var r *record
	err := s.sp.view(func(b bucket) error {
		var err error
		r, err = load(b, dbKey(k))
		return err
	})
	if err == nil {
		err = ctx.Err()
	}
	if err != nil {
		return store.Item{}, false, fmt.Errorf("embedded: get %v: %w", k, err)
	}
	if r == nil || store.Expired(r.TTL, s.now()) {
		return store.Item{}, false, nil
	}
	return r.item(k), true, nil
}

// Put implements store.Putter.
func (s *Store) Put(ctx context.Context, it store.Item, c store.Cond) (store.Item, error) {
	if err := it.Validate(); err != nil {
		return store.Item{}, fmt.Errorf("embedded: put %v: %w", it.Key, err)
	}
	if err := c.Validate(false); err != nil {
		return store.Item{}, fmt.Errorf("embedded: put %v: %w", it.Key, err)
	}
	nr := &record{
		TTL:  store.TTL(it.Expires),
		Nums: maps.Clone(it.Nums),
		Strs: maps.Clone(it.Strs),
		Data: bytes.Clone(it.Data),
	}
	k := dbKey(it.Key)
	err := s.write(ctx, func(b bucket, now time.Time) error {
		old, err := load(b, k)
		if err != nil {
			return err
		}
		live := old != nil && !store.Expired(old.TTL, now)
		switch c.Kind {
		case store.CondIfAbsent:
			if live {
				return fmt.Errorf("%w: item exists", store.ErrConflict)
			}
		case store.CondIfVersion:
			if !live {
				return fmt.Errorf("%w: item absent, expected version %d", store.ErrConflict, c.Version)
			}
			if old.Ver != c.Version {
				return fmt.Errorf("%w: version is %d, expected %d", store.ErrConflict, old.Ver, c.Version)
			}
		}
		nr.Ver = 1
		if old != nil {
			nr.Ver = old.Ver + 1 // also over an expired record: versions never go back
		}
		return save(b, k, nr)
	})
	if err != nil {
		return store.Item{}, fmt.Errorf("embedded: put %v: %w", it.Key, err)
	}
	return nr.item(it.Key), nil
}

// PutBatch writes items in one read-write transaction (one commit, one
// fsync for the whole batch), each under its own condition c, and returns
// one error per item (nil: written). An item whose condition does not hold
// gets an error matching store.ErrConflict and the others are still
// written; an invalid item gets store.ErrInvalid. When the transaction
// itself fails, every item not already rejected gets that error and
// nothing is written.
func (s *Store) PutBatch(ctx context.Context, items []store.Item, c store.Cond) []error {
	errs := make([]error, len(items))
	if err := c.Validate(false); err != nil {
		for i := range errs {
			errs[i] = fmt.Errorf("embedded: put %v: %w", items[i].Key, err)
		}
		return errs
	}
	type pending struct {
		i int
		k []byte
		r *record
	}
	todo := make([]pending, 0, len(items))
	for i, it := range items {
		if err := it.Validate(); err != nil {
			errs[i] = fmt.Errorf("embedded: put %v: %w", it.Key, err)
			continue
		}
		todo = append(todo, pending{i: i, k: dbKey(it.Key), r: &record{
			TTL:  store.TTL(it.Expires),
			Nums: maps.Clone(it.Nums),
			Strs: maps.Clone(it.Strs),
			Data: bytes.Clone(it.Data),
		}})
	}
	if len(todo) == 0 {
		return errs
	}
	conflicts := make([]error, len(items))
	err := s.write(ctx, func(b bucket, now time.Time) error {
		clear(conflicts)
		for _, p := range todo {
			old, err := load(b, p.k)
			if err != nil {
				return err
			}
			live := old != nil && !store.Expired(old.TTL, now)
			switch c.Kind {
			case store.CondIfAbsent:
				if live {
					conflicts[p.i] = fmt.Errorf("%w: item exists", store.ErrConflict)
					continue
				}
			case store.CondIfVersion:
				if !live || old.Ver != c.Version {
					conflicts[p.i] = fmt.Errorf("%w: version differs from %d", store.ErrConflict, c.Version)
					continue
				}
			}
			p.r.Ver = 1
			if old != nil {
				p.r.Ver = old.Ver + 1
			}
			if err := save(b, p.k, p.r); err != nil {
				return err
			}
		}
		return nil
	})
	for _, p := range todo {
		e := err
		if e == nil {
			e = conflicts[p.i]
		}
		if e != nil {
			errs[p.i] = fmt.Errorf("embedded: put %v: %w", items[p.i].Key, e)
		}
	}
	return errs
}

// Add implements store.Adder.
func (s *Store) Add(ctx context.Context, key store.Key, deltas map[string]float64, opts store.AddOptions) (store.Item, error) {
	if err := store.ValidateAdd(key, deltas, opts); err != nil {
		return store.Item{}, fmt.Errorf("embedded: add %v: %w", key, err)
	}
	k := dbKey(key)
	var nr *record
	err := s.write(ctx, func(b bucket, now time.Time) error {
		old, err := load(b, k)
		if err != nil {
			return err
		}
		nr = &record{Ver: 1}
		if old != nil {
			nr.Ver = old.Ver + 1
			if !store.Expired(old.TTL, now) {
				// Live: keep everything, add to the numbers.
				nr.TTL, nr.Nums, nr.Strs, nr.Data = old.TTL, old.Nums, old.Strs, old.Data
			}
			// Expired: start from an empty item (as if absent).
		}
		if name, ok := store.StringClash(nr.Strs, deltas, opts.Max); ok {
			return fmt.Errorf("%w: attribute %q is a string, not a number", store.ErrInvalid, name)
		}
		if name, over := store.ExceedsMax(nr.Nums, deltas, opts.Max); over {
			return fmt.Errorf("%w: attribute %q", store.ErrLimit, name)
		}
		if nr.Nums == nil && len(deltas) > 0 {
			nr.Nums = make(map[string]float64, len(deltas))
		}
		for name, d := range deltas {
			nr.Nums[name] += d
		}
		if nr.TTL == 0 {
			nr.TTL = store.TTL(opts.Expires)
		}
		return save(b, k, nr)
	})
	if err != nil {
		return store.Item{}, fmt.Errorf("embedded: add %v: %w", key, err)
	}
	return nr.item(key), nil
}

// Delete implements store.Deleter.
func (s *Store) Delete(ctx context.Context, key store.Key, c store.Cond) error {
	if err := key.Validate(); err != nil {
		return fmt.Errorf("embedded: delete %v: %w", key, err)
	}
	if err := c.Validate(true); err != nil {
		return fmt.Errorf("embedded: delete %v: %w", key, err)
	}
	k := dbKey(key)
	err := s.write(ctx, func(b bucket, now time.Time) error {
		if c.Kind == store.CondIfVersion {
			old, err := load(b, k)
			if err != nil {
				return err
			}
			if old == nil || store.Expired(old.TTL, now) {
				return fmt.Errorf("%w: item absent, expected version %d", store.ErrConflict, c.Version)
			}
			if old.Ver != c.Version {
				return fmt.Errorf("%w: version is %d, expected %d", store.ErrConflict, old.Ver, c.Version)
			}
		}
		return b.Delete(k)
	})
	if err != nil {
		return fmt.Errorf("embedded: delete %v: %w", key, err)
	}
	return nil
}

// Query implements store.Querier. It reads the partition in batches, one
// short read transaction per batch, and calls fn outside any transaction (so
// fn may write to the store without deadlocking bbolt).
func (s *Store) Query(ctx context.Context, pk, skFrom, skTo string, fn func(store.Item) bool) error {
	if err := store.ValidateQuery(pk, skFrom, skTo); err != nil {
		return fmt.Errorf("embedded: query %q: %w", pk, err)
	}
	if skTo != "" && skFrom >= skTo {
		return nil
	}
	pre := prefix(pk)
	start := append(bytes.Clone(pre), skFrom...)
	batch := make([]store.Item, 0, s.batch)
	for {
		if err := ctx.Err(); err != nil {
			return fmt.Errorf("embedded: query %q: %w", pk, err)
		}
		batch = batch[:0]
		var next []byte // where the next batch starts; nil: partition done
		now := s.now()
		err := s.sp.view(func(b bucket) error {
			c := b.cursor()
			scanned := 0
			for k, v := c.Seek(start); k != nil && bytes.HasPrefix(k, pre); k, v = c.Next() {
				sk := string(k[len(pre):])
				if skTo != "" && sk >= skTo {
					return nil
				}
				if scanned == s.batch {
					next = bytes.Clone(k)
					return nil
				}
				scanned++
				var r record
				if err := json.Unmarshal(v, &r); err != nil {
					return fmt.Errorf("decode record: %w", err)
				}
				if !store.Expired(r.TTL, now) {
					batch = append(batch, r.item(store.Key{PK: pk, SK: sk}))
				}
			}
			return nil
		})
		if err != nil {
			return fmt.Errorf("embedded: query %q: %w", pk, err)
		}
		for _, it := range batch {
			if err := ctx.Err(); err != nil {
				return fmt.Errorf("embedded: query %q: %w", pk, err)
			}
			if !fn(it) {
				return nil
			}
		}
		if next == nil {
			return nil
		}
		start = next
	}
}
