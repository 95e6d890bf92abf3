package pacing

import (
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/llmgw/llmgw/pkg/config"
	"github.com/llmgw/llmgw/pkg/exchange"
	"github.com/llmgw/llmgw/pkg/gwerr"
	"github.com/llmgw/llmgw/pkg/stage"
)

// script is a source that yields its events, each after its delay, then
// waits for hold (if set) and ends with io.EOF.
type script struct {
	evs    []exchange.Event
	delays []time.Duration
	hold   chan struct{}
	i      int
	reads  atomic.Int64
	ended  atomic.Bool
	cancel chan struct{}
}

func (s *script) Next() (exchange.Event, error) {
	if s.i >= len(s.evs) {
		if s.hold != nil {
			select {
			case <-s.hold:
			case <-s.cancel:
				return exchange.Event{}, io.ErrClosedPipe
			}
		}
		return exchange.Event{}, io.EOF
	}
	if s.i < len(s.delays) {
		time.Sleep(s.delays[s.i])
	}
	s.reads.Add(1)
	s.i++
	return s.evs[s.i-1], nil
}
func (s *script) Usage() exchange.TokenUsage { return exchange.TokenUsage{Output: 7} }
func (s *script) End(error)                  { s.ended.Store(true) }

func text(s string) exchange.Event { return exchange.Event{Kind: exchange.Text, Text: s} }

// arrival is one event the client got, and when.
type arrival struct {
	ev exchange.Event
	at time.Duration
}

// drain reads a paced source to its end; after each event onEvent may act.
func drain(t *testing.T, src stage.Source, onEvent func([]arrival)) ([]arrival, error) {
	t.Helper()
	start := time.Now()
	var got []arrival
	for {
		ev, err := src.Next()
		if err != nil {
			src.End(err)
			return got, err
		}
		got = append(got, arrival{ev.Clone(), time.Since(start)})
		if onEvent != nil {
			onEvent(got)
		}
	}
}

func textOf(got []arrival) string {
	var b strings.Builder
	for _, a := range got {
		if a.ev.Kind == exchange.Text {
			b.WriteString(a.ev.Text)
		}
	}
	return b.String()
}

func pace(src stage.Source, prof Profile) stage.Source {
	return newStream(src, prof, stage.PaceOptions{Cancel: func() {}}, time.Now)
}

// While the upstream is still generating, text is released at the
// profile's rate: the measured rate over the release is within a loose
// ratio of the documented one (timing is never asserted tightly).
func TestTextIsReleasedAtTheProfileRate(t *testing.T) {
	for _, prof := range []Profile{Fast, Steady} {
		t.Run(prof.Name, func(t *testing.T) {
			total := int(prof.Burst + prof.CharsPerSecond*1.2) // about 1.2 s past the burst
			hold := make(chan struct{})
			src := &script{evs: []exchange.Event{{Kind: exchange.Start}, text(strings.Repeat("a", total))}, hold: hold}
			var n int
			got, err := drain(t, pace(src, prof), func(got []arrival) {
				if n += len(got[len(got)-1].ev.Text); n == total {
					close(hold) // the upstream finishes only once everything was released
				}
			})
			if err != io.EOF || textOf(got) != strings.Repeat("a", total) {
				t.Fatalf("err %v, %d chars", err, len(textOf(got)))
			}
			// After the first burst, the rest took (total-burst)/rate.
			var afterBurst time.Duration
			for _, a := range got {
				afterBurst = a.at
			}
			rate := (float64(total) - prof.Burst) / afterBurst.Seconds()
			ratio := rate / prof.CharsPerSecond
			t.Logf("%s: %d chars in %d events, %.0f char/s after the burst (ratio %.2f)", prof.Name, total, len(got), rate, ratio)
			if ratio < 0.6 || ratio > 1.4 {
				t.Errorf("released at %.0f char/s, profile %s is %.0f", rate, prof.Name, prof.CharsPerSecond)
			}
			if len(got) < 10 {
				t.Errorf("text was not split: %d events", len(got))
			}
		})
	}
}

