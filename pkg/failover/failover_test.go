package failover

import (
	"context"
	"errors"
	"io"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/llmgw/llmgw/pkg/breaker"
	"github.com/llmgw/llmgw/pkg/config"
	"github.com/llmgw/llmgw/pkg/exchange"
	"github.com/llmgw/llmgw/pkg/gwerr"
	"github.com/llmgw/llmgw/pkg/provider"
)

type script = []func(context.Context, *provider.Call) (provider.Stream, error)

// drain reads a session to its end and returns the texts and the final
// error.
func drain(t *testing.T, s *Session) ([]string, error) {
	t.Helper()
	var out []string
	for {
		ev, err := s.Next()
		if err != nil {
			s.End(err)
			return out, err
		}
		if ev.Kind == exchange.Text {
			out = append(out, ev.Text)
		}
	}
}

func overloaded() error { return provider.StatusError("x", 529, "overloaded_error", "", 0) }

func TestFailingPrimaryIsSkippedBeforeTheFirstToken(t *testing.T) {
	rg := newRig(map[string]script{
		"a": {fails(provider.StatusError("a", 503, "", "", 0))},
		"b": {serves(io.EOF, start, text("hi"), finish)},
	})
	rq := request(2, "a", "b")
	s, err := rg.router.Open(context.Background(), rq)
	if err != nil {
		t.Fatal(err)
	}
	got, end := drain(t, s)
	if end != io.EOF || !slices.Equal(got, []string{"hi"}) {
		t.Fatalf("got %q, %v", got, end)
	}
	if rg.provs["a"].Calls() != 2 || rg.provs["b"].Calls() != 1 {
		t.Fatalf("calls a=%d b=%d, want 2 and 1", rg.provs["a"].Calls(), rg.provs["b"].Calls())
	}
	tr := rq.Trace
	if tr.Target != "b/m" || tr.Provider != "b" || tr.FallbackDepth != 1 || len(tr.Attempts) != 3 {
		t.Fatalf("trace %+v", tr)
	}
	if tr.Attempts[0].Category != gwerr.Overloaded || tr.Attempts[0].Status != 503 || tr.Attempts[0].Phase != "first_byte" || tr.Attempts[2].Category != "" {
		t.Fatalf("attempts %+v", tr.Attempts)
	}
	if o := rg.guard.Outcomes("a/m"); !slices.Equal(o, []breaker.Outcome{breaker.Failure, breaker.Failure}) {
		t.Fatalf("a's breaker heard %v", o)
	}
	if o := rg.guard.Outcomes("b/m"); !slices.Equal(o, []breaker.Outcome{breaker.Success}) {
		t.Fatalf("b's breaker heard %v", o)
	}
}

func TestRetryWaitsWithBackoffThenTheSameTargetServes(t *testing.T) {
	rg := newRig(map[string]script{
		"a": {fails(overloaded()), serves(io.EOF, text("ok"), finish)},
		"b": {serves(io.EOF, text("never"), finish)},
	})
	rq := request(2, "a", "b")
	s, err := rg.router.Open(context.Background(), rq)
	if err != nil {
		t.Fatal(err)
	}
	if got, _ := drain(t, s); !slices.Equal(got, []string{"ok"}) {
		t.Fatalf("got %q", got)
	}
	if rg.provs["b"].Calls() != 0 {
		t.Fatal("the fallback was called although a retry of the primary served")
	}
	// Full jitter with Rand=1: the first backoff is the base.
	if len(rg.waits) != 1 || rg.waits[0] != 100*time.Millisecond {
		t.Fatalf("waits %v, want one backoff of 100ms", rg.waits)
	}
}

func TestRetryAfterWithinTheCapIsWaitedAndBeyondItMovesOn(t *testing.T) {
	within := provider.StatusError("a", 503, "", "", 1500*time.Millisecond)
	rg := newRig(map[string]script{"a": {fails(within), serves(io.EOF, text("ok"), finish)}})
	if _, err := rg.router.Open(context.Background(), request(2, "a")); err != nil {
		t.Fatal(err)
	}
	if len(rg.waits) != 1 || rg.waits[0] != 1500*time.Millisecond {
		t.Fatalf("waits %v, want the 1.5s Retry-After", rg.waits)
	}

	beyond := provider.StatusError("a", 503, "", "", time.Minute)
	rg = newRig(map[string]script{"a": {fails(beyond)}, "b": {serves(io.EOF, text("b"), finish)}})
	rq := request(2, "a", "b")
	if _, err := rg.router.Open(context.Background(), rq); err != nil {
		t.Fatal(err)
	}
	if rg.provs["a"].Calls() != 1 || len(rg.waits) != 0 || rq.Trace.Target != "b/m" {
		t.Fatalf("a called %d times, waits %v, served by %q: a Retry-After beyond the cap must move on at once", rg.provs["a"].Calls(), rg.waits, rq.Trace.Target)
	}
}

