package moderation

import (
	"context"
	"errors"
	"io"
	"strings"
	"unicode/utf8"

	"github.com/llmgw/llmgw/pkg/config"
	"github.com/llmgw/llmgw/pkg/exchange"
	"github.com/llmgw/llmgw/pkg/gwerr"
	"github.com/llmgw/llmgw/pkg/stage"
)

// windowed is output moderation in windows (policy output_window): events
// pass through until the first one with text; from there they are held
// until their text reaches the window (in characters), then the held text
// - with the config.ModerationWindowOverlap characters checked before it -
// is checked under every output policy and the held events are released.
// At the answer's end the rest is checked the same way. A violation (or,
// under fail_closed, a layer error) ends the answer where it is: Next
// returns the refusal, which the front sends in the client's own format
// (an error response when nothing was sent yet, else the API's in-stream
// error). Held events without text (tool calls, the finish) wait with the
// text before them, so order is kept.
type windowed struct {
	m      *Moderator
	ctx    context.Context
	env    stage.ModerationEnv
	req    *exchange.Request
	names  []string
	window int
	src    stage.Source
	dec    stage.Decoder

	held    []exchange.Event // not yet checked; its first event has text
	text    strings.Builder  // the text of held
	chars   int              // runes in text
	tail    string           // the last checked characters (overlap)
	out     []exchange.Event // checked, to release
	i       int
	end     error // the source's end, once read (io.EOF or its error)
	refusal error // a refusal: the answer ends with it
	base    int   // the first output-moderation attempt in req.Trace
	// unreadable is set once an event could not be read as text.
	unreadable bool
	scratch    []exchange.Event
}

// windowFor returns the window output moderation checks in: the smallest
// output_window of the policies, or 0 when one of them holds the whole
// answer (output_window 0).
func windowFor(cfg *config.Config, names []string) int {
	w := 0
	for _, n := range names {
		ow := cfg.Moderation.Policies[n].OutputWindow
		if ow == 0 {
			return 0
		}
		if w == 0 || ow < w {
			w = ow
		}
	}
	return w
}

// newWindowed reads src up to its first release (or its end) before it
// returns, so that a refusal of a short answer - one window - is a plain
// error response, as with a whole hold.
func (m *Moderator) newWindowed(ctx context.Context, env stage.ModerationEnv, req *exchange.Request, names []string, window int,
	src stage.Source, dec stage.Decoder) (stage.Source, error) {
	w := &windowed{m: m, ctx: ctx, env: env, req: req, names: names, window: window, src: src, dec: dec, base: len(req.Trace.Attempts)}
	for len(w.out) == 0 && w.end == nil && w.refusal == nil {
		w.advance()
	}
	switch {
	case w.refusal != nil && len(w.out) == 0:
		w.End(w.refusal)
		return nil, w.refusal
	case w.end != nil && w.end != io.EOF && len(w.out) == 0:
		src.End(w.end) // failed before anything was sent: the front answers with the error
		return nil, w.end
	}
	return w, nil
}

// Next implements stage.Source.
func (w *windowed) Next() (exchange.Event, error) {
	for {
		if w.i < len(w.out) {
			w.i++
			return w.out[w.i-1], nil
		}
		w.out, w.i = w.out[:0], 0
		switch {
		case w.refusal != nil:
			return exchange.Event{}, w.refusal
		case w.end != nil:
			return exchange.Event{}, w.end
		}
		w.advance()
	}
}

// advance reads one event and checks the held window when it is full or
// the answer ended.
func (w *windowed) advance() {
	ev, err := w.src.Next()
	if err != nil {
		w.check() // what was held is checked before anything else is said
		if w.refusal == nil {
			w.end = err
		}
		return
	}
	ev = ev.Clone()
	text, readable := w.textOf(&ev)
	if !readable && !w.unreadable {
		w.unreadable = true // decided (and logged) once per answer
		if uerr := w.m.unchecked(w.ctx, w.env, w.req, w.names, "the answer is not readable as text"); uerr != nil {
			w.refusal = uerr
			return
		}
	}
	if text == "" && len(w.held) == 0 {
		w.out = append(w.out, ev)
		return
	}
	w.held = append(w.held, ev)
	w.text.WriteString(text)
	w.chars += utf8.RuneCountInString(text)
	if w.chars >= w.window {
		w.check()
	}
}

// textOf returns the text and reasoning an event carries (a Raw event read
// through the ingress's decoder); readable is false for a Raw event the
// decoder cannot read.
func (w *windowed) textOf(ev *exchange.Event) (string, bool) {
	switch ev.Kind {
	case exchange.Text, exchange.Reasoning:
		return ev.Text, true
	case exchange.Raw:
		ok := false
		if w.dec != nil {
			w.scratch, ok = w.dec(w.scratch[:0], ev)
		}
		var b strings.Builder
		for _, e := range w.scratch {
			if e.Kind == exchange.Text || e.Kind == exchange.Reasoning {
				b.WriteString(e.Text)
			}
		}
		return b.String(), ok
	}
	return "", true
}

// check checks the held text under every policy and releases it, or sets
// the refusal.
func (w *windowed) check() {
	if len(w.held) == 0 {
		return
	}
	text := w.tail + w.text.String()
	for _, n := range w.names {
		if err := w.m.run(w.ctx, w.env, w.req, n, dirOutput, text); err != nil {
			w.refusal = err
			break
		}
	}
	w.req.Trace.Attempts = append(w.req.Trace.Attempts[:w.base], coalesce(w.req.Trace.Attempts[w.base:])...)
	if w.refusal != nil {
		return
	}
	w.tail = lastRunes(text, config.ModerationWindowOverlap)
	w.out = append(w.out, w.held...)
	w.held, w.chars = w.held[:0:0], 0
	w.text.Reset()
}

// Usage implements stage.Source.
func (w *windowed) Usage() exchange.TokenUsage { return w.src.Usage() }

// End implements stage.Source. After a refusal the upstream is ended as
// having done its part (no breaker penalty; a stream still running is
// cancelled).
func (w *windowed) End(err error) {
	if w.refusal != nil && !errors.Is(w.refusal, gwerr.ErrClientGone) {
		err = io.EOF
	}
	w.src.End(err)
}

// lastRunes returns the last n runes of s.
func lastRunes(s string, n int) string {
	i := len(s)
	for k := 0; k < n && i > 0; k++ {
		_, size := utf8.DecodeLastRuneInString(s[:i])
		i -= size
	}
	return s[i:]
}

// coalesce merges the attempts of a windowed check that stand for the same
// call (target, stage, outcome): one attempt each, with Calls, latencies,
// tokens, text units and costs summed, so a long answer's record stays
// small.
func coalesce(as []exchange.Attempt) []exchange.Attempt {
	type key struct {
		target, stage, skipped, decision string
		category                         gwerr.Category
		status                           int
	}
	idx := map[key]int{}
	var out []exchange.Attempt
	for _, a := range as {
		k := key{a.Target, a.Stage, a.Skipped, a.Decision, a.Category, a.Status}
		i, ok := idx[k]
		if !ok {
			idx[k] = len(out)
			out = append(out, a)
			continue
		}
		b := &out[i]
		b.Calls = max(b.Calls, 1) + max(a.Calls, 1)
		b.Latency += a.Latency
		b.LatencyM += a.LatencyM
		b.InputTokens += a.InputTokens
		b.OutputTokens += a.OutputTokens
		b.TextUnits += a.TextUnits
		b.CostUSD += a.CostUSD
		if a.Reason != "" {
			b.Reason = a.Reason
		}
	}
	return out
}
