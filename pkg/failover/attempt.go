package failover

import (
	"context"
	"errors"
	"io"
	"net/http"
	"time"

	"github.com/llmgw/llmgw/pkg/breaker"
	"github.com/llmgw/llmgw/pkg/config"
	"github.com/llmgw/llmgw/pkg/exchange"
	"github.com/llmgw/llmgw/pkg/gwerr"
	"github.com/llmgw/llmgw/pkg/keyledger"
	"github.com/llmgw/llmgw/pkg/provider"
)

// Codes of failures inside a route's head buffer (opt-in): the stream had
// content, but the client had seen none of it.
const (
	// CodeHeadStall: the upstream went silent for the idle timeout.
	CodeHeadStall = "head_stall"
	// CodeHeadCut: the upstream's stream broke off.
	CodeHeadCut = "head_cut"
)

// attempt makes one call and reads up to the first content event or, with
// a head buffer, to the end of the head window (see config.HeadBuffer):
// its tokens, the end of the stream, or its duration after the first
// content - on a timer, so that a silent upstream cannot hold the head
// past it (the read in flight then passes to the session).
func (r *Router) attempt(ctx context.Context, rq *exchange.Request, step config.Step, key keyledger.Key, done doneFunc, op *Op) (*Session, error) {
	tr := &rq.Trace
	start := r.now()
	actx, cancel := context.WithCancelCause(ctx)
	limit := step.FirstTokenTimeout
	if !rq.Stream {
		limit = rq.Policy.ResponseTimeout.D()
	}
	wd := time.AfterFunc(limit, func() { cancel(errFirstToken) })
	idleD := rq.Policy.IdleTimeout.D()
	idle := time.AfterFunc(time.Hour, func() { cancel(errIdle) })
	idle.Stop()
	rec := exchange.Attempt{Target: step.ID, Key: key.Fingerprint, Phase: "first_byte", Start: start}
	slot := keyledger.Slot(step.LedgerModel(), op.name())
	call := &provider.Call{Req: rq, Step: step, Key: key,
		OnResponse: func(status int, h http.Header) {
			rec.Status = status
			r.Keys.Observe(step.Provider, slot, key, status, h)
		}}
	var hr headRun
	rd := headReader{}
	fail := func(stream provider.Stream, err error) (*Session, error) {
		wd.Stop()
		idle.Stop()
		cancel(nil)
		rd.stopWindow()
		if stream != nil {
			rd.settle()
			if !hr.firstAt.IsZero() {
				// Discarded inside the head buffer: the client saw none of
				// it, but the upstream billed what it streamed.
				u := stream.Usage()
				rec.InputTokens, rec.OutputTokens, rec.ToolCalls = u.Input, u.Output, u.Tools
			}
			stream.Close()
		}
		ge, outcome := r.classify(ctx, actx, err, limit)
		if ge != nil && ge.Status == http.StatusTooManyRequests && op.name() != "" {
			outcome = breaker.Ignored // the operation's own rate limit: nothing about the target's health
		}
		done(outcome, 0)
		rec.Latency = r.now().Sub(start)
		rec.LatencyM = exchange.Millis(rec.Latency)
		if ge == nil {
			rec.Category = "client_cancelled"
			tr.Attempts = append(tr.Attempts, rec)
			return nil, gwerr.ErrClientGone
		}
		rec.Category = ge.Category
		tr.Attempts = append(tr.Attempts, rec)
		return nil, ge
	}
	stream, err := r.send(actx, call, op)
	if err != nil {
		return fail(nil, err)
	}
	rd.stream = stream
	rec.Phase = "first_token"
	if err := r.readHead(rq, step.Provider, &rd, wd, idle, idleD, &rec, &hr); err != nil {
		return fail(stream, err)
	}
	wd.Stop()
	if rd.pending == nil {
		idle.Stop() // a read in flight stays under the idle timer
	}
	rd.stopWindow()
	rec.Latency = r.now().Sub(start)
	rec.LatencyM = exchange.Millis(rec.Latency)
	rec.Phase = ""
	tr.Attempts = append(tr.Attempts, rec)
	var ttft time.Duration
	if rq.Stream {
		ttft = max(rec.Latency, time.Nanosecond) // a whole body's latency is not a time to first token
	}
	return &Session{
		Step: step, head: hr.head, stream: stream, ctx: ctx, actx: actx, cancel: cancel,
		wd: idle, idle: idleD, done: done, ttft: ttft, wantUsage: rq.WantsUsage, ended: hr.ended, pending: rd.pending,
	}, nil
}

