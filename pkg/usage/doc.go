// Package usage persists and reads the usage record (exchange.Record: one
// per client request, whatever its outcome, metadata only: prompt and
// completion text never enter a record): the store-backed [Recorder] that persists records idempotently,
// the cost arithmetic ([Cost], [TokenCost]), the daily per-team [Roller]
// and the read side: [BuildReport], the cost table and the GET /v1/usage
// handler ([NewHandler]).
//
// # Storage
//
// A record is one item at store.UsageKey(team, time, requestID) (partition
// usage#<team>#<day>), its JSON in Data, expiring after usage.ttl (default
// 90 days). A rollup is one item per team-day at store.RollupKey(team, day),
// with headline totals as Nums and the breakdown (per route, per tag, per
// outcome) as JSON in Data; rollups never expire.
package usage
