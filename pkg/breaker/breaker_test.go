package breaker

import (
	"testing"
	"time"

	"github.com/llmgw/llmgw/pkg/config"
)

type clock struct{ t time.Time }

func (c *clock) now() time.Time          { return c.t }
func (c *clock) advance(d time.Duration) { c.t = c.t.Add(d) }

func newTestSet(s config.BreakerSettings) (*Set, *clock) {
	c := &clock{t: time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)}
	set := NewSet(s)
	set.Now = c.now
	return set, c
}

func settings() config.BreakerSettings {
	return config.BreakerSettings{
		Window: config.Duration(time.Minute), MinRequests: 10, FailureRate: 0.5, ConsecutiveFailures: 5,
		Cooldown: config.Duration(30 * time.Second), MaxCooldown: config.Duration(2 * time.Minute), HalfOpenProbes: 2,
	}
}

func run(t *testing.T, s *Set, o Outcome) error {
	t.Helper()
	done, err := s.Allow("p/m", "")
	if err != nil {
		return err
	}
	done(o)
	return nil
}

func TestTripsOnConsecutiveFailures(t *testing.T) {
	s, _ := newTestSet(settings())
	for i := 0; i < 4; i++ {
		run(t, s, Failure)
	}
	if s.Snapshot("p/m").State != Closed {
		t.Fatal("tripped before 5 consecutive failures")
	}
	run(t, s, Failure)
	if s.Snapshot("p/m").State != Open {
		t.Fatal("did not trip after 5 consecutive failures")
	}
	if err := run(t, s, Success); err != ErrOpen {
		t.Fatal("open breaker admitted a call")
	}
}

func TestTripsOnErrorRateOnlyWithMinimumVolume(t *testing.T) {
	set := settings()
	set.ConsecutiveFailures = 100
	s, _ := newTestSet(set)
	// 4 failures out of 8: rate 0.5 but below the minimum volume of 10.
	for i := 0; i < 4; i++ {
		run(t, s, Failure)
		run(t, s, Success)
	}
	if s.Snapshot("p/m").State != Closed {
		t.Fatal("tripped below the minimum volume")
	}
	run(t, s, Success)
	run(t, s, Failure) // 5 of 10
	if st := s.Snapshot("p/m"); st.State != Open {
		t.Fatalf("did not trip at rate 0.5 with volume 10: %+v", st)
	}
}

func TestWindowForgetsOldFailures(t *testing.T) {
	set := settings()
	set.ConsecutiveFailures = 100
	s, c := newTestSet(set)
	for i := 0; i < 9; i++ {
		run(t, s, Failure)
	}
	c.advance(2 * time.Minute)
	run(t, s, Failure)
	if st := s.Snapshot("p/m"); st.State != Closed || st.Requests != 1 {
		t.Fatalf("old failures still counted: %+v", st)
	}
}

func TestIgnoredOutcomesNeverTrip(t *testing.T) {
	s, _ := newTestSet(settings())
	for i := 0; i < 50; i++ {
		run(t, s, Ignored)
	}
	if st := s.Snapshot("p/m"); st.State != Closed || st.Requests != 0 {
		t.Fatalf("caller errors counted: %+v", st)
	}
}

func TestHalfOpenProbesThenCloseOrReopenWithCappedBackoff(t *testing.T) {
	s, c := newTestSet(settings())
	for i := 0; i < 5; i++ {
		run(t, s, Failure)
	}
	c.advance(29 * time.Second)
	if _, err := s.Allow("p/m", ""); err != ErrOpen {
		t.Fatal("admitted during cooldown")
	}
	c.advance(time.Second)
	d1, err1 := s.Allow("p/m", "")
	d2, err2 := s.Allow("p/m", "")
	_, err3 := s.Allow("p/m", "")
	if err1 != nil || err2 != nil || err3 != ErrOpen {
		t.Fatalf("half-open should admit exactly 2 probes: %v %v %v", err1, err2, err3)
	}
	d1(Failure) // a failed probe reopens with a doubled cooldown
	d2(Ignored)
	if st := s.Snapshot("p/m"); st.State != Open || st.OpenUntil.Sub(c.t) != time.Minute {
		t.Fatalf("want reopened for 60s, got %+v", st)
	}
	// Keep failing: cooldowns double but stop at MaxCooldown.
	for i := 0; i < 5; i++ {
		c.advance(3 * time.Minute)
		run(t, s, Failure)
	}
	if st := s.Snapshot("p/m"); st.OpenUntil.Sub(c.t) != 2*time.Minute {
		t.Fatalf("cooldown not capped at 2m: %v", st.OpenUntil.Sub(c.t))
	}
	c.advance(2 * time.Minute)
	run(t, s, Success)
	if st := s.Snapshot("p/m"); st.State != Closed {
		t.Fatalf("a successful probe did not close: %+v", st)
	}
	// After closing, the next trip starts from the base cooldown again.
	for i := 0; i < 5; i++ {
		run(t, s, Failure)
	}
	if st := s.Snapshot("p/m"); st.OpenUntil.Sub(c.t) != 30*time.Second {
		t.Fatalf("cooldown not reset after close: %v", st.OpenUntil.Sub(c.t))
	}
}

func TestForcedStates(t *testing.T) {
	s, _ := newTestSet(settings())
	if _, err := s.Allow("p/m", "open"); err != ErrOpen {
		t.Fatal("forced open admitted")
	}
	for i := 0; i < 5; i++ {
		run(t, s, Failure)
	}
	if _, err := s.Allow("p/m", "closed"); err != nil {
		t.Fatal("forced closed refused")
	}
}

func TestTransitionsAreReported(t *testing.T) {
	s, c := newTestSet(settings())
	var got []State
	s.OnTransition = func(_ string, _, to State, _ Snapshot) { got = append(got, to) }
	for i := 0; i < 5; i++ {
		run(t, s, Failure)
	}
	c.advance(time.Minute)
	run(t, s, Success)
	if len(got) != 3 || got[0] != Open || got[1] != HalfOpen || got[2] != Closed {
		t.Fatalf("transitions = %v", got)
	}
}

func BenchmarkAllowDone(b *testing.B) {
	s := NewSet(settings())
	b.ReportAllocs()
	for b.Loop() {
		done, _ := s.Allow("p/m", "")
		done(Success)
	}
}
