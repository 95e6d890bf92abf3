package failover

import (
	"context"
	"io"
	"slices"
	"testing"
	"time"

	"github.com/llmgw/llmgw/pkg/config"
	"github.com/llmgw/llmgw/pkg/exchange"
	"github.com/llmgw/llmgw/pkg/gwerr"
	"github.com/llmgw/llmgw/pkg/provider"
)

// Head buffer (issue 13, item 14a, opt-in): a failure inside the window
// fails over invisibly; without it the same failure is a mid-stream error.

func cut(prov string) error { return provider.Interrupted(prov, "broke off", nil) }

func TestHeadBufferHidesACutInsideTheWindow(t *testing.T) {
	for _, hb := range []*config.HeadBuffer{nil, {Tokens: 10}} {
		rg := newRig(map[string]script{
			"a": {serves(cut("a"), start, text("Hel"), text("lo"))}, // 2 of 10 tokens, then cut
			"b": {serves(io.EOF, start, text("Hi"), text(" there"), finish)},
		})
		rq := request(1, "a", "b")
		rq.Policy.HeadBuffer = hb
		s, err := rg.router.Open(context.Background(), rq)
		if err != nil {
			t.Fatalf("head %v: %v", hb, err)
		}
		got, end := drain(t, s)
		if hb == nil {
			// Default: committed at the first content; the cut is the client's.
			if gwerr.As(end).Category != gwerr.Interrupted || !slices.Equal(got, []string{"Hel", "lo"}) || rg.provs["b"].Calls() != 0 {
				t.Fatalf("no head buffer: got %q, end %v, b called %d", got, end, rg.provs["b"].Calls())
			}
			continue
		}
		if end != io.EOF || !slices.Equal(got, []string{"Hi", " there"}) || rq.Trace.Target != "b/m" {
			t.Fatalf("head buffer: got %q, end %v, served by %q: the cut must fail over invisibly", got, end, rq.Trace.Target)
		}
		if a := rq.Trace.Attempts[0]; a.Category != gwerr.Unavailable || a.Phase != "head" {
			t.Errorf("cut attempt %+v", a)
		}
	}
}

func TestHeadBufferHidesAStallInsideTheWindow(t *testing.T) {
	rg := newRig(map[string]script{
		"a": {stalls(start, text("Hello"))},
		"b": {serves(io.EOF, start, text("Hi"), finish)},
	})
	rq := request(2, "a", "b")
	rq.Policy.HeadBuffer = &config.HeadBuffer{Tokens: 50}
	rq.Policy.IdleTimeout = config.Duration(20 * time.Millisecond)
	s, err := rg.router.Open(context.Background(), rq)
	if err != nil {
		t.Fatal(err)
	}
	got, end := drain(t, s)
	if end != io.EOF || !slices.Equal(got, []string{"Hi"}) {
		t.Fatalf("got %q, end %v", got, end)
	}
	if a := rq.Trace.Attempts[0]; a.Category != gwerr.Timeout || rg.provs["a"].Calls() != 1 {
		t.Errorf("stalled attempt %+v after %d calls: a silent provider is left at once", a, rg.provs["a"].Calls())
	}
}

func TestHeadBufferCommitsAfterItsTokensOrAtTheEnd(t *testing.T) {
	// 3 tokens: committed after "aaaa" "bbbb" "cccc"; the cut after that is
	// the client's.
	rg := newRig(map[string]script{
		"a": {serves(cut("a"), start, text("aaaa"), text("bbbb"), text("cccc"), text("dddd"))},
		"b": {serves(io.EOF, start, text("no"), finish)},
	})
	rq := request(1, "a", "b")
	rq.Policy.HeadBuffer = &config.HeadBuffer{Tokens: 3}
	s, err := rg.router.Open(context.Background(), rq)
	if err != nil {
		t.Fatal(err)
	}
	got, end := drain(t, s)
	if gwerr.As(end).Category != gwerr.Interrupted || !slices.Equal(got, []string{"aaaa", "bbbb", "cccc", "dddd"}) || rg.provs["b"].Calls() != 0 {
		t.Fatalf("got %q, end %v, b called %d", got, end, rg.provs["b"].Calls())
	}
	// A stream that ends inside the window is committed whole.
	rg = newRig(map[string]script{"a": {serves(io.EOF, start, text("short"), finish)}})
	rq = request(1, "a")
	rq.Policy.HeadBuffer = &config.HeadBuffer{Tokens: 100, Duration: config.Duration(time.Minute)}
	s, err = rg.router.Open(context.Background(), rq)
	if err != nil {
		t.Fatal(err)
	}
	var kinds []exchange.Kind
	for {
		ev, err := s.Next()
		if err != nil {
			if err != io.EOF {
				t.Fatal(err)
			}
			break
		}
		kinds = append(kinds, ev.Kind)
	}
	if !slices.Equal(kinds, []exchange.Kind{exchange.Start, exchange.Text, exchange.Finish}) {
		t.Fatalf("kinds %v", kinds)
	}
}
