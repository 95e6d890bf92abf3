// Package store is the gateway's shared-state layer: a tiny item model and
// small interfaces that circuit breakers, the provider-key rate-limit ledger,
// team budgets, usage records and per-team rollups are built on.
//
// # What is stored
//
// Everything lives in ONE table of items addressed by a [Key]: a partition
// key (PK) and a sort key (SK). Items of one partition are kept in SK byte
// order, so a partition can be read as a range ([Querier]). Every key shape
// of the table is built by the functions in keys.go; nothing else should
// concatenate key strings.
//
// An [Item] carries:
//   - a version ([Item.Version], attribute "ver"): set by the store, 1 on
//     creation and incremented by every write through [Putter.Put] or
//     [Adder.Add]; it is what optimistic concurrency ([IfVersion]) compares;
//   - an optional expiry ([Item.Expires], attribute "ttl", unix seconds);
//   - numeric attributes ([Item.Nums]), e.g. counters updated with
//     [Adder.Add];
//   - string attributes ([Item.Strs]);
//   - an opaque payload ([Item.Data], attribute "data"), e.g. a JSON usage
//     record.
//
// Numeric and string attribute names share one namespace and must not be
// one of the reserved attribute names (see [AttrPK] and friends).
//
// # TTL semantics
//
// An item whose expiry is not after the store's clock is ABSENT for every
// operation: [Getter.Get] reports it missing, [Querier.Query] skips it,
// [IfAbsent] puts succeed over it, [IfVersion] puts fail on it and
// [Adder.Add] starts from zero. DynamoDB deletes expired items lazily (often
// days later) and local emulators never do, so the backends never rely on
// deletion: every read and every condition checks the expiry itself.
// Expiry has one-second resolution: Expires is rounded UP to a whole second
// when stored, so an item never disappears before the time it was given.
//
// Versions are monotonic for as long as the underlying record exists, also
// across expiry: writing over an expired item continues from its version.
// Once the record is physically gone ([Deleter.Delete], or DynamoDB's TTL
// sweeper) a new item starts again at version 1.
//
// # Why no transactions
//
// Every read-modify-write is a single-item conditional write (a compare on
// "ver", an attribute_not_exists, or a bound on a counter). Multi-item
// transactions (TransactWriteItems) are slower, cost twice the capacity, and
// are not supported by dynalite, the DynamoDB emulator that the tests run
// against. Designs that seem to need a transaction must be reshaped into
// idempotent single-item steps (e.g. a reservation with Add and a later
// settling Add with a negative delta).
//
// # Backends
//
// Package store/embedded implements [Store] on a local bbolt file (tests and
// local runs: no AWS needed); package store/dynamo implements it on a
// DynamoDB table (production). Package store/storetest holds the
// conformance suite that both must pass; new backends must pass it too.
//
// Every method honours its context: callers wrap every call in a bounded
// timeout, and a cancelled or expired context makes a call return an error
// wrapping ctx.Err() promptly.
package store
