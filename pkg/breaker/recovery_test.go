package breaker_test

import (
	"fmt"
	"net/http"
	"sync"
	"testing"
	"time"

	"github.com/llmgw/llmgw/pkg/breaker"
	"github.com/llmgw/llmgw/pkg/store/storetest"
)

// TestHealedPrimaryComesBackQuickly (issue 13, item 6), with the default
// breaker settings, on two instances over one store under a shifted
// clock: the primary is down for 60 s while each instance serves a request
// every 4 s. Every request is served (by the fallback during the outage),
// the primary serves again within 15 s of recovering, and while its
// breaker is open it sees at most one probe per cooldown across both
// instances. The outage starts at each phase of the request interval.
func TestHealedPrimaryComesBackQuickly(t *testing.T) {
	var scenarios []storetest.Scenario
	for _, phase := range []time.Duration{0, time.Second, 2 * time.Second, 3 * time.Second} {
		scenarios = append(scenarios, storetest.Scenario{Name: fmt.Sprintf("OutageOf60sAtPhase%v", phase),
			Fn: func(t *testing.T, e *storetest.Env) { testHealedPrimary(t, e, phase) }})
	}
	storetest.RunBackends(t, scenarios)
}

func testHealedPrimary(t *testing.T, e *storetest.Env, phase time.Duration) {
	const outage, every = 60 * time.Second, 4 * time.Second
	primary, secondary := newFakeUpstream(t), newFakeUpstream(t)
	cfg := e2eConfig(t, primary.URL, secondary.URL, "") // default breaker settings
	a, b := newInstance(t, e, cfg), newInstance(t, e, cfg)
	start := e.Now().Add(every) // after the warm-up
	downFrom, healed := start.Add(phase), start.Add(phase+outage)
	var mu sync.Mutex
	var hits []time.Time // the primary's calls during the outage, on the scenario clock
	primary.set(func(w http.ResponseWriter, _ string) {
		now := e.Now()
		if now.Before(downFrom) || !now.Before(healed) {
			completion(w, "hello")
			return
		}
		mu.Lock()
		hits = append(hits, now)
		mu.Unlock()
		upstreamError(w, http.StatusServiceUnavailable)
	})
	var tripped time.Time // when an instance first saw the breaker open
	tick := func() (at time.Time, providers []string) {
		at = e.Now()
		for name, in := range map[string]*instance{"A": a, "B": b} {
			st, prov := in.chat(t)
			if st != 200 {
				t.Fatalf("%s at +%v: status %d", name, at.Sub(start), st)
			}
			providers = append(providers, prov)
			if tripped.IsZero() && in.br.Snapshot("primary/up-primary").State == breaker.Open {
				tripped = at
			}
		}
		e.Advance(every)
		return at, providers
	}
	tick() // warm-up
	back := time.Duration(-1)
	for back < 0 && e.Now().Before(healed.Add(30*time.Second)) {
		at, provs := tick()
		for _, prov := range provs {
			switch {
			case at.Before(downFrom):
			case at.Before(healed) && prov != "secondary":
				t.Fatalf("at +%v a request was served by %q during the outage", at.Sub(start), prov)
			case !at.Before(healed) && prov == "primary":
				back = at.Sub(healed)
			}
		}
	}
	if back < 0 || back > 15*time.Second {
		t.Fatalf("the healed primary served again after %v, want within 15s", back)
	}

	// Probes while open: after the trip, calls are at least one cooldown
	// apart across both instances.
	if tripped.IsZero() {
		t.Fatal("the primary's breaker never opened")
	}
	cool := cfg.Breaker.Cooldown.D()
	mu.Lock()
	defer mu.Unlock()
	var last time.Time
	for _, h := range hits {
		if h.After(tripped) {
			if gap := h.Sub(last); gap < cool {
				t.Errorf("probes %v apart at +%v: want at most one per cooldown (%v)", gap, h.Sub(start), cool)
			}
		}
		last = h
	}
	t.Logf("%d primary calls during the outage (trip at +%v); healed primary back after %v", len(hits), tripped.Sub(downFrom), back)
}