func TestRetryBudgetStopsRetriesOfAProvider(t *testing.T) {
	rg := newRig(map[string]script{"a": {fails(overloaded())}})
	rq := request(3, "a")
	rq.Policy.RetryBudget, rq.Policy.MinRetriesPerMin = 0, 0
	_, err := rg.router.Open(context.Background(), rq)
	if gwerr.As(err).Category != gwerr.Overloaded {
		t.Fatalf("err %v", err)
	}
	if n := rg.provs["a"].Calls(); n != 1 {
		t.Fatalf("%d calls with an empty retry budget, want 1", n)
	}
}

func TestNonRetryableErrorEndsTheWalk(t *testing.T) {
	rg := newRig(map[string]script{
		"a": {fails(provider.StatusError("a", 400, "invalid_request_error", "bad", 0))},
		"b": {serves(io.EOF, text("b"), finish)},
	})
	_, err := rg.router.Open(context.Background(), request(2, "a", "b"))
	if ge := gwerr.As(err); ge.Category != gwerr.InvalidRequest {
		t.Fatalf("err %v", err)
	}
	if rg.provs["a"].Calls() != 1 || rg.provs["b"].Calls() != 0 {
		t.Fatal("a caller's mistake was retried or failed over")
	}
	if o := rg.guard.Outcomes("a/m"); !slices.Equal(o, []breaker.Outcome{breaker.Ignored}) {
		t.Fatalf("a's breaker heard %v for a 400", o)
	}
}

func TestFallbackOnAndMaxFallbacksBoundTheWalk(t *testing.T) {
	rg := newRig(map[string]script{
		"a": {fails(provider.StatusError("a", 429, "", "", 0))},
		"b": {serves(io.EOF, text("b"), finish)},
	})
	rq := request(1, "a", "b")
	rq.Policy.FallbackOn = []gwerr.Category{gwerr.Timeout}
	if _, err := rg.router.Open(context.Background(), rq); gwerr.As(err).Category != gwerr.RateLimited {
		t.Fatalf("err %v: rate_limited is not in fallback_on, the walk must stop", err)
	}
	zero := 0
	rq = request(1, "a", "b")
	rq.Policy.MaxFallbacks = &zero
	if _, err := rg.router.Open(context.Background(), rq); err == nil || rg.provs["b"].Calls() != 0 {
		t.Fatalf("err %v, b calls %d: max_fallbacks 0 tries the primary only", err, rg.provs["b"].Calls())
	}
}

func TestOpenBreakerAndMissingKeySkipWithoutACall(t *testing.T) {
	rg := newRig(map[string]script{
		"a": {serves(io.EOF, text("a"), finish)},
		"b": {serves(io.EOF, text("b"), finish)},
		"c": {serves(io.EOF, text("c"), finish)},
	})
	rg.guard.open["a/m"] = true
	rg.keys.none["b"] = true
	rq := request(2, "a", "b", "c")
	s, err := rg.router.Open(context.Background(), rq)
	if err != nil {
		t.Fatal(err)
	}
	drain(t, s)
	if rg.provs["a"].Calls()+rg.provs["b"].Calls() != 0 {
		t.Fatal("a skipped target was called")
	}
	var skips []string
	for _, a := range rq.Trace.Attempts {
		skips = append(skips, a.Skipped)
	}
	if !slices.Equal(skips, []string{"breaker_open", "no_key", ""}) || rq.Trace.Target != "c/m" {
		t.Fatalf("trace %+v", rq.Trace)
	}
	if o := rg.guard.Outcomes("b/m"); !slices.Equal(o, []breaker.Outcome{breaker.Ignored}) {
		t.Fatalf("b's breaker heard %v for a missing key", o)
	}
}

