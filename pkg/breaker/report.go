package breaker

// report.go holds what the breaker tells the outside: transition log
// lines and callbacks, and snapshots for health reports.

import (
	"context"
	"log/slog"
	"math"
	"time"

	"github.com/llmgw/llmgw/pkg/traceid"
)

// ---- transitions: logging ----

type transition struct {
	from, to State
	snap     Snapshot
	source   string
}

// noteLocked returns the change of the effective state since the last
// note, if any; emit it after unlocking.
func (b *Breaker) noteLocked(t *target, now time.Time, source string) *transition {
	st, _ := b.stateLocked(t, now)
	if st == t.lastState {
		return nil
	}
	tr := &transition{from: t.lastState, to: st, snap: b.snapshotLocked(t, now), source: source}
	t.lastState, t.calm = st, false // a transition ends quiet mode
	return tr
}

// emit logs a transition (one structured line; with the trace id of the
// request that caused it, when ctx carries one) and calls OnTransition.
func (b *Breaker) emit(ctx context.Context, id string, tr *transition) {
	if tr == nil {
		return
	}
	lvl := slog.LevelWarn
	if tr.to == Closed {
		lvl = slog.LevelInfo
	}
	attrs := []slog.Attr{slog.String("target", id),
		slog.String("from", string(tr.from)), slog.String("to", string(tr.to)), slog.String("source", tr.source),
		slog.Float64("error_rate", tr.snap.ErrorRate), slog.Int("window_requests", tr.snap.Requests),
		slog.Int("window_failures", tr.snap.Failures), slog.Time("open_until", tr.snap.OpenUntil)}
	if tr.snap.Reason != "" {
		attrs = append(attrs, slog.String("reason", tr.snap.Reason))
	}
	if l := tr.snap.Latency; l != nil {
		attrs = append(attrs, slog.Float64("ttft_percentile", l.Percentile), slog.Float64("ttft_ms", l.TTFTMillis),
			slog.Float64("ttft_threshold_ms", l.ThresholdMillis), slog.Int("ttft_samples", l.Samples))
	}
	if id := traceid.From(ctx); id != "" {
		attrs = append(attrs, slog.String("trace_id", id))
	}
	b.log.LogAttrs(ctx, lvl, "breaker", attrs...)
	if b.opt.OnTransition != nil {
		b.opt.OnTransition(id, tr.from, tr.to, tr.snap)
	}
}

// report notes and emits a change of state; ctx is the request's, or
// context.Background() for background work.
func (b *Breaker) report(ctx context.Context, t *target, source string) {
	t.mu.Lock()
	tr := b.noteLocked(t, b.now(), source)
	t.mu.Unlock()
	b.emit(ctx, t.id, tr)
}

// ---- reports ----

func (b *Breaker) snapshotLocked(t *target, now time.Time) Snapshot {
	st, until := b.stateLocked(t, now)
	c := b.estimateLocked(t, now)
	snap := Snapshot{State: st, Requests: int(math.Round(c.total)), Failures: int(math.Round(c.failures)),
		Consecutive: t.consecutive, Latency: b.latencySnapshotLocked(t, now)}
	if st == Open {
		snap.OpenUntil = until
	}
	if st != Closed {
		snap.Reason = t.sh.reason
		if t.loc.pending && (t.loc.openUntil.After(t.sh.openUntil) || !t.sh.open) {
			snap.Reason = t.loc.reason
		}
	}
	if c.total > 0 {
		snap.ErrorRate = c.failures / c.total
	}
	return snap
}

// Snapshot implements Reporter from the cache: it never calls the
// store. Window counts are this instance's best knowledge of the global
// sliding window (the last flush's answer plus unflushed local outcomes).
func (b *Breaker) Snapshot(id string) Snapshot {
	b.mu.Lock()
	t := b.targets[id]
	b.mu.Unlock()
	if t == nil {
		return Snapshot{State: Closed}
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	return b.snapshotLocked(t, b.now())
}

// StoreCalls reports how many store calls this breaker has issued (for
