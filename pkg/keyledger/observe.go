package keyledger

import (
	"context"
	"errors"
	"net/http"
	"time"

	"github.com/llmgw/llmgw/pkg/store"
)

// Observe implements Picker. A 429 sets the pair aside until
// Retry-After (or the exhausted limit's reset; capped by MaxCooldown); a
// 401/403 disables the key for every model; rate-limit headers on other
// responses update its headroom. The change applies locally at once and is
// written to the store in the background - only when the pair's state
// changes, never for an ordinary response whose headroom stays on the same
// side of the threshold.
func (l *Ledger) Observe(provider, model string, k Key, status int, h http.Header) {
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
		d := cooldown(h, now)
		if d <= 0 {
			d = l.opt.DefaultCooldown
		}
		s := e.slot(model)
		s.until = later(s.until, store.FromMillis(store.Millis(now.Add(min(d, l.opt.MaxCooldown)))))
		if hr, ok := parseHeadroom(h, now); ok {
			s.hr, s.obs = hr, now
		}
		write = "slot"
	case status == http.StatusUnauthorized || status == http.StatusForbidden:
		e.disabledUntil = later(e.disabledUntil, store.FromMillis(store.Millis(now.Add(l.opt.DisabledFor))))
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
	l.call.Go(func() {
		if write == "credential" {
			l.writeCredential(e, now)
		} else {
			l.writeSlot(e, model, now)
		}
	})
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
	s := slotState{found: true, ver: it.Version, until: store.FromMillis(it.Nums[attrUntil]), obs: store.FromMillis(it.Nums[attrObserved])}
	for d := range s.hr {
		if rem, ok := it.Nums[remAttr(d)]; ok {
			s.hr[d] = limit{known: true, remaining: rem, reset: store.FromMillis(it.Nums[resetAttr(d)])}
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
		it.Nums[attrUntil] = store.Millis(s.until)
	}
	if !s.obs.IsZero() {
		it.Nums[attrObserved] = store.Millis(s.obs)
		exp = later(exp, s.obs.Add(l.opt.DefaultCooldown))
	}
	for d, lim := range s.hr {
		if !lim.known {
			continue
		}
		it.Nums[remAttr(d)] = lim.remaining
		if !lim.reset.IsZero() {
			it.Nums[resetAttr(d)] = store.Millis(lim.reset)
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
		err := l.call.Do(false, "put key ledger", func(ctx context.Context) error {
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
		if err := l.call.Do(false, "get key ledger", func(ctx context.Context) error {
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
		it := store.Item{Key: k, Expires: until, Nums: map[string]float64{attrDisabledUntil: store.Millis(until)},
			Strs: map[string]string{attrReason: reason}}
		var out store.Item
		err := l.call.Do(false, "put key credential", func(ctx context.Context) error {
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
		if err := l.call.Do(false, "get key credential", func(ctx context.Context) error {
			var err error
			got, ok, err = l.st.Get(ctx, k)
			return err
		}); err != nil {
			return
		}
		l.mu.Lock()
		e.credFound, e.credVer = ok, got.Version
		if ok {
			if u := store.FromMillis(got.Nums[attrDisabledUntil]); u.After(e.disabledUntil) {
				e.disabledUntil, e.reason = u, got.Strs[attrReason]
			}
		}
		l.mu.Unlock()
	}
}
