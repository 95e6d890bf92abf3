package keyledger

import (
	"context"
	"log/slog"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/llmgw/llmgw/pkg/store"
)

// Store is what the ledger needs from the store: one Query per provider
// key reads its credential item and all its model items; conditional puts
// write changes; Get re-reads an item after a conflict.
type Store interface {
	store.Getter
	store.Putter
	store.Querier
}

// Ledger defaults.
const (
	// DefaultCacheTTL is the longest Pick acts on a key's shared state
	// without re-reading it.
	DefaultCacheTTL = 2 * time.Second
	// DefaultMaxCooldown caps how long a 429 sets a key aside.
	DefaultMaxCooldown = 60 * time.Second
	// DefaultCooldown is used for a 429 that gives no hint at all.
	DefaultCooldown = 10 * time.Second
	// DefaultDisabledFor bounds how long a 401/403 disables a key whose
	// secret does not change (rotation re-enables at once: a new secret
	// has a new fingerprint).
	DefaultDisabledFor = 24 * time.Hour
	// DefaultMinRemainingRequests: a key with this many remaining requests
	// or fewer (before its reset) has no headroom.
	DefaultMinRemainingRequests = 1
	// DefaultMinRemainingTokens: likewise for every token dimension.
	DefaultMinRemainingTokens = 1000
)

// Options tune a [Ledger]. Zero fields take defaults.
type Options struct {
	// CacheTTL bounds how stale a key's shared state may be when Pick uses
	// it (default 2s): an older entry is re-read first (one caller, bounded
	// by StoreTimeout), and entries older than half of it are re-read in
	// the background.
	CacheTTL time.Duration
	// MaxCooldown caps how long a 429 sets a (key, model) pair aside
	// (default 60s).
	MaxCooldown time.Duration
	// DefaultCooldown is the pause after a 429 without Retry-After or
	// reset headers (default 10s).
	DefaultCooldown time.Duration
	// DisabledFor is how long a 401/403 disables a key (default 24h).
	DisabledFor time.Duration
	// MinRemainingRequests is the headroom threshold of requests: a pair
	// whose remaining requests are at or below it is skipped until that
	// limit's reset (default 1).
	MinRemainingRequests float64
	// MinRemainingTokens is the same for every token dimension (default
	// 1000).
	MinRemainingTokens float64
	// StoreTimeout bounds every store call (default 250ms).
	StoreTimeout time.Duration
	// StoreRetry is how long after a failed store call Pick stops waiting
	// on the store and works from its cache (default 1s).
	StoreRetry time.Duration
	// StoreContext makes the context of one store call (nil: a context
	// bounded by StoreTimeout). Tests use it to fire timeouts on demand.
	StoreContext func() (context.Context, context.CancelFunc)
	// LogEvery rate-limits store-error log lines (default 10s).
	LogEvery time.Duration
	// Now is the clock (nil: time.Now).
	Now func() time.Time
	// Logger receives one line per key state change and rate-limited
	// store errors (nil: discarded). Keys appear only by fingerprint.
	Logger *slog.Logger
}

// Ledger is the [Picker] whose knowledge of provider keys - rate limits
// (429 and remaining-headroom headers) and rejected credentials (401/403) -
// is shared by every gateway instance through the store.
//
// Per (provider, key fingerprint, model) it keeps the remaining requests
// and tokens the provider reported with their reset times and an
// unavailable-until stamp; per (provider, key fingerprint) a disabled-until
// stamp. Pick takes the highest-priority key that is usable for the model;
// it reads the store at most once per CacheTTL per key it looks at. Observe
// applies what it sees locally at once and writes to the store only when a
// key's state changes (a 429, a 401/403, headroom crossing its threshold).
//
// A new Ledger has no keys: give it the resolved keys with SetKeys on every
// config load (pkg/server does, from [Resolve]).
type Ledger struct {
	st   Store
	opt  Options
	call *store.Caller
	log  *slog.Logger

	mu      sync.Mutex
	keys    map[string][]Key // provider -> keys by priority
	entries map[entryID]*keyEntry
}