// headRun is what an attempt's head read found: the events held for the
// client, the time of the first content (when holding a head) and whether
// the stream ended inside it.
type headRun struct {
	head    []exchange.Event
	firstAt time.Time
	ended   bool
}

// readHead reads an attempt's stream up to its first content event or, with
// a head buffer, to the end of the head window (see attempt); the error it
// returns fails the attempt. It is its own frame, apart from attempt's:
// every stream's stack is as deep as the deeper of the two paths through
// attempt (the upstream call, the head read), not their sum.
func (r *Router) readHead(rq *exchange.Request, prov string, rd *headReader, wd, idle *time.Timer, idleD time.Duration, rec *exchange.Attempt, h *headRun) error {
	hb := rq.Policy.HeadBuffer
	if !rq.Stream {
		hb = nil
	}
	tokens := 0
	answered := false
	for {
		ev, err := rd.next()
		if err == errHeadElapsed {
			return nil // the head window is over: what is held goes out now
		}
		if err == io.EOF {
			// Ended without content. It is still an answer when it stopped
			// for length or a content filter, or spent output tokens (on
			// hidden reasoning): the client decides. Only a truly empty
			// success is retried or failed over.
			if !h.firstAt.IsZero() || answered || rd.stream.Usage().Output > 0 {
				h.ended = true
				return nil
			}
			return provider.EmptyResponse(prov)
		}
		if err != nil {
			if !h.firstAt.IsZero() {
				err = headFailure(prov, err)
			}
			return err
		}
		if ev.IsUsageOnly() && !rq.WantsUsage {
			continue
		}
		h.head = append(h.head, ev.Clone())
		if ev.Commits() {
			if hb == nil {
				return nil
			}
			if h.firstAt.IsZero() {
				// Content: the first-token wait is over; inside the head
				// window a silence longer than the idle timeout is a stall.
				h.firstAt, rec.Phase = r.now(), "head"
				wd.Stop()
				if hb.Duration > 0 {
					rd.startWindow(hb.Duration.D())
				}
			}
			tokens += contentTokens(&ev)
			if hb.Tokens > 0 && tokens >= hb.Tokens || hb.Duration > 0 && r.now().Sub(h.firstAt) >= hb.Duration.D() {
				return nil
			}
		}
		if !h.firstAt.IsZero() {
			idle.Reset(idleD)
		}
		if ev.Finishes() && (ev.Finish == exchange.FinishLength || ev.Finish == exchange.FinishContentFilter) {
			answered = true
		}
	}
}

// contentTokens estimates the output tokens of a content event: one per
// four characters, at least one per event (a passthrough frame counts one).
func contentTokens(ev *exchange.Event) int {
	n := len(ev.Text)
	if ev.Kind == exchange.ToolCall {
		n = len(ev.Name)
	}
	return max(exchange.EstimateTokens(n), 1)
}

// headFailure is the error for a stream that broke inside its head window:
// the client saw nothing, so a cut is a failure before the first token
// (unavailable, which fails over by default). In-band provider errors keep
// their own category.
func headFailure(prov string, err error) error {
	ge := gwerr.As(err)
	if ge.Category != gwerr.Interrupted {
		return err
	}
	return &gwerr.Error{Category: gwerr.Unavailable, Code: CodeHeadCut, Message: "provider stream was cut inside the head buffer",
		Provider: prov, RetryAfter: ge.RetryAfter, Cause: err}
}

// classify maps an attempt's error to what the client and the breaker see.
// A nil *gwerr.Error means the client left.
func (r *Router) classify(ctx, actx context.Context, err error, limit time.Duration) (*gwerr.Error, breaker.Outcome) {
	switch cause := context.Cause(actx); {
	case errors.Is(cause, errFirstToken):
		return &gwerr.Error{Category: gwerr.Timeout, Code: CodeFirstTokenTimeout, Message: "no first token within " + limit.String(), Cause: err}, breaker.Failure
	case errors.Is(cause, errIdle):
		return &gwerr.Error{Category: gwerr.Timeout, Code: CodeHeadStall, Message: "provider went silent inside the head buffer", Cause: err}, breaker.Failure
	case errors.Is(cause, gwerr.ErrDeadline):
		return &gwerr.Error{Category: gwerr.Timeout, Message: "request deadline passed before a provider answered", Cause: gwerr.ErrDeadline}, breaker.Ignored
	case ctx.Err() != nil:
		return nil, breaker.Ignored
	}
	ge := gwerr.As(err)
	if ge.Category.ProviderFault() && ge.Code != provider.CodeProviderCredentials {
		return ge, breaker.Failure
	}
	return ge, breaker.Ignored
}
