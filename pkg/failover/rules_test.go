package failover

import (
	"context"
	"io"
	"slices"
	"testing"
	"time"

	"github.com/llmgw/llmgw/pkg/exchange"
	"github.com/llmgw/llmgw/pkg/gwerr"
	"github.com/llmgw/llmgw/pkg/provider"
)

// rateLimited is a 429 asking to wait d.
func rateLimited(d time.Duration) error {
	return provider.StatusError("a", 429, "rate_limit_error", "", d)
}

func TestRetryAfterOnTheOnlyKeyIsWaitedOutOnTheSameTarget(t *testing.T) {
	rg := newRig(map[string]script{
		"a": {fails(rateLimited(time.Second)), serves(io.EOF, text("a"), finish)},
		"b": {serves(io.EOF, text("b"), finish)},
	})
	// The ledger has no other key while the only one cools down.
	onlyKey := true
	rg.keys.pickHook = func(prov string) bool {
		return !(prov == "a" && onlyKey && len(rg.keys.observed) == 1 && len(rg.waits) == 0)
	}
	rq := request(2, "a", "b")
	rq.Policy.RetryBudget, rq.Policy.MinRetriesPerMin = 1, 5
	s, err := rg.router.Open(context.Background(), rq)
	if err != nil {
		t.Fatal(err)
	}
	drain(t, s)
	if rq.Trace.Target != "a/m" || rg.provs["b"].Calls() != 0 {
		t.Fatalf("served by %q; b called %d times: the only key's Retry-After within the cap must be waited out", rq.Trace.Target, rg.provs["b"].Calls())
	}
	if !slices.Equal(rg.waits, []time.Duration{time.Second}) {
		t.Fatalf("waits %v, want the 1s Retry-After", rg.waits)
	}
}

func TestA429WithAnotherKeyMovesToItAtOnceWithoutSpendingRetryBudget(t *testing.T) {
	rg := newRig(map[string]script{"a": {fails(rateLimited(time.Second)), serves(io.EOF, text("a"), finish)}})
	rq := request(2, "a")
	rq.Policy.RetryBudget, rq.Policy.MinRetriesPerMin = 0, 0 // no retry may be spent
	s, err := rg.router.Open(context.Background(), rq)
	if err != nil {
		t.Fatalf("err %v: moving to another key is not a retry", err)
	}
	drain(t, s)
	if len(rg.waits) != 1 || rg.waits[0] != 0 {
		t.Fatalf("waits %v, want one zero wait", rg.waits)
	}
}

func TestContextLengthFallsBackToTheNextTargetAndIsNeverRetried(t *testing.T) {
	tooLong := provider.StatusError("a", 400, "invalid_request_error", "prompt is too long: 300000 tokens > 200000 maximum", 0)
	if tooLong.Category != gwerr.ContextLength {
		t.Fatalf("classified %s", tooLong.Category)
	}
	code := provider.StatusError("a", 400, "invalid_request_error context_length_exceeded", "", 0)
	if code.Category != gwerr.ContextLength {
		t.Fatalf("code context_length_exceeded classified %s", code.Category)
	}
	rg := newRig(map[string]script{"a": {fails(tooLong)}, "b": {serves(io.EOF, text("b"), finish)}})
	rq := request(3, "a", "b")
	rq.Policy.FallbackOn = append(rq.Policy.FallbackOn, gwerr.ContextLength)
	if _, err := rg.router.Open(context.Background(), rq); err != nil || rq.Trace.Target != "b/m" {
		t.Fatalf("err %v, target %q", err, rq.Trace.Target)
	}
	if rg.provs["a"].Calls() != 1 {
		t.Fatalf("a called %d times: a context-length error must not be retried on the same target", rg.provs["a"].Calls())
	}
	// Without it in fallback_on the client gets the error.
	rg = newRig(map[string]script{"a": {fails(tooLong)}, "b": {serves(io.EOF, text("b"), finish)}})
	rq = request(3, "a", "b")
	if _, err := rg.router.Open(context.Background(), rq); gwerr.As(err).Category != gwerr.ContextLength || rg.provs["b"].Calls() != 0 {
		t.Fatalf("err %v, b calls %d", err, rg.provs["b"].Calls())
	}
}

