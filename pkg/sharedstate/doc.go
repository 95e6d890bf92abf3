// Package sharedstate holds the gateway state that every instance shares
// through the store (pkg/store): circuit breakers ([SharedBreaker], a
// breaker.Guard and breaker.Reporter) and the provider-key rate-limit
// ledger ([Ledger], a keys.Picker with Statuses).
//
// Both follow the same rules, written out with the store calls they cost
// in docs/state-model.md:
//
//   - The request path reads a cache. Shared state is re-read at most once
//     per cache period per target (or key), by one caller, and ahead of
//     expiry in the background while traffic flows; the breaker normally
//     needs no read at all, because the answer of its batched counter
//     flush tells it whether a transition happened.
//   - What an instance observes applies locally at once and is written to
//     the store when it changes something (a trip, a probe verdict, a 429,
//     a 401/403, headroom crossing its threshold), never per request.
//     Outcome counts are batched and flushed at most once per flush
//     interval.
//   - Transitions are single-item conditional writes (IfVersion /
//     IfAbsent, or an Add bounded by Max for half-open probe grants), so
//     instances never overwrite each other's decisions.
//   - Every store call is bounded by a timeout (250 ms by default). When
//     the store is slow or down, both keep working from the cache plus
//     local observations (fail-open), log at a bounded rate, and stop
//     putting store calls on the request path until the store answers
//     again: a store outage never becomes a gateway outage.
//
// Keys appear in storage and logs only by fingerprint.
package sharedstate