var (
	_ Picker = (*Ledger)(nil)
	_ Store  = store.Store(nil) // every backend will do
)

type entryID struct{ provider, fp string }

// keyEntry is the cached shared state of one provider key. Guarded by
// Ledger.mu.
type keyEntry struct {
	id            entryID
	fetchedAt     time.Time // the cache was read from the store then
	tried         time.Time // the last refresh started then
	known         bool
	busy          bool
	credFound     bool
	credVer       int64
	disabledUntil time.Time
	reason        string
	models        map[string]*slotState
}

// slotState is one (key, model) pair.
type slotState struct {
	found bool
	ver   int64
	until time.Time // unavailable until (429)
	hr    headroom
	obs   time.Time // when hr was reported
}

// New returns a ledger over st, with no keys yet (see [Ledger.SetKeys]).
func New(st Store, opt Options) *Ledger {
	if opt.CacheTTL <= 0 {
		opt.CacheTTL = DefaultCacheTTL
	}
	if opt.MaxCooldown <= 0 {
		opt.MaxCooldown = DefaultMaxCooldown
	}
	if opt.DefaultCooldown <= 0 {
		opt.DefaultCooldown = DefaultCooldown
	}
	if opt.DisabledFor <= 0 {
		opt.DisabledFor = DefaultDisabledFor
	}
	if opt.MinRemainingRequests <= 0 {
		opt.MinRemainingRequests = DefaultMinRemainingRequests
	}
	if opt.MinRemainingTokens <= 0 {
		opt.MinRemainingTokens = DefaultMinRemainingTokens
	}
	if opt.Now == nil {
		opt.Now = time.Now
	}
	if opt.Logger == nil {
		opt.Logger = slog.New(slog.DiscardHandler)
	}
	return &Ledger{st: st, opt: opt, log: opt.Logger, entries: map[entryID]*keyEntry{}, keys: map[string][]Key{},
		call: store.NewCaller(store.CallerOptions{Component: "ledger", Timeout: opt.StoreTimeout, Retry: opt.StoreRetry,
			LogEvery: opt.LogEvery, Now: opt.Now, Logger: opt.Logger, NewContext: opt.StoreContext})}
}

// SetKeys replaces the keys after a config change (provider id -> the
// provider's resolved keys, from [Resolve]; a provider absent from the map
// has no keys and gets the zero Key from Pick). What is known about a key
// is kept while its fingerprint is unchanged; a rotated key is a new key.
func (l *Ledger) SetKeys(ks map[string][]Key) {
	sorted := make(map[string][]Key, len(ks))
	for prov, list := range ks {
		list = append([]Key(nil), list...)
		sort.SliceStable(list, func(i, j int) bool { return list[i].Priority < list[j].Priority })
		sorted[prov] = list
	}
	l.mu.Lock()
	l.keys = sorted
	l.mu.Unlock()
}

func (l *Ledger) entryLocked(provider, fp string) *keyEntry {
	id := entryID{provider, fp}
	e := l.entries[id]
	if e == nil {
		e = &keyEntry{id: id, models: map[string]*slotState{}}
		l.entries[id] = e
	}
	return e
}

func (e *keyEntry) slot(model string) *slotState {
	s := e.models[model]
	if s == nil {
		s = &slotState{}
		e.models[model] = s
	}
	return s
}

// ---- Pick ----

