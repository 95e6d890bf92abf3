package store

// keys.go is the ONE place where key shapes of the table are defined. Every
// shape is listed here; add new ones here, with a row in keys_test.go.
//
//	shape            PK                                SK
//	breaker state    breaker#<target>                  state
//	breaker window   breaker#<target>                  win#<time>
//	breaker latency  breaker#<target>                  lat#<time>
//	breaker probes   breaker#<target>                  probe#<time>
//	retry budget     retry#<provider>                  win#<time>
//	ledger           ledger#<provider>#<fingerprint>   model#<model>
//	ledger key       ledger#<provider>#<fingerprint>   credential
//	budget           budget#<team>                     tag#<tag>#<window>#<time>
//	usage record     usage#<team>#<yyyy-mm-dd>         <time>#<requestID>
//	rollup           rollup#<team>                     day#<yyyy-mm-dd>
//	last good config config#<ssm-path>                 lastgood
//	cache entry      cache#team#<team>#<hash>          entry
//	shared entry     cache#shared#<hash>               entry
//	response owner   response#<response id>            owner
//	cache locality   locality#<conversation hash>      place
//	concurrency slot conc#<team>                       slot#<n>
//
// Conventions:
//   - Components are joined with [Sep] ("#"). Caller-supplied components are
//     escaped with [Escape] ("%" -> "%25", "#" -> "%23"), so no input can
//     forge a separator or collide with another key: the functions below
//     accept any string and never fail.
//   - <time> is [SortableTime]: fixed-width RFC 3339 in UTC with nanoseconds,
//     so byte order is time order. Days (<yyyy-mm-dd>) are UTC days.
//   - The first PK component names the shape, so shapes never share a
//     partition by accident. An SK starts with a constant word when the
//     partition may hold more than one kind of item.

import (
	"strconv"
	"strings"
	"time"
)

// Sep separates key components.
const Sep = "#"

// Key shape prefixes (first PK component).
const (
	breakerPrefix  = "breaker"
	retryPrefix    = "retry"
	ledgerPrefix   = "ledger"
	budgetPrefix   = "budget"
	usagePrefix    = "usage"
	rollupPrefix   = "rollup"
	configPrefix   = "config"
	cachePrefix    = "cache"
	respPrefix     = "response"
	localityPrefix = "locality"
	concPrefix     = "conc"
)

// sortableLayout is RFC 3339 with a fixed nine-digit fraction: unlike
// time.RFC3339Nano it never trims zeros, so byte order equals time order.
const sortableLayout = "2006-01-02T15:04:05.000000000Z"

// dayLayout formats UTC days.
const dayLayout = "2006-01-02"

var (
	escaper   = strings.NewReplacer("%", "%25", "#", "%23")
	unescaper = strings.NewReplacer("%23", "#", "%25", "%")
)

// Escape makes s safe as one key component: "%" becomes "%25" and "#"
// becomes "%23". It is injective, and the identity on strings without those
// two characters.
func Escape(s string) string { return escaper.Replace(s) }

// Unescape reverses [Escape].
func Unescape(s string) string { return unescaper.Replace(s) }

// SortableTime formats t for use in a key: RFC 3339 in UTC with exactly nine
// fractional digits (e.g. 2024-05-01T12:00:00.500000000Z), so that byte order
// equals time order for years 0000-9999. time.Parse(time.RFC3339Nano, ...)
// reads it back.
func SortableTime(t time.Time) string { return t.UTC().Format(sortableLayout) }

// Day formats the UTC day of t as yyyy-mm-dd.
func Day(t time.Time) string { return t.UTC().Format(dayLayout) }

// join escapes each caller-supplied component and joins everything with Sep.
// Constant words are passed pre-escaped through lit.
func join(parts ...part) string {
	var b strings.Builder
	for i, p := range parts {
		if i > 0 {
			b.WriteString(Sep)
		}
		if p.lit {
			b.WriteString(p.s)
		} else {
			b.WriteString(Escape(p.s))
		}
	}
	return b.String()
}

type part struct {
	s   string
	lit bool
}

func lit(s string) part { return part{s: s, lit: true} }
func val(s string) part { return part{s: s} }

// BreakerPK is the partition holding a circuit breaker's state and windows
// for one upstream target.
func BreakerPK(targetID string) string { return join(lit(breakerPrefix), val(targetID)) }

