package embedded

import (
	bolt "go.etcd.io/bbolt"
)

// space is the ordered key space the store keeps its records in: a bbolt
// bucket in a file ([Open]) or a sorted map in memory ([OpenMemory]). The
// Store's logic (conditions, versions, expiry, batching) is written once
// against it.
type space interface {
	// update runs fn in a read-write transaction: its writes apply
	// atomically, and not at all when fn returns an error.
	update(fn func(b bucket) error) error
	// view runs fn in a read-only transaction with a consistent view.
	view(fn func(b bucket) error) error
	// close releases the space; later transactions fail.
	close() error
}

// bucket is the key space inside one transaction. Returned slices are only
// valid until the transaction ends.
type bucket interface {
	Get(k []byte) []byte
	Put(k, v []byte) error
	Delete(k []byte) error
	cursor() cursor
}

// cursor walks a bucket in key byte order.
type cursor interface {
	// Seek moves to the first key >= k; a nil key means the end.
	Seek(k []byte) (key, value []byte)
	// Next moves to the next key; a nil key means the end.
	Next() (key, value []byte)
}

var (
	_ space = boltSpace{}
	_ space = (*memSpace)(nil)
)

// boltSpace is a bbolt file with one bucket.
type boltSpace struct{ db *bolt.DB }

// boltBucket adapts *bolt.Bucket to bucket.
type boltBucket struct{ *bolt.Bucket }

func (b boltBucket) cursor() cursor { return b.Bucket.Cursor() }

func (s boltSpace) update(fn func(b bucket) error) error {
	return s.db.Update(func(tx *bolt.Tx) error { return fn(boltBucket{tx.Bucket(bucketName)}) })
}

func (s boltSpace) view(fn func(b bucket) error) error {
	return s.db.View(func(tx *bolt.Tx) error { return fn(boltBucket{tx.Bucket(bucketName)}) })
}

func (s boltSpace) close() error { return s.db.Close() }