// Once the upstream has finished, what is held goes out within EndBound,
// however slow the profile: 5,000 characters at 60 char/s would take 80 s.
func TestEndOfStreamIsNeverDelayedBeyondTheBound(t *testing.T) {
	want := strings.Repeat("ünïcode ", 625) // 5,000 characters
	src := &script{evs: []exchange.Event{{Kind: exchange.Start}, text(want), {Kind: exchange.Finish, Finish: "stop"}}}
	got, err := drain(t, pace(src, Slow), nil)
	if err != io.EOF || textOf(got) != want {
		t.Fatalf("err %v, text intact %v", err, textOf(got) == want)
	}
	took := got[len(got)-1].at
	ratio := float64(took) / float64(EndBound)
	t.Logf("%d events in %s (%.2f of the end bound)", len(got), took, ratio)
	if ratio > 1.5 {
		t.Errorf("the stream ended %s after the upstream, the bound is %s", took, EndBound)
	}
	if ratio < 0.3 || len(got) < 10 {
		t.Errorf("the rest was dumped, not paced out over the bound: %d events in %s", len(got), took)
	}
}

// Pacing never drops, merges or reorders: every event comes out, in order;
// text is only split, at character boundaries.
func TestPacingKeepsEveryEventInOrder(t *testing.T) {
	in := []exchange.Event{
		{Kind: exchange.Start, ID: "r1"}, {Kind: exchange.Reasoning, Text: strings.Repeat("é", 90)},
		text("Hello, "), text(strings.Repeat("wörld ", 40)),
		{Kind: exchange.ToolCall, Index: 0, ID: "call_1", Name: "f"}, {Kind: exchange.ToolArgs, Index: 0, Text: `{"a":1}`},
		{Kind: exchange.Raw, Raw: []byte(`{"raw":1}`), Flags: exchange.HasContent}, text("done"),
		{Kind: exchange.Finish, Finish: "stop"}, {Kind: exchange.Usage, Usage: exchange.TokenUsage{Output: 3}},
	}
	fast := Profile{Name: "test", CharsPerSecond: 4000, Burst: 40, Quantum: 4}
	got, err := drain(t, pace(&script{evs: in}, fast), nil)
	if err != io.EOF {
		t.Fatal(err)
	}
	// Merge consecutive pieces of the same text event back, then compare.
	var out []exchange.Event
	for _, a := range got {
		e := a.ev
		if n := len(out); n > 0 && (e.Kind == exchange.Text || e.Kind == exchange.Reasoning) && out[n-1].Kind == e.Kind && pieceOf(in, out, e) {
			out[n-1].Text += e.Text
			continue
		}
		out = append(out, e)
	}
	if len(out) != len(in) {
		t.Fatalf("%d events out, %d in", len(out), len(in))
	}
	for i := range in {
		a, b := in[i], out[i]
		if a.Kind != b.Kind || a.Text != b.Text || a.ID != b.ID || string(a.Raw) != string(b.Raw) || a.Finish != b.Finish {
			t.Fatalf("event %d: %+v, want %+v", i, b, a)
		}
	}
	if len(got) <= len(in) {
		t.Errorf("nothing was split: %d events", len(got))
	}
}

// pieceOf reports whether e continues the text event being rebuilt in out
// (it does while out's last text is a strict prefix of the input event at
// the same position).
func pieceOf(in, out []exchange.Event, e exchange.Event) bool {
	n := len(out) - 1
	return n < len(in) && len(out[n].Text) < len(in[n].Text) && strings.HasPrefix(in[n].Text, out[n].Text+e.Text)
}

