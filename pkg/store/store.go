package store

import (
	"context"
	"errors"
	"fmt"
	"io"
	"time"

	"github.com/llmgw/llmgw/pkg/deployment"
)

// Attribute names of the table, from the deployment contract (the stack
// declares the key schema and TTL with the same names). [Item.Nums] and
// [Item.Strs] must not use them.
const (
	// AttrPK is the partition key attribute (type S).
	AttrPK = deployment.AttrPK
	// AttrSK is the sort key attribute (type S).
	AttrSK = deployment.AttrSK
	// AttrTTL is the expiry attribute (type N, unix seconds). It is the
	// table's DynamoDB TTL attribute; absent means never expires.
	AttrTTL = deployment.AttrTTL
	// AttrVersion is the version attribute (type N), see [Item.Version].
	AttrVersion = deployment.AttrVersion
	// AttrData is the opaque payload attribute (type B), see [Item.Data].
	AttrData = deployment.AttrData
)

// Errors returned by every backend. Backends wrap them with context; test
// with errors.Is.
var (
	// ErrConflict means a write's condition did not hold: an IfAbsent put
	// over a live item, an IfVersion put or delete whose version is not the
	// stored one (or whose item is absent or expired), or an optimistic
	// retry loop that lost too many races in a row. Nothing was written.
	ErrConflict = errors.New("store: condition failed")

	// ErrLimit means an [Adder.Add] with [AddOptions.Max] would have taken
	// an attribute above its maximum. Nothing was written. It is distinct
	// from ErrConflict: it is an answer ("over budget"), not a race.
	ErrLimit = errors.New("store: limit exceeded")

	// ErrInvalid means the arguments were rejected before any I/O: a bad
	// key, a reserved or clashing attribute name, a non-finite number, an
	// item too large, a condition that makes no sense for the call.
	ErrInvalid = errors.New("store: invalid argument")
)

// Key addresses one item: a partition (PK) and a position in it (SK).
// Build keys with the functions in keys.go, never by hand.
type Key struct {
	PK string // partition key: items sharing it form one queryable partition
	SK string // sort key: position of the item in its partition (byte order)
}

// String renders the key for error messages and logs.
func (k Key) String() string { return fmt.Sprintf("%q/%q", k.PK, k.SK) }

// Item is one record of the table.
//
// Maps returned by a store are fresh copies owned by the caller. A nil or
// empty map and an empty Data are equivalent to absent: Data reads back as
// nil when it was written empty.
type Item struct {
	Key Key
	// Version is set by the store: 1 when the item is created, +1 on every
	// Put or Add. It is ignored on input (use IfVersion to compare).
	Version int64
	// Expires is when the item stops existing; zero means never. It is
	// stored as unix seconds rounded up, and reads return it in UTC.
	Expires time.Time
	// Nums are numeric attributes, e.g. counters updated with Add. Use
	// integral values (tokens, micro-dollars) for exact arithmetic: the
	// DynamoDB backend adds in decimal, the embedded one in float64.
	Nums map[string]float64
	// Strs are string attributes (valid UTF-8).
	Strs map[string]string
	// Data is an opaque payload, e.g. a JSON document.
	Data []byte
}

// CondKind is the kind of condition a [Cond] expresses.
type CondKind uint8

// The kinds of write condition.
const (
	// CondAlways writes unconditionally.
	CondAlways CondKind = iota
	// CondIfAbsent writes only if no live item has the key (an expired
	// item counts as absent).
	CondIfAbsent
	// CondIfVersion writes only if a live item with exactly Cond.Version
	// is stored.
	CondIfVersion
)

// Cond is the condition of a write ([Putter.Put], [Deleter.Delete]). Build it
// with [Always], [IfAbsent] or [IfVersion]; the zero value is Always.
type Cond struct {
	Kind    CondKind
	Version int64 // expected version, for CondIfVersion only
}

// Always is the condition that always holds.
func Always() Cond { return Cond{Kind: CondAlways} }

// IfAbsent holds when no live item has the key: the idempotent "create".
func IfAbsent() Cond { return Cond{Kind: CondIfAbsent} }

// IfVersion holds when the live item has version v: optimistic concurrency
// after a Get.
func IfVersion(v int64) Cond { return Cond{Kind: CondIfVersion, Version: v} }

// String renders the condition for error messages.
func (c Cond) String() string {
	switch c.Kind {
	case CondAlways:
		return "always"
	case CondIfAbsent:
		return "if-absent"
	case CondIfVersion:
		return fmt.Sprintf("if-version(%d)", c.Version)
	default:
		return fmt.Sprintf("cond(%d)", c.Kind)
	}
}

// AddOptions qualify an [Adder.Add].
type AddOptions struct {
	// Expires, when non-zero, is set as the item's expiry if the item has
	// none: in particular when the Add creates the item (or replaces an
	// expired one). An existing expiry is never changed.
	Expires time.Time
	// Max bounds attributes: the Add happens only if, for every attribute
	// named here, current + delta <= max (current is 0 when the attribute or
	// the item is absent; delta is 0 when the attribute is not in deltas).
	// Otherwise the Add fails with ErrLimit and nothing changes.
	Max map[string]float64
}

// Getter reads single items.
type Getter interface {
	// Get returns the live item with key k. found is false when there is
	// no item or it has expired. Reads are strongly consistent.
	Get(ctx context.Context, k Key) (it Item, found bool, err error)
}

// Putter writes whole items.
type Putter interface {
	// Put replaces the whole item it.Key with it (attributes not in it are
	// removed) if c holds, and returns the stored item with its new
	// Version. When c does not hold it returns an error matching
	// ErrConflict and nothing changes.
	Put(ctx context.Context, it Item, c Cond) (Item, error)
}

// Adder increments counters atomically.
type Adder interface {
	// Add adds each delta (negative deltas subtract) to the numeric
	// attribute of the same name, in one atomic single-item write,
	// creating the item (and attributes) from zero when absent or expired;
	// it increments the Version and returns the item after the update.
	// See AddOptions for expiry and limits; a limit that would be exceeded
	// fails with ErrLimit and nothing changes.
	Add(ctx context.Context, k Key, deltas map[string]float64, opts AddOptions) (Item, error)
}

// Querier reads ranges of one partition.
type Querier interface {
	// Query calls fn for each live item of partition pk with
	// skFrom <= SK < skTo, in SK byte order. An empty bound is open. The
	// partition is read page by page, never all at once, so partitions of
	// any size are fine. Query stops early, returning nil, when fn returns
	// false. fn may call the store.
	Query(ctx context.Context, pk, skFrom, skTo string, fn func(Item) bool) error
}

// Deleter removes items.
type Deleter interface {
	// Delete removes the item k if c holds. With Always, deleting an absent
	// item is not an error. With IfVersion it fails with ErrConflict unless
	// a live item with that version is stored. IfAbsent is invalid.
	Delete(ctx context.Context, k Key, c Cond) error
}

// Store is the whole storage contract. Implementations are safe for
// concurrent use. Consumers should depend on the smallest interface they
// need (Getter, Adder, ...), not on Store.
type Store interface {
	Getter
	Putter
	Adder
	Querier
	Deleter
	io.Closer
}
