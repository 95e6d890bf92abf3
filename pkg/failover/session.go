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
	// Step is the target that serves.
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
	endOnce   sync.Once
}

// Next returns the next event to send. io.EOF means the upstream finished
// cleanly. ErrClientGone means the client left. Any other error is a
// *gwerr.Error for the mid-stream error event: category interrupted, or
// timeout when the idle gap or the request deadline ran out.
func (s *Session) Next() (exchange.Event, error) {
	if len(s.head) > 0 {
		f := s.head[0]
		s.head = s.head[1:]
		return f, nil
	}
	if s.ended {
		return exchange.Event{}, io.EOF
	}
	for {
		s.wd.Reset(s.idle)
		ev, err := s.stream.Next()
		if err != nil {
			return ev, s.midStream(err)
		}
		if ev.IsUsageOnly() && !s.wantUsage {
			continue
		}
		return ev, nil
	}
}

// midStream maps an error after the first token.
func (s *Session) midStream(err error) error {
	if err == io.EOF {
		return io.EOF
	}
	switch cause := context.Cause(s.actx); {
	case errors.Is(cause, errIdle):
		s.fault = true
		return &gwerr.Error{Category: gwerr.Timeout, Message: "provider sent nothing for " + s.idle.String(), Provider: s.Step.Provider, Cause: err}
	case errors.Is(cause, ErrDeadline):
		return &gwerr.Error{Category: gwerr.Timeout, Message: "request deadline reached before the stream finished", Provider: s.Step.Provider, Cause: err}
	case s.ctx.Err() != nil:
		return ErrClientGone
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

// Usage returns the tokens counted so far.
func (s *Session) Usage() exchange.TokenUsage { return s.stream.Usage() }

// End releases the upstream and tells the breaker how it went: err is what
// Next returned last (io.EOF for a clean end), or the error that stopped the
// relay (a failed write to the client).
func (s *Session) End(err error) {
	s.endOnce.Do(func() {
		s.wd.Stop()
		s.cancel(nil)
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
