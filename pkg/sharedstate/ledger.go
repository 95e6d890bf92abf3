package sharedstate

import (
	"context"
	"errors"
	"log/slog"
	"net/http"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/llmgw/llmgw/pkg/keys"
	"github.com/llmgw/llmgw/pkg/store"
)

// LedgerStore is what the key ledger needs from the store: one Query per
// provider key reads its credential item and all its model items;
// conditional puts write changes; Get re-reads an item after a conflict.
type LedgerStore interface {
	store.Getter
	store.Putter
	store.Querier
}

// Ledger defaults.
const (
	// DefaultLedgerCacheTTL is the longest Pick acts on a key's shared
	// state without re-reading it.
	DefaultLedgerCacheTTL = 2 * time.Second
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

// LedgerOptions tune a [Ledger]. Zero fields take defaults.
type LedgerOptions struct {
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
	// MinRemainingRequests and MinRemainingTokens are the headroom
	// thresholds: a pair whose remaining count is at or below one of them
	// is skipped until that limit's reset (defaults 1 and 1000).
	MinRemainingRequests float64
	MinRemainingTokens   float64
	// StoreTimeout bounds every store call (default 250ms).
	StoreTimeout time.Duration
	// StoreRetry is how long after a failed store call Pick stops waiting
	// on the store and works from its cache (default 1s).
	StoreRetry time.Duration
	// LogEvery rate-limits store-error log lines (default 10s).
	LogEvery time.Duration
	// Now is the clock (nil: time.Now).
	Now func() time.Time
	// Logger receives one line per key state change and rate-limited
	// store errors (nil: discarded). Keys appear only by fingerprint.
	Logger *slog.Logger
}

// Ledger is a [keys.Picker] whose knowledge of provider keys - rate limits
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
type Ledger struct {
	st   LedgerStore
	opt  LedgerOptions
	call *caller
	log  *slog.Logger

	mu      sync.Mutex
	keys    map[string][]keys.Key // provider -> keys by priority
	entries map[entryID]*keyEntry

	bg tracker // background refreshes and writes
}

var _ keys.Picker = (*Ledger)(nil)

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

// NewLedger returns a ledger over st for the given keys (provider id ->
// resolved keys; see [Ledger.SetKeys]).
func NewLedger(st LedgerStore, ks map[string][]keys.Key, opt LedgerOptions) *Ledger {
	if opt.CacheTTL <= 0 {
		opt.CacheTTL = DefaultLedgerCacheTTL
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
	if opt.StoreTimeout <= 0 {
		opt.StoreTimeout = DefaultStoreTimeout
	}
	if opt.StoreRetry <= 0 {
		opt.StoreRetry = DefaultStoreRetry
	}
	if opt.LogEvery <= 0 {
		opt.LogEvery = DefaultLogEvery
	}
	if opt.Now == nil {
		opt.Now = time.Now
	}
	if opt.Logger == nil {
		opt.Logger = discardLogger
	}
	l := &Ledger{st: st, opt: opt, log: opt.Logger, entries: map[entryID]*keyEntry{},
		call: newCaller("ledger", opt.StoreTimeout, opt.StoreRetry, opt.LogEvery, opt.Now, opt.Logger)}
	l.SetKeys(ks)
	return l
}

// SetKeys replaces the keys after a config change (provider id -> the
// provider's resolved keys; a provider absent from the map has no keys and
// gets the zero Key from Pick). What is known about a key is kept while its
// fingerprint is unchanged; a rotated key is a new key.
func (l *Ledger) SetKeys(ks map[string][]keys.Key) {
	sorted := make(map[string][]keys.Key, len(ks))
	for prov, list := range ks {
		list = append([]keys.Key(nil), list...)
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

// ---- availability ----

// why says why a (key, model) pair is not usable now ("" if it is).
func (l *Ledger) why(e *keyEntry, model string, now time.Time) string {
	if now.Before(e.disabledUntil) {
		return "disabled"
	}
	s := e.models[model]
	if s == nil {
		return ""
	}
	if now.Before(s.until) {
		return "rate_limited"
	}
	if !l.hasHeadroom(s.hr, s.obs, now) {
		return "low_headroom"
	}
	return ""
}

// hasHeadroom reports whether every reported dimension is above its
// threshold or past its reset. A low dimension without a reset time is
// trusted for DefaultCooldown after it was reported.
func (l *Ledger) hasHeadroom(hr headroom, obs, now time.Time) bool {
	for d, lim := range hr {
		if !lim.known {
			continue
		}
		min := l.opt.MinRemainingTokens
		if dimension(d) == dimRequests {
			min = l.opt.MinRemainingRequests
		}
		if lim.remaining > min {
			continue
		}
		reset := lim.reset
		if reset.IsZero() {
			reset = obs.Add(l.opt.DefaultCooldown)
		}
		if now.Before(reset) {
			return false
		}
	}
	return true
}

// ---- Pick ----

// Pick implements keys.Picker: the highest-priority key that is not
// disabled, not rate-limited and has headroom for the model. It reads the
// store only for keys it looks at whose cache is older than CacheTTL (one
// caller per key, bounded by StoreTimeout; concurrent callers use the
// cache), and refreshes entries older than CacheTTL/2 in the background.
func (l *Ledger) Pick(provider, model string) (keys.Key, bool) {
	l.mu.Lock()
	ks, ok := l.keys[provider]
	l.mu.Unlock()
	if !ok {
		return keys.Key{}, true
	}
	now := l.opt.Now()
	for _, k := range ks {
		l.mu.Lock()
		e := l.entryLocked(provider, k.Fingerprint)
		l.mu.Unlock()
		l.fresh(e, now)
		l.mu.Lock()
		usable := l.why(e, model, now) == ""
		l.mu.Unlock()
		if usable {
			return k, true
		}
	}
	return keys.Key{}, false
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
	if e.known && age < l.opt.CacheTTL || !l.call.healthy() {
		l.mu.Unlock()
		l.bg.Add(1)
		go func() {
			defer l.bg.Done()
			l.refresh(e, false, now)
		}()
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
	err := l.call.do(blocking, "query key ledger", func(ctx context.Context) error {
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
			if until := fromMS(cred.Nums[attrDisabledUntil]); until.After(e.disabledUntil) {
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

// ---- Observe ----

// Observe implements keys.Picker. A 429 sets the pair aside until
// Retry-After (or the exhausted limit's reset; capped by MaxCooldown); a
// 401/403 disables the key for every model; rate-limit headers on other
// responses update its headroom. The change applies locally at once and is
// written to the store in the background - only when the pair's state
// changes, never for an ordinary response whose headroom stays on the same
// side of the threshold.
func (l *Ledger) Observe(provider, model string, k keys.Key, status int, h http.Header) {
	if k.Fingerprint == "" {
		return
	}
	now := l.opt.Now()
	l.mu.Lock()
	e := l.entryLocked(provider, k.Fingerprint)
	before := l.statesLocked(e, now)
	write := ""
	switch {
	case status == http.StatusTooManyRequests:
		d := retryDelay(h, now)
		if d <= 0 {
			d = l.opt.DefaultCooldown
		}
		s := e.slot(model)
		s.until = later(s.until, fromMS(ms(now.Add(min(d, l.opt.MaxCooldown)))))
		if hr, ok := parseHeadroom(h, now); ok {
			s.hr, s.obs = hr, now
		}
		write = "slot"
	case status == http.StatusUnauthorized || status == http.StatusForbidden:
		e.disabledUntil = later(e.disabledUntil, fromMS(ms(now.Add(l.opt.DisabledFor))))
		e.reason = http.StatusText(status)
		write = "credential"
	case status >= 200 && status < 300:
		hr, ok := parseHeadroom(h, now)
		if !ok {
			l.mu.Unlock()
			return
		}
		s := e.slot(model)
		had := l.hasHeadroom(s.hr, s.obs, now)
		s.hr, s.obs = hr, now
		if l.hasHeadroom(hr, now, now) != had {
			write = "slot"
		}
	}
	changes := l.diffLocked(e, before, now, "local")
	l.mu.Unlock()
	l.logChanges(changes)
	if write == "" {
		return
	}
	l.bg.Add(1)
	go func() {
		defer l.bg.Done()
		if write == "credential" {
			l.writeCredential(e, now)
		} else {
			l.writeSlot(e, model, now)
		}
	}()
}

// Attribute names of the ledger's items.
const (
	attrUntil         = "until"          // model item: unavailable until (unix ms)
	attrObserved      = "obs"            // model item: when the headroom was reported (unix ms)
	attrDisabledUntil = "disabled_until" // credential item: unix ms
	attrReason        = "reason"         // credential item: why it is disabled
)

func remAttr(d int) string   { return dimNames[d] + "_rem" }
func resetAttr(d int) string { return dimNames[d] + "_reset" }

func decodeSlot(it store.Item) slotState {
	s := slotState{found: true, ver: it.Version, until: fromMS(it.Nums[attrUntil]), obs: fromMS(it.Nums[attrObserved])}
	for d := range s.hr {
		if rem, ok := it.Nums[remAttr(d)]; ok {
			s.hr[d] = limit{known: true, remaining: rem, reset: fromMS(it.Nums[resetAttr(d)])}
		}
	}
	return s
}

// slotItem encodes a slot. It expires when nothing in it matters any
// more: after its unavailable stamp and every reset (at least a minute
// after now, so a fresh report is not lost at once).
func (l *Ledger) slotItem(k store.Key, s slotState, now time.Time) store.Item {
	it := store.Item{Key: k, Nums: map[string]float64{}}
	exp := later(now.Add(time.Minute), s.until)
	if !s.until.IsZero() {
		it.Nums[attrUntil] = ms(s.until)
	}
	if !s.obs.IsZero() {
		it.Nums[attrObserved] = ms(s.obs)
		exp = later(exp, s.obs.Add(l.opt.DefaultCooldown))
	}
	for d, lim := range s.hr {
		if !lim.known {
			continue
		}
		it.Nums[remAttr(d)] = lim.remaining
		if !lim.reset.IsZero() {
			it.Nums[resetAttr(d)] = ms(lim.reset)
			exp = later(exp, lim.reset)
		}
	}
	it.Expires = exp
	return it
}

// writeSlot writes the cached slot, conditioned on the version it was read
// at; on a conflict it re-reads the item, merges, and tries again.
func (l *Ledger) writeSlot(e *keyEntry, model string, now time.Time) {
	k := store.LedgerKey(e.id.provider, e.id.fp, model)
	for attempt := 0; attempt < 3; attempt++ {
		l.mu.Lock()
		s := *e.slot(model)
		l.mu.Unlock()
		cond := store.IfAbsent()
		if s.found {
			cond = store.IfVersion(s.ver)
		}
		var out store.Item
		err := l.call.do(false, "put key ledger", func(ctx context.Context) error {
			var err error
			out, err = l.st.Put(ctx, l.slotItem(k, s, now), cond)
			return err
		})
		if err == nil {
			l.mu.Lock()
			cur := e.slot(model)
			if !cur.found || cur.ver < out.Version {
				cur.found, cur.ver = true, out.Version
			}
			l.mu.Unlock()
			return
		}
		if !errors.Is(err, store.ErrConflict) {
			return // logged by the caller; local state stands
		}
		var it store.Item
		var found bool
		if err := l.call.do(false, "get key ledger", func(ctx context.Context) error {
			var err error
			it, found, err = l.st.Get(ctx, k)
			return err
		}); err != nil {
			return
		}
		l.mu.Lock()
		cur := e.slot(model)
		if found {
			cur.merge(decodeSlot(it))
		} else {
			cur.found, cur.ver = false, 0
		}
		l.mu.Unlock()
	}
}

// writeCredential writes the key's disabled stamp (the later stamp wins).
func (l *Ledger) writeCredential(e *keyEntry, now time.Time) {
	k := store.LedgerCredentialKey(e.id.provider, e.id.fp)
	for attempt := 0; attempt < 3; attempt++ {
		l.mu.Lock()
		until, reason, found, ver := e.disabledUntil, e.reason, e.credFound, e.credVer
		l.mu.Unlock()
		cond := store.IfAbsent()
		if found {
			cond = store.IfVersion(ver)
		}
		it := store.Item{Key: k, Expires: until, Nums: map[string]float64{attrDisabledUntil: ms(until)},
			Strs: map[string]string{attrReason: reason}}
		var out store.Item
		err := l.call.do(false, "put key credential", func(ctx context.Context) error {
			var err error
			out, err = l.st.Put(ctx, it, cond)
			return err
		})
		if err == nil {
			l.mu.Lock()
			e.credFound, e.credVer = true, out.Version
			l.mu.Unlock()
			return
		}
		if !errors.Is(err, store.ErrConflict) {
			return
		}
		var got store.Item
		var ok bool
		if err := l.call.do(false, "get key credential", func(ctx context.Context) error {
			var err error
			got, ok, err = l.st.Get(ctx, k)
			return err
		}); err != nil {
			return
		}
		l.mu.Lock()
		e.credFound, e.credVer = ok, got.Version
		if ok {
			if u := fromMS(got.Nums[attrDisabledUntil]); u.After(e.disabledUntil) {
				e.disabledUntil, e.reason = u, got.Strs[attrReason]
			}
		}
		l.mu.Unlock()
	}
}

// ---- state-change log lines ----

// keyChange is a change of one pair's state, for the log line.
type keyChange struct {
	provider, fp, model string
	from, to            string
	until               time.Time
	hr                  headroom
	source              string
}

// statesLocked is the state name of every known pair of e.
func (l *Ledger) statesLocked(e *keyEntry, now time.Time) map[string]string {
	out := make(map[string]string, len(e.models)+1)
	for m := range e.models {
		out[m] = stateName(l.why(e, m, now))
	}
	out[""] = stateName(l.why(e, "", now)) // the key as a whole
	return out
}

func stateName(why string) string {
	if why == "" {
		return "available"
	}
	return why
}

// diffLocked lists the pairs whose state changed since before.
func (l *Ledger) diffLocked(e *keyEntry, before map[string]string, now time.Time, source string) []keyChange {
	var out []keyChange
	after := l.statesLocked(e, now)
	for m, to := range after {
		from, ok := before[m]
		if !ok {
			from = "available"
		}
		if from == to || (m != "" && to == "disabled") {
			continue // a disabled key is reported once, as a whole
		}
		c := keyChange{provider: e.id.provider, fp: e.id.fp, model: m, from: from, to: to, source: source}
		if m == "" {
			c.until = e.disabledUntil
		} else {
			s := e.models[m]
			c.until, c.hr = s.until, s.hr
		}
		out = append(out, c)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].model < out[j].model })
	return out
}

func (l *Ledger) logChanges(cs []keyChange) {
	for _, c := range cs {
		attrs := []slog.Attr{slog.String("provider", c.provider), slog.String("key", c.fp),
			slog.String("from", c.from), slog.String("to", c.to), slog.String("source", c.source)}
		if c.model != "" {
			attrs = append(attrs, slog.String("model", c.model))
		}
		if !c.until.IsZero() && c.to != "available" {
			attrs = append(attrs, slog.Time("until", c.until))
		}
		for d, lim := range c.hr {
			if lim.known {
				attrs = append(attrs, slog.Float64("remaining_"+dimNames[d], lim.remaining))
			}
		}
		lvl := slog.LevelWarn
		if c.to == "available" {
			lvl = slog.LevelInfo
		}
		l.log.LogAttrs(context.Background(), lvl, "provider key", attrs...)
	}
}

// ---- reports ----

// Limit is one dimension's last reported headroom.
type Limit = keys.Limit

// KeyStatus is [keys.Status] with what the ledger knows besides: why the
// key is unusable and its last reported headroom.
type KeyStatus struct {
	keys.Status
	// Reason is "" (available), "disabled", "rate_limited" or
	// "low_headroom".
	Reason   string  `json:"reason,omitempty"`
	Headroom []Limit `json:"headroom,omitempty"`
}

// KeyStatuses reports every key of a provider for a model from the cache
// (never a store call; a stale entry is refreshed in the background).
func (l *Ledger) KeyStatuses(provider, model string) []KeyStatus {
	now := l.opt.Now()
	l.mu.Lock()
	ks := l.keys[provider]
	l.mu.Unlock()
	out := make([]KeyStatus, 0, len(ks))
	for _, k := range ks {
		l.mu.Lock()
		e := l.entryLocked(provider, k.Fingerprint)
		stale := !e.busy && now.Sub(e.fetchedAt) >= l.opt.CacheTTL/2 && now.Sub(e.tried) >= l.opt.CacheTTL/2
		if stale {
			e.busy, e.tried = true, now
		}
		why := l.why(e, model, now)
		st := KeyStatus{Status: keys.Status{Fingerprint: k.Fingerprint, Available: why == ""}, Reason: why}
		if now.Before(e.disabledUntil) {
			st.Disabled = true
		}
		if s := e.models[model]; s != nil {
			if now.Before(s.until) {
				st.UnavailableUntil = s.until
			}
			for d, lim := range s.hr {
				if lim.known {
					st.Headroom = append(st.Headroom, Limit{Dimension: dimNames[d], Remaining: lim.remaining, Reset: lim.reset})
				}
			}
		}
		l.mu.Unlock()
		if stale {
			l.bg.Add(1)
			go func() {
				defer l.bg.Done()
				l.refresh(e, false, now)
			}()
		}
		out = append(out, st)
	}
	return out
}

// Statuses reports every key of a provider for a model (the method
// server.Options.Keys needs), from the cache.
func (l *Ledger) Statuses(provider, model string) []keys.Status {
	ks := l.KeyStatuses(provider, model)
	if len(ks) == 0 {
		return nil
	}
	out := make([]keys.Status, len(ks))
	for i, k := range ks {
		out[i] = k.Status
		out[i].Reason, out[i].Headroom = k.Reason, k.Headroom
	}
	return out
}

// Wait waits for background refreshes and writes (for shutdown and tests).
func (l *Ledger) Wait() { l.bg.Wait() }

// StoreCalls reports how many store calls this ledger has issued.
func (l *Ledger) StoreCalls() int64 { return l.call.calls.Load() }
