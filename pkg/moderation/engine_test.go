package moderation_test

import (
	"testing"

	"github.com/llmgw/llmgw/pkg/exchange"
)

// The moderation endpoint is called through the failover engine: its
// failures trip its target's breaker like any upstream's, and an open
// breaker skips the call (no upstream hit) - fail_open then lets the
// request through, fail_closed refuses it, as for any layer error.
func TestModerationEndpointCallsAreSeenByTheBreaker(t *testing.T) {
	w := newWorldWith(t, "{consecutive_failures: 2, min_requests: 100000, cooldown: 1h, max_cooldown: 1h}")
	w.endpoint.set("500")
	w.judge.set("allow")
	for i := 0; i < 2; i++ {
		w.calls()
		if r := w.ask(t, "open", "", "hi", false); r.status != 200 {
			t.Fatalf("fail_open with the endpoint failing: %d %s", r.status, r.body)
		}
		if _, ep, _ := w.calls(); ep != 1 {
			t.Fatalf("request %d: %d endpoint calls", i, ep)
		}
	}
	w.endpoint.set("allow") // healthy again, but the breaker is open
	r := w.ask(t, "open", "", "hi", false)
	gen, ep, judge := w.calls()
	if r.status != 200 || ep != 0 || gen != 1 || judge != 1 {
		t.Fatalf("breaker open, fail_open: %d, calls gen %d endpoint %d judge %d; the endpoint must not be called", r.status, gen, ep, judge)
	}
	var skipped bool
	for _, a := range w.last().Attempts {
		skipped = skipped || a.Stage == exchange.StageModerationInput && a.Skipped == "breaker_open"
	}
	if !skipped {
		t.Fatalf("trace %+v: the skipped endpoint call must be in it", w.last().Attempts)
	}
	if r := w.ask(t, "closed", "", "hi", false); r.status != 502 || r.code() != "moderation_unavailable" {
		t.Fatalf("breaker open, fail_closed: %d %s", r.status, r.body)
	}
	if _, ep, _ := w.calls(); ep != 0 {
		t.Fatalf("%d endpoint calls with its breaker open", ep)
	}
}
