package keyledger

import (
	"context"
	"log/slog"
	"sort"
	"time"
)

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

// Statuses reports every key of a provider for a model (for GET /healthz)
// from the cache: never a store call; a stale entry is refreshed in the
// background.
func (l *Ledger) Statuses(provider, model string) []Status {
	now := l.opt.Now()
	l.mu.Lock()
	ks := l.keys[provider]
	l.mu.Unlock()
	if len(ks) == 0 {
		return nil
	}
	out := make([]Status, 0, len(ks))
	for _, k := range ks {
		l.mu.Lock()
		e := l.entryLocked(provider, k.Fingerprint)
		stale := !e.busy && now.Sub(e.fetchedAt) >= l.opt.CacheTTL/2 && now.Sub(e.tried) >= l.opt.CacheTTL/2
		if stale {
			e.busy, e.tried = true, now
		}
		why := l.why(e, model, now)
		st := Status{Fingerprint: k.Fingerprint, Available: why == "", Reason: why, Disabled: now.Before(e.disabledUntil)}
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
			l.call.Go(func() { l.refresh(e, false, now) })
		}
		out = append(out, st)
	}
	return out
}