// When every target is skipped for an open breaker, nothing was tried and
// the error says so (gwerr.Untried, for the ingress to tell the client to
// back off and retry); when one was tried, or skipped for another reason,
// it does not.
func TestEveryBreakerOpenIsUntried(t *testing.T) {
	rg := newRig(map[string]script{
		"a": {serves(io.EOF, text("a"), finish)},
		"b": {serves(io.EOF, text("b"), finish)},
	})
	rg.guard.open["a/m"], rg.guard.open["b/m"] = true, true
	_, err := rg.router.Open(context.Background(), request(1, "a", "b"))
	var u *gwerr.Untried
	if !errors.As(err, &u) || u.Targets != 2 || gwerr.As(err).Category != gwerr.Unavailable {
		t.Fatalf("err %v: want unavailable, caused by gwerr.Untried of 2 targets", err)
	}
	rg.guard.open["b/m"] = false
	rg.keys.none["b"] = true
	if _, err = rg.router.Open(context.Background(), request(1, "a", "b")); err == nil || errors.As(err, &u) {
		t.Fatalf("err %v: a target skipped for want of a key is not an open breaker", err)
	}
	rg2 := newRig(map[string]script{"a": {fails(gwerr.New(gwerr.Unavailable, "down"))}, "b": {serves(io.EOF, text("b"), finish)}})
	rg2.guard.open["b/m"] = true
	if _, err = rg2.router.Open(context.Background(), request(1, "a", "b")); err == nil || errors.As(err, &u) {
		t.Fatalf("err %v: a target was tried", err)
	}
}

// A target that was tried answers for the request even when a later one
// was only skipped (open breaker, no usable key): the client gets the
// throttle and its Retry-After, not "skipped".
func TestASkippedTargetDoesNotHideATriedOnesAnswer(t *testing.T) {
	throttle := &gwerr.Error{Category: gwerr.RateLimited, Status: 429, Message: "a is throttled", RetryAfter: 7 * time.Second}
	for _, skip := range []string{"breaker", "key"} {
		rg := newRig(map[string]script{"a": {fails(throttle)}, "b": {serves(io.EOF, text("b"), finish)}})
		if skip == "breaker" {
			rg.guard.open["b/m"] = true
		} else {
			rg.keys.none["b"] = true
		}
		rq := request(1, "a", "b")
		_, err := rg.router.Open(context.Background(), rq)
		ge := gwerr.As(err)
		if ge.Category != gwerr.RateLimited || ge.RetryAfter != 7*time.Second || !strings.Contains(ge.Message, "a is throttled") {
			t.Errorf("%s skip: err %+v, want a's throttle", skip, ge)
		}
		if at := rq.Trace.Attempts; len(at) != 2 || at[1].Skipped == "" {
			t.Errorf("%s skip: trace %+v", skip, at)
		}
	}
}

func TestEmptySuccessAndSilenceFailOver(t *testing.T) {
	rg := newRig(map[string]script{
		"a": {serves(io.EOF, start, finish)}, // finished, nothing in it
		"b": {stalls(start)},                 // answers, then says nothing
		"c": {serves(io.EOF, text("c"), finish)},
	})
	rq := request(1, "a", "b", "c")
	rq.Steps[1].FirstTokenTimeout = 20 * time.Millisecond
	s, err := rg.router.Open(context.Background(), rq)
	if err != nil {
		t.Fatal(err)
	}
	drain(t, s)
	at := rq.Trace.Attempts
	if len(at) != 3 || at[0].Phase != "first_token" || at[1].Category != gwerr.Timeout || at[1].Phase != "first_token" || rq.Trace.Target != "c/m" {
		t.Fatalf("trace %+v", rq.Trace)
	}
}

func TestAfterTheFirstTokenTheResponseBelongsToItsTarget(t *testing.T) {
	cut := provider.Interrupted("a", "broke off", errors.New("reset"))
	rg := newRig(map[string]script{
		"a": {serves(cut, start, text("par"), text("tial"))},
		"b": {serves(io.EOF, text("b"), finish)},
	})
	rq := request(2, "a", "b")
	s, err := rg.router.Open(context.Background(), rq)
	if err != nil {
		t.Fatal(err)
	}
	got, end := drain(t, s)
	if !slices.Equal(got, []string{"par", "tial"}) {
		t.Fatalf("got %q", got)
	}
	ge := gwerr.As(end)
	if end == io.EOF || ge.Category != gwerr.Interrupted || ge.Provider != "a" {
		t.Fatalf("end %v: a cut after the first token must be a typed interrupted error, never a clean end", end)
	}
	if rg.provs["a"].Calls() != 1 || rg.provs["b"].Calls() != 0 {
		t.Fatal("a committed stream was retried or switched")
	}
	if o := rg.guard.Outcomes("a/m"); !slices.Equal(o, []breaker.Outcome{breaker.Failure}) {
		t.Fatalf("a's breaker heard %v for a mid-stream cut", o)
	}
}

