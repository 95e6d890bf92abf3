package breaker

import (
	"testing"
	"time"

	"github.com/llmgw/llmgw/pkg/config"
)

func latencyBreaker(p float64, minReq int) *Breaker {
	s := testSettings()
	s.Latency = &config.LatencySettings{Percentile: p, Threshold: config.Duration(5 * time.Second), MinRequests: minReq,
		Window: config.Duration(time.Minute), Cooldown: config.Duration(30 * time.Second)}
	b := &Breaker{}
	b.SetSettings(s)
	return b
}

// TestLatencyRuleIsThePercentile: the p-quantile exceeds the threshold
// exactly when more than 1-p of the samples are slower than it, with the
// minimum volume; the reported percentile is its bucket's bound.
func TestLatencyRuleIsThePercentile(t *testing.T) {
	b := latencyBreaker(0.95, 20)
	th := b.cfg().lat.Threshold.D()
	var h hist
	for i := 0; i < 19; i++ {
		h.add(80*time.Millisecond, th)
	}
	h.add(6*time.Second, th)
	if b.slow(h) || h.quantile(0.95) != 100*time.Millisecond {
		t.Errorf("1 slow of 20: breached %v, p95 %v (the 19th of 20 is fast)", b.slow(h), h.quantile(0.95))
	}
	h.add(6*time.Second, th) // 2 of 21
	if !b.slow(h) || h.quantile(0.95) != 7500*time.Millisecond {
		t.Errorf("2 slow of 21: breached %v, p95 %v", b.slow(h), h.quantile(0.95))
	}
	var few hist
	for i := 0; i < 19; i++ {
		few.add(time.Minute, th)
	}
	if b.slow(few) || few.quantile(0.5) != 60*time.Second {
		t.Errorf("below the minimum volume: breached %v; overflow bucket %v", b.slow(few), few.quantile(0.5))
	}
	// Merging (across instances, and the weighted previous bucket) keeps
	// the rule: the stored form round-trips.
	var m hist
	m.merge(histOf(h.nums()), 1)
	m.merge(histOf(h.nums()), 0.5)
	if m.n != 1.5*h.n || m.slow != 1.5*h.slow || !b.slow(m) {
		t.Errorf("merged %+v", m)
	}
}

// TestLatencySettingsDefaults: latency is off unless configured, and a
// configured block gets its defaults.
func TestLatencySettingsDefaults(t *testing.T) {
	const base = "providers: {a: {kind: fake}}\nroutes: {m: {targets: [{provider: a}]}}\n"
	c, err := config.Parse([]byte(base))
	if err != nil || c.Breaker.Latency != nil {
		t.Fatalf("latency on by default: %+v %v", c.Breaker.Latency, err)
	}
	c, err = config.Parse([]byte("breaker: {latency: {threshold: 4s}}\n" + base))
	if err != nil {
		t.Fatal(err)
	}
	if l := c.Breaker.Latency; l.Percentile != 0.95 || l.MinRequests != 20 || l.Window.D() != time.Minute || l.Cooldown.D() != 30*time.Second || l.Threshold.D() != 4*time.Second {
		t.Errorf("defaults = %+v", l)
	}
	if _, err := config.Parse([]byte("breaker: {latency: {percentile: 0.95}}\n" + base)); err == nil {
		t.Error("a latency block without a threshold was accepted")
	}
}