// BreakerKey is the item holding the current state of the circuit breaker
// of one upstream target (e.g. open/closed with a version for CAS updates).
func BreakerKey(targetID string) Key {
	return Key{PK: BreakerPK(targetID), SK: "state"}
}

// BreakerWindowKey is the item counting outcomes (successes, failures) of
// one upstream target in the window that starts at windowStart. Windows of a
// target share the breaker partition and sort by time, so recent windows
// are one Query with bounds from [BreakerWindowSK].
func BreakerWindowKey(targetID string, windowStart time.Time) Key {
	return Key{PK: BreakerPK(targetID), SK: BreakerWindowSK(windowStart)}
}

// BreakerWindowSK is the sort key of the breaker window starting at
// windowStart, also usable as a Query bound.
func BreakerWindowSK(windowStart time.Time) string {
	return join(lit("win"), lit(SortableTime(windowStart)))
}

// BreakerLatencyKey is the item holding the time-to-first-token histogram
// of one upstream target in the latency window that starts at windowStart
// (latency-aware breakers). It shares the breaker partition; Query bounds
// from [BreakerWindowSK] never select it.
func BreakerLatencyKey(targetID string, windowStart time.Time) Key {
	return Key{PK: BreakerPK(targetID), SK: join(lit("lat"), lit(SortableTime(windowStart)))}
}

// BreakerProbeKey is the item counting the half-open probes granted, across
// all instances, for one upstream target in the probe round that starts at
// roundStart (a breaker's open-until time, or a later round of it). It
// shares the breaker partition; Query bounds from [BreakerWindowSK] never
// select it.
func BreakerProbeKey(targetID string, roundStart time.Time) Key {
	return Key{PK: BreakerPK(targetID), SK: join(lit("probe"), lit(SortableTime(roundStart)))}
}

// RetryBudgetPK is the partition holding the retry budget counters of one
// provider, shared by every gateway instance.
func RetryBudgetPK(providerID string) string { return join(lit(retryPrefix), val(providerID)) }

// RetryBudgetKey is the item counting one provider's first attempts and
// retries, across all instances, in the budget slot that starts at
// slotStart. Slots of a provider sort by time in one partition, so the
// rolling minute is one Query with bounds from [RetryBudgetSK].
func RetryBudgetKey(providerID string, slotStart time.Time) Key {
	return Key{PK: RetryBudgetPK(providerID), SK: RetryBudgetSK(slotStart)}
}

// RetryBudgetSK is the sort key of the retry budget slot starting at
// slotStart, also usable as a Query bound.
func RetryBudgetSK(slotStart time.Time) string {
	return join(lit("win"), lit(SortableTime(slotStart)))
}

// LedgerPK is the partition of one provider API key (by fingerprint, never
// the key itself): its credential item and its per-model ledger items.
func LedgerPK(providerID, keyFingerprint string) string {
	return join(lit(ledgerPrefix), val(providerID), val(keyFingerprint))
}

// LedgerCredentialKey is the item holding the state of one provider API key
// as a whole, whatever the model (e.g. disabled after a 401/403). It shares
// the key's ledger partition, so one Query reads it with all model items.
func LedgerCredentialKey(providerID, keyFingerprint string) Key {
	return Key{PK: LedgerPK(providerID, keyFingerprint), SK: "credential"}
}

// LedgerKey is the rate-limit ledger item of one provider API key (by
// fingerprint, never the key itself) for one model. All models of one
// provider key share a partition.
func LedgerKey(providerID, keyFingerprint, model string) Key {
	return Key{
		PK: LedgerPK(providerID, keyFingerprint),
		SK: join(lit("model"), val(model)),
	}
}

// BudgetPK is the partition holding all budget counters of one team.
func BudgetPK(team string) string { return join(lit(budgetPrefix), val(team)) }

// BudgetKey is the spend counter of one team for one tag (empty: the whole
// team) in one budget window kind (e.g. "day", "month") starting at start.
func BudgetKey(team, tag, window string, start time.Time) Key {
	return Key{
		PK: BudgetPK(team),
		SK: join(lit("tag"), val(tag), val(window), lit(SortableTime(start))),
	}
}

// UsagePK is the partition of one team's usage records for the UTC day of
// t: a team-day is one partition, queried in time order.
func UsagePK(team string, t time.Time) string {
	return join(lit(usagePrefix), val(team), lit(Day(t)))
}