// The buffer between the upstream and the client is bounded: a client
// that takes nothing stops the reads after MaxBuffer bytes, and End stops
// the reader.
func TestBufferIsBoundedAndEndStopsTheReader(t *testing.T) {
	chunk := strings.Repeat("z", 4096)
	evs := make([]exchange.Event, 10_000) // 40 MiB if it were all read
	for i := range evs {
		evs[i] = text(chunk)
	}
	src := &script{evs: evs}
	var cancelled atomic.Bool
	s := newStream(src, Slow, stage.PaceOptions{Cancel: func() { cancelled.Store(true) }}, time.Now)
	time.Sleep(200 * time.Millisecond)
	reads := src.reads.Load()
	if limit := int64(MaxBuffer/4096 + 1); reads > limit {
		t.Errorf("%d events read ahead, the buffer holds at most %d", reads, limit)
	}
	time.Sleep(100 * time.Millisecond)
	if src.reads.Load() != reads {
		t.Errorf("the reader kept reading a full buffer")
	}
	s.End(io.ErrClosedPipe)
	if !src.ended.Load() {
		t.Error("End did not end the source")
	}

	// A reader blocked on the upstream is unblocked by cancelling it.
	blocked := &script{hold: make(chan struct{}), cancel: make(chan struct{})}
	s = newStream(blocked, Slow, stage.PaceOptions{Cancel: func() { close(blocked.cancel) }}, time.Now)
	done := make(chan struct{})
	go func() { s.End(io.ErrClosedPipe); close(done) }()
	select {
	case <-done:
	case <-time.After(5 * time.Second):
		t.Fatal("End hung on a reader blocked in the upstream")
	}
}

// Raw frames are weighed through the ingress's decoder and never split.
func TestRawFramesAreWeighedNotSplit(t *testing.T) {
	frame := []byte(`{"choices":[{"delta":{"content":"` + strings.Repeat("r", 100) + `"}}]}`)
	var evs []exchange.Event
	for i := 0; i < 8; i++ {
		evs = append(evs, exchange.Event{Kind: exchange.Raw, Raw: frame, Flags: exchange.HasContent})
	}
	hold := make(chan struct{})
	prof := Profile{Name: "t", CharsPerSecond: 1000, Burst: 100, Quantum: 4}
	s := newStream(&script{evs: evs, hold: hold}, prof, stage.PaceOptions{Cancel: func() {},
		Weigh: func(*exchange.Event) (int, bool) { return 100, true }}, time.Now)
	got, _ := drain(t, s, func(got []arrival) {
		if len(got) == len(evs) {
			close(hold)
		}
	})
	for _, a := range got {
		if string(a.ev.Raw) != string(frame) {
			t.Fatal("a raw frame was altered")
		}
	}
	// 700 characters beyond the burst at 1,000 char/s: about 0.7 s.
	ratio := got[len(got)-1].at.Seconds() / 0.7
	t.Logf("8 frames in %s (ratio %.2f)", got[len(got)-1].at, ratio)
	if ratio < 0.6 || ratio > 1.6 {
		t.Errorf("raw frames released over %s, want about 0.7 s", got[len(got)-1].at)
	}
}

func TestProfileSelection(t *testing.T) {
	cases := []struct {
		name, header, query, body, def, want string
		bad                                  bool
	}{
		{name: "header", header: "slow", query: "fast", body: `{"metadata":{"pacing":"steady"}}`, want: "slow"},
		{name: "query", query: "Fast", body: `{"metadata":{"pacing":"steady"}}`, want: "fast"},
		{name: "body", body: `{"metadata":{"pacing":"steady"}}`, def: "slow", want: "steady"},
		{name: "route default", body: `{}`, def: "slow", want: "slow"},
		{name: "none", body: `{}`, want: ""},
		{name: "unknown", header: "warp", bad: true},
		{name: "unknown in body", body: `{"metadata":{"pacing":"warp"}}`, bad: true},
	}
	for _, c := range cases {
		r := httptest.NewRequest(http.MethodPost, "/v1/chat/completions?pacing="+c.query, nil)
		if c.header != "" {
			r.Header.Set(Header, c.header)
		}
		got, err := Pacer{}.Profile(r, &exchange.Request{Body: []byte(c.body)}, c.def)
		if c.bad {
			if ge := gwerr.As(err); err == nil || ge.Category != gwerr.InvalidRequest || ge.Code != "unknown_pacing_profile" {
				t.Errorf("%s: err %v", c.name, err)
			}
			continue
		}
		if err != nil || got != c.want {
			t.Errorf("%s: %q, %v; want %q", c.name, got, err, c.want)
		}
	}
}

func TestConfigKnowsTheProfiles(t *testing.T) {
	if !slices.Equal(config.PacingProfiles, Names) {
		t.Fatalf("config %v, pacing %v", config.PacingProfiles, Names)
	}
	for _, n := range Names {
		if _, ok := Profiles[n]; !ok {
			t.Fatalf("no profile %s", n)
		}
	}
}
