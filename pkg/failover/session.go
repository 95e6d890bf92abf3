package failover

import (
	"context"
	"errors"
	"io"
	"sync"
	"time"

	"github.com/llmgw/llmgw/pkg/breaker"
	"github.com/llmgw/llmgw/pkg/config"
	"github.com/llmgw/llmgw/pkg/exchange"
	"github.com/llmgw/llmgw/pkg/gwerr"
	"github.com/llmgw/llmgw/pkg/provider"
)

// Session is a response committed to one target: it has produced its first
// content. Next relays the rest under the mid-stream rules; End must be
// called once.
type Session struct {
	// Step is the target that serves (after a mid-stream continuation, the
	// one that continues).
	Step config.Step

	head      []exchange.Event
	stream    provider.Stream
	ctx       context.Context // the request's
	actx      context.Context // the attempt's
	cancel    context.CancelCauseFunc
	wd        *time.Timer
	idle      time.Duration
	done      doneFunc
	ttft      time.Duration // the committed stream's time to first token (0: not a stream)
	wantUsage bool
	fault     bool // the upstream failed mid-stream: the breaker hears of it
	ended     bool // the upstream already ended cleanly: only the head is left
	// pending is a read still in flight when the head buffer's duration
	// ran out: its result comes after the head.
	pending chan read
	endOnce sync.Once

	// cont is the mid-stream continuation state (nil: the route does not
	// continue cut streams).
	cont *continuation
}

// open gives a session what a mid-stream continuation needs: the router,
// the request and the chain index of the target that serves.
func (s *Session) open(r *Router, ctx context.Context, rq *exchange.Request, depth int) {
	if rq.Stream && rq.Policy.ContinuesMidStream() {
		s.cont = &continuation{r: r, rq: rq, depth: depth}
	}
}

// Next returns the next event to send. io.EOF means the upstream finished
// cleanly. gwerr.ErrClientGone means the client left. Any other error is a
// *gwerr.Error for the mid-stream error event: category interrupted, or
// timeout when the idle gap or the request deadline ran out. On a route
// with continuation, a cut stream is continued when a target can (see
// continuation), and Next returns a Continuation event instead.
func (s *Session) Next() (exchange.Event, error) {
	if len(s.head) > 0 {
		f := s.head[0]
		s.head = s.head[1:]
		s.cont.track(&f)
		return f, nil
	}
	if s.ended {
		return exchange.Event{}, io.EOF
	}
	for {
		// The idle timer measures the upstream only: while the relay is
		// blocked on a slow client (back-pressure) no Next is pending and
		// the provider must not be blamed for the gap.
		s.wd.Reset(s.idle)
		ev, err := s.read()
		s.wd.Stop()
		if err != nil {
			merr := s.midStream(err)
			if s.fault && s.cont != nil {
				if cev, ok := s.cont.resume(s); ok {
					return cev, nil
				}
			}
			return ev, merr
		}
		if ev.IsUsageOnly() && !s.wantUsage {
			continue
		}
		if ev.Kind == exchange.Usage && s.cont != nil {
			ev.Usage = add(s.cont.spent, ev.Usage) // the client is told every attempt's tokens
		}
		s.cont.track(&ev)
		return ev, nil
	}
}

// read is the upstream's next event: the read in flight first, if any.
func (s *Session) read() (exchange.Event, error) {
	if p := s.pending; p != nil {
		s.pending = nil
		r := <-p
		return r.ev, r.err
	}
	return s.stream.Next()
}

// Buffered reports whether Next returns at once: events read before the
// commit (the head) are waiting, or the upstream already ended
// (stage.Buffered: the relay writes the head in one write).
func (s *Session) Buffered() bool { return len(s.head) > 0 || s.ended }

// midStream maps an error after the first token.
func (s *Session) midStream(err error) error {
	if err == io.EOF {
		return io.EOF
	}
	switch cause := context.Cause(s.actx); {
	case errors.Is(cause, errIdle):
		s.fault = true
		return &gwerr.Error{Category: gwerr.Timeout, Message: "provider sent nothing for " + s.idle.String(), Provider: s.Step.Provider, Cause: err}
	case errors.Is(cause, gwerr.ErrDeadline):
		return &gwerr.Error{Category: gwerr.Timeout, Message: "request deadline reached before the stream finished", Provider: s.Step.Provider, Cause: err}
	case s.ctx.Err() != nil:
		return gwerr.ErrClientGone
	}
	s.fault = true
	ge := gwerr.As(err)
	out := &gwerr.Error{Category: gwerr.Interrupted, Message: "provider stream was interrupted", Provider: s.Step.Provider,
		RetryAfter: ge.RetryAfter, Cause: err}
	if ge.Category != gwerr.Interrupted && ge.Category != gwerr.Internal {
		out.Message += " (" + string(ge.Category) + ")"
	}
	return out
}

// Usage returns the tokens counted so far (every attempt's, after a
// continuation).
func (s *Session) Usage() exchange.TokenUsage {
	if s.cont != nil && s.cont.spent != (exchange.TokenUsage{}) {
		return add(s.cont.spent, s.stream.Usage())
	}
	return s.stream.Usage()
}

// End releases the upstream and tells the breaker how it went: err is what
// Next returned last (io.EOF for a clean end), or the error that stopped the
// relay (a failed write to the client).
func (s *Session) End(err error) {
	s.endOnce.Do(func() {
		s.wd.Stop()
		s.cancel(nil)
		if s.pending != nil {
			<-s.pending // ended by the cancel; never close under a read
		}
		s.stream.Close()
		switch {
		case err == nil || err == io.EOF:
			s.done(breaker.Success, s.ttft)
		case s.fault:
			s.done(breaker.Failure, s.ttft)
		default:
			s.done(breaker.Ignored, s.ttft)
		}
	})
}