// UsageKey is the usage record of one request of a team at time at. The SK
// is <SortableTime(at)>#<requestID>, so records sort by time and requests
// at the same instant stay distinct.
func UsageKey(team string, at time.Time, requestID string) Key {
	return Key{
		PK: UsagePK(team, at),
		SK: join(lit(SortableTime(at)), val(requestID)),
	}
}

// UsageSKBounds returns Query bounds selecting the usage records with
// from <= at < to within one usage partition (see [UsagePK]; a range that
// crosses a UTC day needs one Query per day).
func UsageSKBounds(from, to time.Time) (skFrom, skTo string) {
	// "<time>" sorts before every "<time>#<id>" and after every earlier time.
	return SortableTime(from), SortableTime(to)
}

// RollupPK is the partition holding one team's daily rollups.
func RollupPK(team string) string { return join(lit(rollupPrefix), val(team)) }

// RollupKey is the rollup (aggregated usage) of one team for the UTC day of
// day. Days of a team sort in time order in one partition, so a month is one
// Query bounded by [RollupSK].
func RollupKey(team string, day time.Time) Key {
	return Key{PK: RollupPK(team), SK: RollupSK(day)}
}

// RollupSK is the sort key of the rollup of the UTC day of day, also usable
// as a Query bound.
func RollupSK(day time.Time) string { return join(lit("day"), lit(Day(day))) }

// ConfigLastGoodKey is the item holding the last good (accepted) gateway
// config read from the SSM path configPath, so that an instance that starts
// while the parameters do not validate can still serve. One item per path:
// each accepted config replaces it.
func ConfigLastGoodKey(configPath string) Key {
	return Key{PK: join(lit(configPrefix), val(configPath)), SK: "lastgood"}
}

// CacheKey is the response-cache entry of one request fingerprint (a hash
// of the canonical request, never the request itself) for one team: every
// entry is its own partition, so a popular team is not a hot key.
func CacheKey(team, hash string) Key {
	return Key{PK: join(lit(cachePrefix), lit("team"), val(team), val(hash)), SK: "entry"}
}

// SharedCacheKey is the response-cache entry of one request fingerprint
// readable by every team (a route whose cache is shared).
func SharedCacheKey(hash string) Key {
	return Key{PK: join(lit(cachePrefix), lit("shared"), val(hash)), SK: "entry"}
}

// ResponseOwnerKey is the item naming the account (target, provider key
// fingerprint, team) that created one Responses API response, by the
// upstream's response id: follow-ups (previous_response_id), retrieval,
// deletion, input items and cancellation go to that account on every
// instance. Every response is its own partition; the item expires with
// the upstream's retention of the response.
func ResponseOwnerKey(responseID string) Key {
	return Key{PK: join(lit(respPrefix), val(responseID)), SK: "owner"}
}

// LocalityKey is the item naming the target and provider key that last
// served one conversation of a route with cache_locality (pkg/locality),
// by a hash of the conversation (never its text): the next request of the
// conversation starts from that target on every instance. Every
// conversation is its own partition; the item expires with the route's
// cache_locality.ttl.
func LocalityKey(hash string) Key {
	return Key{PK: join(lit(localityPrefix), val(hash)), SK: "place"}
}

// ConcurrencyPK is the partition of one team's fleet-wide concurrency
// slots (limits.concurrency_scope: fleet).
func ConcurrencyPK(team string) string { return join(lit(concPrefix), val(team)) }

// ConcurrencyKey is slot n (0 to limits.max_concurrent_requests - 1) of a
// team's fleet-wide concurrency limit: the item exists while a request
// holds the slot, and expires with its lease (a crashed holder's slot
// frees itself). At most one item per slot number, so at most the limit
// in flight across every instance.
func ConcurrencyKey(team string, n int) Key {
	return Key{PK: ConcurrencyPK(team), SK: join(lit("slot"), lit(strconv.Itoa(n)))}
}

// ConcurrencySlot is the slot number of a ConcurrencyKey's SK; ok is
// false for any other SK.
func ConcurrencySlot(sk string) (n int, ok bool) {
	d, found := strings.CutPrefix(sk, "slot"+Sep)
	if !found {
		return 0, false
	}
	n, err := strconv.Atoi(d)
	return n, err == nil && n >= 0
}
