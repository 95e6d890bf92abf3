package breaker

import (
	"errors"
	"testing"
	"time"

	"github.com/llmgw/llmgw/pkg/config"
	"github.com/llmgw/llmgw/pkg/store/embedded"
	"github.com/llmgw/llmgw/pkg/store/storetest"
)

// The rules on one instance, on a shifted clock (these were the tests of
// the in-process breaker this one replaced).

func ruleSettings() config.BreakerSettings {
	return config.BreakerSettings{
		Window: config.Duration(time.Minute), MinRequests: 10, FailureRate: 0.5, ConsecutiveFailures: 5,
		Cooldown: config.Duration(30 * time.Second), MaxCooldown: config.Duration(2 * time.Minute), HalfOpenProbes: 2,
	}
}

// oneInstance returns a breaker over a fresh memory store and the clock
// both use.
func oneInstance(t *testing.T, s config.BreakerSettings, opt Options) (*Breaker, *storetest.Env) {
	clk := storetest.ClockOf(t)
	st := embedded.OpenMemory(embedded.WithClock(clk.Now))
	t.Cleanup(func() { st.Close() })
	e := &storetest.Env{T: t, Clock: clk, Store: st, Backend: "embedded"}
	return newBreaker(e, st, s, opt), e
}

// attempt is run followed by the background store work it started, so
// that decisions taken on a flush's answer (the error rate) are in.
func attempt(b *Breaker, o Outcome) error {
	err := run(b, "p/m", o)
	b.Wait()
	return err
}

func TestTripsOnConsecutiveFailures(t *testing.T) {
	b, _ := oneInstance(t, ruleSettings(), Options{})
	for i := 0; i < 4; i++ {
		attempt(b, Failure)
	}
	if b.Snapshot("p/m").State != Closed {
		t.Fatal("tripped before 5 consecutive failures")
	}
	attempt(b, Failure)
	if b.Snapshot("p/m").State != Open {
		t.Fatal("did not trip after 5 consecutive failures")
	}
	if err := attempt(b, Success); !errors.Is(err, ErrOpen) {
		t.Fatal("open breaker admitted a call")
	}
}

func TestSuccessEndsTheFailureRun(t *testing.T) {
	b, _ := oneInstance(t, ruleSettings(), Options{})
	for i := 0; i < 20; i++ {
		o := Failure
		if i%4 == 3 {
			o = Success
		}
		attempt(b, o)
		if i < 9 && b.Snapshot("p/m").State != Closed {
			t.Fatalf("tripped after %d attempts with no run of 5 failures and under the minimum volume", i+1)
		}
	}
}

func TestTripsOnErrorRateOnlyWithMinimumVolume(t *testing.T) {
	set := ruleSettings()
	set.ConsecutiveFailures = 100
	b, _ := oneInstance(t, set, Options{})
	// 4 failures out of 8: rate 0.5 but below the minimum volume of 10.
	for i := 0; i < 4; i++ {
		attempt(b, Failure)
		attempt(b, Success)
	}
	if b.Snapshot("p/m").State != Closed {
		t.Fatal("tripped below the minimum volume")
	}
	attempt(b, Success)
	attempt(b, Failure) // 5 of 10
	if st := b.Snapshot("p/m"); st.State != Open {
		t.Fatalf("did not trip at rate 0.5 with volume 10: %+v", st)
	}
}

func TestWindowForgetsOldFailures(t *testing.T) {
	set := ruleSettings()
	set.ConsecutiveFailures = 100
	b, e := oneInstance(t, set, Options{})
	for i := 0; i < 9; i++ {
		attempt(b, Failure)
	}
	e.Advance(2 * time.Minute)
	attempt(b, Failure)
	if st := b.Snapshot("p/m"); st.State != Closed || st.Requests != 1 {
		t.Fatalf("old failures still counted: %+v", st)
	}
}