func TestIdleGapAfterTheFirstTokenIsATimeout(t *testing.T) {
	rg := newRig(map[string]script{"a": {stalls(text("x"))}})
	rq := request(1, "a")
	rq.Policy.IdleTimeout = config.Duration(20 * time.Millisecond)
	s, err := rg.router.Open(context.Background(), rq)
	if err != nil {
		t.Fatal(err)
	}
	_, end := drain(t, s)
	if ge := gwerr.As(end); ge.Category != gwerr.Timeout {
		t.Fatalf("end %v, want timeout", end)
	}
}

func TestHeadBeforeTheFirstTokenIsHeldAndUsageOnlyDroppedUnlessWanted(t *testing.T) {
	usage := exchange.Event{Kind: exchange.Usage, Usage: exchange.TokenUsage{Input: 1}}
	rg := newRig(map[string]script{"a": {serves(io.EOF, start, text("x"), finish, usage)}})
	rq := request(1, "a")
	s, err := rg.router.Open(context.Background(), rq)
	if err != nil {
		t.Fatal(err)
	}
	var kinds []exchange.Kind
	for {
		ev, err := s.Next()
		if err != nil {
			break
		}
		kinds = append(kinds, ev.Kind)
	}
	if !slices.Equal(kinds, []exchange.Kind{exchange.Start, exchange.Text, exchange.Finish}) {
		t.Fatalf("kinds %v: usage-only events are dropped when the client did not ask", kinds)
	}
	rq = request(1, "a")
	rq.WantsUsage = true
	s, _ = rg.router.Open(context.Background(), rq)
	n := 0
	for {
		ev, err := s.Next()
		if err != nil {
			break
		}
		if ev.Kind == exchange.Usage {
			n++
		}
	}
	if n != 1 {
		t.Fatalf("%d usage events when asked, want 1", n)
	}
}

func TestUnsupportedFeatureSkipsWithoutPenaltyAndIsReportedWhenNoTargetCan(t *testing.T) {
	unsup := provider.Unsupported("a/m", "n", "n > 1")
	rg := newRig(map[string]script{"a": {fails(unsup)}, "b": {serves(io.EOF, text("b"), finish)}})
	rq := request(2, "a", "b")
	if _, err := rg.router.Open(context.Background(), rq); err != nil || rq.Trace.Target != "b/m" {
		t.Fatalf("err %v target %q", err, rq.Trace.Target)
	}
	if rg.provs["a"].Calls() != 1 {
		t.Fatal("an unsupported feature was retried on the same target")
	}
	rg = newRig(map[string]script{"a": {fails(unsup)}})
	_, err := rg.router.Open(context.Background(), request(2, "a"))
	if ge := gwerr.As(err); ge.Code != provider.CodeUnsupportedFeature {
		t.Fatalf("err %v", err)
	}
}

func TestEveryUpstreamResponseReachesTheKeyLedger(t *testing.T) {
	rg := newRig(map[string]script{"a": {serves(io.EOF, text("a"), finish)}})
	s, _ := rg.router.Open(context.Background(), request(1, "a"))
	drain(t, s)
	if !slices.Equal(rg.keys.observed, []int{http.StatusOK}) {
		t.Fatalf("ledger observed %v", rg.keys.observed)
	}
}

func TestDeadlineAndClientGone(t *testing.T) {
	rg := newRig(map[string]script{"a": {stalls()}})
	ctx, cancel := context.WithDeadlineCause(context.Background(), time.Now().Add(20*time.Millisecond), gwerr.ErrDeadline)
	defer cancel()
	_, err := rg.router.Open(ctx, request(2, "a"))
	if ge := gwerr.As(err); ge.Category != gwerr.Timeout || !errors.Is(err, gwerr.ErrDeadline) {
		t.Fatalf("err %v, want the request deadline", err)
	}
	ctx, cancel = context.WithCancel(context.Background())
	time.AfterFunc(20*time.Millisecond, cancel)
	if _, err := rg.router.Open(ctx, request(2, "a")); !errors.Is(err, gwerr.ErrClientGone) {
		t.Fatalf("err %v, want gwerr.ErrClientGone", err)
	}
}