func TestContentPolicyIsNeverRetriedNorFailedOverByDefault(t *testing.T) {
	refusal := provider.StatusError("a", 400, "invalid_request_error content_policy_violation", "", 0)
	if refusal.Category != gwerr.ContentPolicy {
		t.Fatalf("type invalid_request_error with code content_policy_violation classified %s", refusal.Category)
	}
	rg := newRig(map[string]script{"a": {fails(refusal)}, "b": {serves(io.EOF, text("b"), finish)}})
	_, err := rg.router.Open(context.Background(), request(3, "a", "b"))
	if gwerr.As(err).Category != gwerr.ContentPolicy || rg.provs["a"].Calls() != 1 || rg.provs["b"].Calls() != 0 {
		t.Fatalf("err %v, a %d, b %d calls", err, rg.provs["a"].Calls(), rg.provs["b"].Calls())
	}
}

func TestFirstTokenTimeoutMovesOnUnlessTheRouteRetriesTimeouts(t *testing.T) {
	for _, retrySame := range []bool{false, true} {
		rg := newRig(map[string]script{"a": {stalls(start)}, "b": {serves(io.EOF, text("b"), finish)}})
		rq := request(2, "a", "b")
		rq.Steps[0].FirstTokenTimeout = 10 * time.Millisecond
		rq.Policy.RetrySameTargetOnTimeout = retrySame
		if _, err := rg.router.Open(context.Background(), rq); err != nil {
			t.Fatal(err)
		}
		want := 1
		if retrySame {
			want = 2
		}
		if n := rg.provs["a"].Calls(); n != want {
			t.Fatalf("retry_same_target_on_timeout=%v: a called %d times, want %d", retrySame, n, want)
		}
	}
}

func TestAnAnswerWithoutVisibleContentIsNotEmpty(t *testing.T) {
	lengthFinish := exchange.Event{Kind: exchange.Finish, Finish: exchange.FinishLength}
	filterFinish := exchange.Event{Kind: exchange.Finish, Finish: exchange.FinishContentFilter}
	for name, sc := range map[string]script{
		"length":         {serves(io.EOF, start, lengthFinish)},
		"content_filter": {serves(io.EOF, start, filterFinish)},
	} {
		rg := newRig(map[string]script{"a": sc, "b": {serves(io.EOF, text("b"), finish)}})
		rq := request(2, "a", "b")
		s, err := rg.router.Open(context.Background(), rq)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		var kinds []exchange.Kind
		for {
			ev, err := s.Next()
			if err != nil {
				if err != io.EOF {
					t.Fatalf("%s: end %v", name, err)
				}
				break
			}
			kinds = append(kinds, ev.Kind)
		}
		if rq.Trace.Target != "a/m" || rg.provs["a"].Calls() != 1 || !slices.Contains(kinds, exchange.Finish) {
			t.Fatalf("%s: served by %q after %d calls, events %v: the answer must be returned as it is", name, rq.Trace.Target, rg.provs["a"].Calls(), kinds)
		}
	}
	// Hidden reasoning: no visible output, but output tokens spent.
	rg := newRig(map[string]script{"a": {func(ctx context.Context, _ *provider.Call) (provider.Stream, error) {
		return &spentStream{fakeStream{ctx: ctx, evs: []exchange.Event{start, finish}, end: nil}}, nil
	}}, "b": {serves(io.EOF, text("b"), finish)}})
	rq := request(2, "a", "b")
	if _, err := rg.router.Open(context.Background(), rq); err != nil || rq.Trace.Target != "a/m" {
		t.Fatalf("err %v target %q: output tokens spent make it an answer", err, rq.Trace.Target)
	}
	// Truly empty: fails over.
	rg = newRig(map[string]script{"a": {serves(io.EOF, start, finish)}, "b": {serves(io.EOF, text("b"), finish)}})
	rq = request(1, "a", "b")
	if _, err := rg.router.Open(context.Background(), rq); err != nil || rq.Trace.Target != "b/m" {
		t.Fatalf("err %v target %q: an empty success must fail over", err, rq.Trace.Target)
	}
}

// spentStream reports output tokens although it sent no visible output.
type spentStream struct{ fakeStream }

func (s *spentStream) Usage() exchange.TokenUsage {
	return exchange.TokenUsage{Input: 5, Output: 40, Reasoning: 40}
}
