package failover

import (
	"context"
	"io"
	"slices"
	"sync"
	"testing"

	"github.com/llmgw/llmgw/pkg/breaker"
	"github.com/llmgw/llmgw/pkg/exchange"
	"github.com/llmgw/llmgw/pkg/gwerr"
	"github.com/llmgw/llmgw/pkg/provider"
)

// Mid-stream continuation (issue 13, item 14b, opt-in).

// continuing is a route over a (cut after "Hello wor"), c (no prefill) and
// b (prefill), with continuation on.
func continuing(t *testing.T, b script) (*rig, *exchange.Request, *[]*exchange.Request) {
	t.Helper()
	var mu sync.Mutex
	var asked []*exchange.Request
	capture := func(f func(context.Context, *provider.Call) (provider.Stream, error)) func(context.Context, *provider.Call) (provider.Stream, error) {
		return func(ctx context.Context, call *provider.Call) (provider.Stream, error) {
			mu.Lock()
			asked = append(asked, call.Req)
			mu.Unlock()
			return f(ctx, call)
		}
	}
	for i := range b {
		b[i] = capture(b[i])
	}
	rg := newRig(map[string]script{
		"a": {serves(cut("a"), start, text("Hello"), text(" wor"))},
		"c": {serves(io.EOF, start, text("never"), finish)},
		"b": b,
	})
	rq := request(1, "a", "c", "b")
	rq.Steps[2].Prefill = true
	on := true
	rq.Policy.Continuation = &on
	rq.Prompt = &exchange.Prompt{Messages: []exchange.Message{{Role: exchange.RoleUser, Content: []exchange.Block{{Type: exchange.BlockText, Text: "say hello world"}}}}}
	return rg, rq, &asked
}

func TestCutStreamIsContinuedByTheNextTargetWithPrefill(t *testing.T) {
	rg, rq, asked := continuing(t, script{serves(io.EOF, start, text("ld"), text("!"), finish)})
	s, err := rg.router.Open(context.Background(), rq)
	if err != nil {
		t.Fatal(err)
	}
	var kinds []exchange.Kind
	var texts []string
	var mark exchange.Event
	for {
		ev, err := s.Next()
		if err != nil {
			if err != io.EOF {
				t.Fatalf("end %v: the continuation must finish the stream", err)
			}
			s.End(err)
			break
		}
		kinds = append(kinds, ev.Kind)
		if ev.Kind == exchange.Text {
			texts = append(texts, ev.Text)
		}
		if ev.Kind == exchange.Continuation {
			mark = ev
		}
	}
	if !slices.Equal(texts, []string{"Hello", " wor", "ld", "!"}) {
		t.Fatalf("texts %q", texts)
	}
	if want := []exchange.Kind{exchange.Start, exchange.Text, exchange.Text, exchange.Continuation, exchange.Text, exchange.Text, exchange.Finish}; !slices.Equal(kinds, want) {
		t.Fatalf("kinds %v, want %v (the continuing target's Start dropped)", kinds, want)
	}
	if mark.Text != "b/m" || mark.Stop != "a/m" || mark.ID != "r1" || mark.Name != "m" {
		t.Errorf("continuation event %+v", mark)
	}
	if rg.provs["c"].Calls() != 0 {
		t.Error("a target without prefill support was asked to continue")
	}
	cr := (*asked)[0]
	msgs := cr.Prompt.Messages
	last := msgs[len(msgs)-1]
	if cr.API != exchange.Prefill || last.Role != exchange.RoleAssistant || exchange.BlocksText(last.Content) != "Hello wor" || len(msgs) != 2 {
		t.Errorf("continuation request API %q, last message %+v", cr.API, last)
	}
	if len(rq.Prompt.Messages) != 1 {
		t.Error("the client's request was modified")
	}
	tr := rq.Trace
	if len(tr.Attempts) != 2 || tr.Attempts[0].Target != "a/m" || tr.Attempts[1].Target != "b/m" || !tr.Attempts[1].Continues ||
		!slices.Equal(tr.Continued, []string{"b/m"}) || tr.Target != "a/m" {
		t.Errorf("trace %+v", tr)
	}
	if u := s.Usage(); u.Input != 6 || u.Output != 4 {
		t.Errorf("usage %+v: want both attempts' tokens (3+3 in, 2+2 out)", u)
	}
	if o := rg.guard.Outcomes("a/m"); !slices.Equal(o, []breaker.Outcome{breaker.Failure}) {
		t.Errorf("cut target's breaker heard %v", o)
	}
	if o := rg.guard.Outcomes("b/m"); !slices.Equal(o, []breaker.Outcome{breaker.Success}) {
		t.Errorf("continuing target's breaker heard %v", o)
	}
}

func TestWhenNoTargetCanContinueTheClientGetsTheTypedError(t *testing.T) {
	refusal := provider.StatusError("b", 400, "invalid_request_error", "prefill not allowed", 0)
	rg, rq, _ := continuing(t, script{fails(refusal)})
	s, err := rg.router.Open(context.Background(), rq)
	if err != nil {
		t.Fatal(err)
	}
	got, end := drain(t, s)
	ge := gwerr.As(end)
	if ge.Category != gwerr.Interrupted || ge.Provider != "a" || !slices.Equal(got, []string{"Hello", " wor"}) {
		t.Fatalf("got %q, end %v: want a's interruption, never the continuation's own 400", got, end)
	}
	if n := len(rq.Trace.Attempts); n != 2 || !rq.Trace.Attempts[1].Continues || len(rq.Trace.Continued) != 0 {
		t.Errorf("trace %+v: the failed continuation attempt is recorded", rq.Trace)
	}
	if o := rg.guard.Outcomes("a/m"); !slices.Equal(o, []breaker.Outcome{breaker.Failure}) {
		t.Errorf("cut target's breaker heard %v", o)
	}
}

func TestContinuationIsOffByDefaultAndNeverContinuesToolCalls(t *testing.T) {
	// Off: today's typed error, nobody asked.
	rg, rq, asked := continuing(t, script{serves(io.EOF, start, text("ld"), finish)})
	rq.Policy.Continuation = nil
	s, _ := rg.router.Open(context.Background(), rq)
	if _, end := drain(t, s); gwerr.As(end).Category != gwerr.Interrupted || len(*asked) != 0 {
		t.Fatalf("end %v, %d continuation calls", end, len(*asked))
	}
	// A tool call cannot be continued from a prefill.
	rg, rq, asked = continuing(t, script{serves(io.EOF, start, text("ld"), finish)})
	rg.provs["a"].script = script{serves(cut("a"), start, text("Let me check"),
		exchange.Event{Kind: exchange.ToolCall, ID: "call_1", Name: "get_weather"})}
	s, _ = rg.router.Open(context.Background(), rq)
	if _, end := drain(t, s); gwerr.As(end).Category != gwerr.Interrupted || len(*asked) != 0 {
		t.Fatalf("tool call: end %v, %d continuation calls", end, len(*asked))
	}
}
