package breaker

// latency.go holds latency-aware health (config.LatencySettings): each
// target's time to first token (TTFT) is kept as a small histogram per
// latency window bucket, batched and merged across instances exactly like
// the outcome counts (one Add per flush, whose answer is the global
// histogram of the bucket), and a target whose percentile breaches the
// threshold with the minimum volume trips like any other: open for the
// latency cooldown, then probed (a probe slower than the threshold fails).
//
// The percentile test is exact: the p-quantile of the samples exceeds the
// threshold exactly when more than (1 - p) of them are slower than it, so
// each bucket also counts its slow samples. The histogram is for reports
// (/healthz, transition lines): the percentile it shows is the upper bound
// of the bucket holding it.

import (
	"context"
	"math"
	"strconv"
	"time"

	"github.com/llmgw/llmgw/pkg/store"
)

// latencyBounds are the upper bounds of the histogram's buckets; one more
// bucket holds everything slower.
var latencyBounds = [...]time.Duration{50 * time.Millisecond, 100 * time.Millisecond, 200 * time.Millisecond,
	300 * time.Millisecond, 500 * time.Millisecond, 750 * time.Millisecond, time.Second, 1500 * time.Millisecond,
	2 * time.Second, 3 * time.Second, 5 * time.Second, 7500 * time.Millisecond, 10 * time.Second, 15 * time.Second, 30 * time.Second}

const latencyBuckets = len(latencyBounds) + 1

// Attribute names of latency items.
const (
	attrSamples = "ln" // samples
	attrSlow    = "ls" // samples slower than the threshold
)

// bucketAttrs are the attribute names of the histogram buckets: l0, l1, ...
var bucketAttrs = func() (a [latencyBuckets]string) {
	for i := range a {
		a[i] = "l" + strconv.Itoa(i)
	}
	return a
}()

// hist is a TTFT histogram: samples, slow samples and bucket counts.
type hist struct {
	n, slow float64
	b       [latencyBuckets]float64
}

func (h *hist) add(d, threshold time.Duration) {
	h.n++
	if d > threshold {
		h.slow++
	}
	i := 0
	for i < len(latencyBounds) && d > latencyBounds[i] {
		i++
	}
	h.b[i]++
}

// merge adds w times o to h.
func (h *hist) merge(o hist, w float64) {
	h.n += w * o.n
	h.slow += w * o.slow
	for i := range h.b {
		h.b[i] += w * o.b[i]
	}
}

func (h hist) nums() map[string]float64 {
	m := map[string]float64{attrSamples: h.n, attrSlow: h.slow}
	for i, c := range h.b {
		if c != 0 {
			m[bucketAttrs[i]] = c
		}
	}
	return m
}

func histOf(nums map[string]float64) hist {
	h := hist{n: nums[attrSamples], slow: nums[attrSlow]}
	for i := range h.b {
		h.b[i] = nums[bucketAttrs[i]]
	}
	return h
}

// quantile is the upper bound of the bucket holding the p-quantile (twice
// the last bound for the overflow bucket); 0 without samples.
func (h hist) quantile(p float64) time.Duration {
	if h.n <= 0 {
		return 0
	}
	cum := 0.0
	for i, c := range h.b {
		cum += c
		if cum >= p*h.n-1e-9 && i < len(latencyBounds) {
			return latencyBounds[i]
		}
	}
	return 2 * latencyBounds[len(latencyBounds)-1]
}

// latWindow is the state of one target's latency windows (under t.mu).
type latWindow struct {
	pending             hist      // local samples not yet flushed
	pendingAt           time.Time // when the oldest of them was recorded
	curStart, prevStart time.Time
	cur, prev           hist // global histograms as last seen
	prevFetched         bool
}

// LatencySnapshot is a target's latency health in reports.
type LatencySnapshot struct {
	Percentile      float64 `json:"percentile"`
	TTFTMillis      float64 `json:"ttft_ms"`      // the percentile (the bound of its histogram bucket)
	ThresholdMillis float64 `json:"threshold_ms"` // the configured threshold
	Samples         int     `json:"samples"`      // in the window, all instances
	SlowShare       float64 `json:"slow_share"`   // share of samples over the threshold
	Breached        bool    `json:"breached"`     // the percentile exceeds the threshold with the minimum volume
}

// latBucket is the start of the latency bucket holding now, on the grid
// anchored at the last close.
func (b *Breaker) latBucket(epoch, now time.Time) time.Time {
	w := b.cfg().lat.Window.D().Milliseconds()
	e, n := int64(store.Millis(epoch)), now.UnixMilli()
	if n < e {
		n = e
	}
	return time.UnixMilli(e + (n-e)/w*w).UTC()
}