// Pick implements Picker: the highest-priority key that is not disabled,
// not rate-limited and has headroom for the model. It reads the store only
// for keys it looks at whose cache is older than CacheTTL (one caller per
// key, bounded by StoreTimeout; concurrent callers use the cache), and
// refreshes entries older than CacheTTL/2 in the background. When no key
// is usable the error is an [*UnusableError] saying when the first one is
// usable again.
func (l *Ledger) Pick(provider, model string) (Key, error) {
	l.mu.Lock()
	ks, ok := l.keys[provider]
	l.mu.Unlock()
	if !ok {
		return Key{}, nil
	}
	now := l.opt.Now()
	ue := &UnusableError{Provider: provider, Reason: ReasonMissing}
	for _, k := range ks {
		l.mu.Lock()
		e := l.entryLocked(provider, k.Fingerprint)
		l.mu.Unlock()
		l.fresh(e, now)
		l.mu.Lock()
		why := l.why(e, model, now)
		at := l.usableAt(e, model, now)
		l.mu.Unlock()
		if why == "" {
			return k, nil
		}
		if ue.Until.IsZero() || at.Before(ue.Until) {
			ue.Reason, ue.Until = why, at
		}
	}
	return Key{}, ue
}

// fresh makes e no older than CacheTTL if the store answers in time, and
// starts a background refresh when it is older than half of it.
func (l *Ledger) fresh(e *keyEntry, now time.Time) {
	l.mu.Lock()
	age := now.Sub(e.fetchedAt)
	if e.busy || (e.known && age < l.opt.CacheTTL/2) || (!e.tried.IsZero() && now.Sub(e.tried) < l.opt.CacheTTL/2) {
		l.mu.Unlock()
		return
	}
	e.busy, e.tried = true, now
	if e.known && age < l.opt.CacheTTL || !l.call.Healthy() {
		l.mu.Unlock()
		l.call.Go(func() { l.refresh(e, false, now) })
		return
	}
	l.mu.Unlock()
	l.refresh(e, true, now)
}

// refresh reads a key's partition (its credential item and model items)
// in one Query and merges it into the cache. e.busy must be set; refresh
// clears it.
func (l *Ledger) refresh(e *keyEntry, blocking bool, now time.Time) {
	type modelItem struct {
		model string
		slot  slotState
	}
	var cred store.Item
	var credFound bool
	var items []modelItem
	err := l.call.Do(blocking, "query key ledger", func(ctx context.Context) error {
		return l.st.Query(ctx, store.LedgerPK(e.id.provider, e.id.fp), "", "", func(it store.Item) bool {
			if it.Key == store.LedgerCredentialKey(e.id.provider, e.id.fp) {
				cred, credFound = it, true
			} else if m, ok := strings.CutPrefix(it.Key.SK, "model"+store.Sep); ok {
				items = append(items, modelItem{store.Unescape(m), decodeSlot(it)})
			}
			return true
		})
	})
	var changes []keyChange
	l.mu.Lock()
	e.busy = false
	if err == nil {
		before := l.statesLocked(e, now)
		e.credFound, e.credVer = credFound, cred.Version
		if credFound {
			if until := store.FromMillis(cred.Nums[attrDisabledUntil]); until.After(e.disabledUntil) {
				e.disabledUntil, e.reason = until, cred.Strs[attrReason]
			}
		}
		seen := map[string]bool{}
		for _, mi := range items {
			seen[mi.model] = true
			e.slot(mi.model).merge(mi.slot)
		}
		for m, s := range e.models {
			if !seen[m] {
				s.found, s.ver = false, 0 // gone (expired) in the store; our own knowledge stays
			}
		}
		e.known, e.fetchedAt = true, now
		changes = l.diffLocked(e, before, now, "store")
	}
	l.mu.Unlock()
	l.logChanges(changes)
}

// merge folds a stored slot into the cached one: the later unavailable
// stamp and the more recent headroom report win.
func (s *slotState) merge(o slotState) {
	s.found, s.ver = o.found, o.ver
	s.until = later(s.until, o.until)
	if o.obs.After(s.obs) {
		s.hr, s.obs = o.hr, o.obs
	}
}

// later returns the later of two times.
func later(a, b time.Time) time.Time {
	if a.After(b) {
		return a
	}
	return b
}

// Wait waits for background refreshes and writes (for shutdown and tests).
func (l *Ledger) Wait() { l.call.Wait() }

// StoreCalls reports how many store calls this ledger has issued.
func (l *Ledger) StoreCalls() int64 { return l.call.Calls() }