func TestHalfOpenProbesThenCloseOrReopenWithCappedBackoff(t *testing.T) {
	b, e := oneInstance(t, ruleSettings(), Options{})
	for i := 0; i < 5; i++ {
		attempt(b, Failure)
	}
	e.Advance(29 * time.Second)
	if _, err := b.Allow("p/m", ""); !errors.Is(err, ErrOpen) {
		t.Fatal("admitted during cooldown")
	}
	e.Advance(time.Second)
	d1, err1 := b.Allow("p/m", "")
	d2, err2 := b.Allow("p/m", "")
	_, err3 := b.Allow("p/m", "")
	if err1 != nil || err2 != nil || !errors.Is(err3, ErrOpen) {
		t.Fatalf("half-open should admit exactly 2 probes: %v %v %v", err1, err2, err3)
	}
	d1(Failure) // a failed probe reopens with a doubled cooldown
	d2(Ignored)
	b.Wait()
	if st := b.Snapshot("p/m"); st.State != Open || st.OpenUntil.Sub(e.Now()) != time.Minute {
		t.Fatalf("want reopened for 60s, got %+v", st)
	}
	// Keep failing: cooldowns double but stop at MaxCooldown. (Each probe
	// comes as its cooldown ends: an episode nobody probes for max_cooldown
	// after that is forgotten, its state item expired.)
	for i := 0; i < 5; i++ {
		e.Advance(b.Snapshot("p/m").OpenUntil.Sub(e.Now()))
		if err := attempt(b, Failure); err != nil {
			t.Fatalf("probe %d refused: %v", i, err)
		}
	}
	if st := b.Snapshot("p/m"); st.OpenUntil.Sub(e.Now()) != 2*time.Minute {
		t.Fatalf("cooldown not capped at 2m: %v", st.OpenUntil.Sub(e.Now()))
	}
	e.Advance(2 * time.Minute)
	attempt(b, Success)
	if st := b.Snapshot("p/m"); st.State != Closed {
		t.Fatalf("a successful probe did not close: %+v", st)
	}
	// After closing, the next trip starts from the base cooldown again.
	for i := 0; i < 5; i++ {
		attempt(b, Failure)
	}
	if st := b.Snapshot("p/m"); st.OpenUntil.Sub(e.Now()) != 30*time.Second {
		t.Fatalf("cooldown not reset after close: %v", st.OpenUntil.Sub(e.Now()))
	}
}

func TestTransitionsAreReported(t *testing.T) {
	var got []State
	b, e := oneInstance(t, ruleSettings(), Options{OnTransition: func(_ string, _, to State, _ Snapshot) { got = append(got, to) }})
	for i := 0; i < 5; i++ {
		attempt(b, Failure)
	}
	e.Advance(time.Minute)
	attempt(b, Success)
	if len(got) != 3 || got[0] != Open || got[1] != HalfOpen || got[2] != Closed {
		t.Fatalf("transitions = %v", got)
	}
}

// Zero values in the settings switch a rule off instead of degenerating:
// consecutive_failures 0 never trips on a run, min_requests and
// failure_rate still need at least one outcome, and a max_cooldown of 0
// (or below the cooldown) caps at the cooldown instead of opening for 0s.
func TestZeroSettingsAreSafe(t *testing.T) {
	set := ruleSettings()
	set.ConsecutiveFailures, set.MinRequests, set.MaxCooldown = 0, 0, 0
	b, e := oneInstance(t, set, Options{})
	if st := b.Snapshot("p/m"); st.State != Closed {
		t.Fatalf("no outcomes yet: %+v", st)
	}
	attempt(b, Success)
	attempt(b, Success)
	attempt(b, Failure) // 1 of 3: under the rate, and no run rule
	if st := b.Snapshot("p/m"); st.State != Closed {
		t.Fatalf("tripped without a run rule, under the rate: %+v", st)
	}
	attempt(b, Failure) // 2 of 4: the rate trips
	st := b.Snapshot("p/m")
	if st.State != Open || st.OpenUntil.Sub(e.Now()) != 30*time.Second {
		t.Fatalf("want open for the 30s cooldown, got %+v", st)
	}
	e.Advance(30 * time.Second)
	attempt(b, Failure) // failed probe: doubling capped by the cooldown itself
	if st := b.Snapshot("p/m"); st.State != Open || st.OpenUntil.Sub(e.Now()) != 30*time.Second {
		t.Fatalf("want reopened for 30s, got %+v", st)
	}
}

// A config reload's settings are in force at the next decision: with
// consecutive_failures lowered from 5 to 2, the second failure trips.
func TestSetSettingsTakesEffectAtOnce(t *testing.T) {
	b, _ := oneInstance(t, ruleSettings(), Options{})
	attempt(b, Failure)
	s := ruleSettings()
	s.ConsecutiveFailures = 2
	b.SetSettings(s)
	attempt(b, Failure)
	if b.Snapshot("p/m").State != Open {
		t.Fatal("the reloaded consecutive_failures (2) did not trip the breaker")
	}
}