// latEstimateLocked is the sliding-window histogram: the current bucket,
// the previous one weighted by its overlap with the window, and the local
// unflushed samples.
func (b *Breaker) latEstimateLocked(t *target, now time.Time) hist {
	if b.cfg().lat == nil {
		return hist{}
	}
	win := b.cfg().lat.Window.D()
	lw := &t.lat
	s := b.latBucket(t.sh.epoch, now)
	var h hist
	if !lw.pendingAt.Before(s.Add(-win)) {
		h = lw.pending
	}
	if lw.curStart.Equal(s) {
		h.merge(lw.cur, 1)
	}
	w := math.Max(0, math.Min(1, 1-float64(now.Sub(s))/float64(win)))
	switch ps := s.Add(-win); {
	case ps.Before(t.sh.epoch):
	case lw.prevStart.Equal(ps):
		h.merge(lw.prev, w)
	case lw.curStart.Equal(ps):
		h.merge(lw.cur, w) // the bucket rolled since we last saw it
	}
	return h
}

// slow reports whether a histogram breaches the latency rule.
func (b *Breaker) slow(h hist) bool {
	return b.cfg().lat != nil && h.n > 0 && h.n >= float64(b.cfg().lat.MinRequests) && h.slow/h.n > 1-b.cfg().lat.Percentile
}

// recordLatencyLocked counts one committed attempt's TTFT.
func (b *Breaker) recordLatencyLocked(t *target, now time.Time, ttft time.Duration) {
	lw := &t.lat
	if lw.pending.n > 0 && lw.pendingAt.Before(b.latBucket(t.sh.epoch, now).Add(-b.cfg().lat.Window.D())) {
		lw.pending = hist{} // recorded before the window: the target's traffic stopped
	}
	if lw.pending.n == 0 {
		lw.pendingAt = now
	}
	lw.pending.add(ttft, b.cfg().lat.Threshold.D())
}

// latencySnapshotLocked reports the latency health, nil when off.
func (b *Breaker) latencySnapshotLocked(t *target, now time.Time) *LatencySnapshot {
	if b.cfg().lat == nil {
		return nil
	}
	h := b.latEstimateLocked(t, now)
	s := &LatencySnapshot{Percentile: b.cfg().lat.Percentile, TTFTMillis: float64(h.quantile(b.cfg().lat.Percentile).Milliseconds()),
		ThresholdMillis: float64(b.cfg().lat.Threshold.D().Milliseconds()), Samples: int(math.Round(h.n)), Breached: b.slow(h)}
	if h.n > 0 {
		s.SlowShare = h.slow / h.n
	}
	return s
}

// tripSlowLocked opens a slow target on this instance for the latency
// cooldown; the background sync writes it to the store.
func (b *Breaker) tripSlowLocked(t *target, now time.Time) {
	until := store.FromMillis(store.Millis(now.Add(b.cfg().lat.Cooldown.D())))
	t.loc = localTrip{pending: true, openUntil: later(until, t.loc.openUntil), trips: t.sh.trips + 1, reason: ReasonLatency}
	t.consecutive, t.fullRound, t.calm = 0, time.Time{}, false
}

// flushLatency writes the local samples (one Add on the current latency
// bucket, whose answer is the bucket's global histogram), then reads the
// previous bucket once after it ended when it may matter. It reports
// whether the samples were flushed.
func (b *Breaker) flushLatency(t *target, start time.Time) bool {
	if b.cfg().lat == nil {
		return false
	}
	t.mu.Lock()
	p := t.lat.pending
	s := b.latBucket(t.sh.epoch, start)
	epoch := t.sh.epoch
	t.mu.Unlock()
	if p.n == 0 {
		return false
	}
	win := b.cfg().lat.Window.D()
	var it store.Item
	err := b.call.Do(false, "flush breaker latency", func(ctx context.Context) error {
		var err error
		it, err = b.st.Add(ctx, store.BreakerLatencyKey(t.id, s), p.nums(), store.AddOptions{Expires: s.Add(3 * win)})
		return err
	})
	if err != nil {
		return false
	}
	t.mu.Lock()
	lw := &t.lat
	lw.pending.merge(p, -1)
	lw.pendingAt = start
	if lw.curStart.Equal(s.Add(-win)) {
		lw.prevStart, lw.prev, lw.prevFetched = lw.curStart, lw.cur, false
	}
	lw.curStart, lw.cur = s, histOf(it.Nums)
	ps := s.Add(-win)
	needPrev := lw.cur.slow > 0 && !ps.Before(epoch) && !(lw.prevStart.Equal(ps) && lw.prevFetched)
	t.mu.Unlock()
	if needPrev {
		var pit store.Item
		var found bool
		if b.call.Do(false, "get breaker latency", func(ctx context.Context) error {
			var err error
			pit, found, err = b.st.Get(ctx, store.BreakerLatencyKey(t.id, ps))
			return err
		}) == nil {
			t.mu.Lock()
			t.lat.prevStart, t.lat.prev, t.lat.prevFetched = ps, hist{}, true
			if found {
				t.lat.prev = histOf(pit.Nums)
			}
			t.mu.Unlock()
		}
	}
	return true
}
