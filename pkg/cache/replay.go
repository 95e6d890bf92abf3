package cache

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"io"
	"time"

	"github.com/llmgw/llmgw/pkg/exchange"
	"github.com/llmgw/llmgw/pkg/gwerr"
	"github.com/llmgw/llmgw/pkg/stage"
)

// answer is a hit (stage.CachedAnswer).
type answer struct {
	e   *Entry
	now func() time.Time
}

// Served implements stage.CachedAnswer.
func (a *answer) Served() (target, provider string, u exchange.TokenUsage) {
	return a.e.Target, a.e.Provider, a.e.Usage
}

// Replay implements stage.CachedAnswer.
func (a *answer) Replay(ctx context.Context, gaps, wantsUsage bool) stage.Source {
	return &replay{e: a.e, ctx: ctx, gaps: gaps, wantUsage: wantsUsage, created: a.now().Unix(), id: newID(""), timer: time.NewTimer(time.Hour)}
}

// replay yields a stored answer's events as a live stream would: the
// response gets a new id and the current time, each tool call a new id
// with its original prefix; with gaps, each event after the first waits
// its original gap.
type replay struct {
	e         *Entry
	ctx       context.Context
	gaps      bool
	wantUsage bool
	created   int64
	id        string
	i         int
	timer     *time.Timer
}

// Next implements stage.Source.
func (r *replay) Next() (exchange.Event, error) {
	for r.i < len(r.e.Events) {
		s := &r.e.Events[r.i]
		r.i++
		ev := s.event()
		if ev.IsUsageOnly() && !r.wantUsage {
			continue
		}
		if r.gaps && r.i > 1 && s.GapMicros > 0 {
			if err := r.wait(time.Duration(s.GapMicros) * time.Microsecond); err != nil {
				return exchange.Event{}, err
			}
		}
		switch ev.Kind {
		case exchange.Start:
			ev.ID, ev.Created = r.id, r.created
		case exchange.ToolCall:
			ev.ID = newID(ev.ID)
		}
		return ev, nil
	}
	return exchange.Event{}, io.EOF
}

// wait sleeps d, or until the request ends: a client that left, or the
// request deadline (a typed timeout, as a live stream gets).
func (r *replay) wait(d time.Duration) error {
	r.timer.Reset(d)
	select {
	case <-r.timer.C:
		return nil
	case <-r.ctx.Done():
		r.timer.Stop()
		if errors.Is(context.Cause(r.ctx), gwerr.ErrDeadline) {
			return &gwerr.Error{Category: gwerr.Timeout, Message: "request deadline reached before the stream finished", Cause: gwerr.ErrDeadline}
		}
		return gwerr.ErrClientGone
	}
}

// Usage implements stage.Source: the stored answer's usage, which the
// client sees; the gateway records a hit as spending nothing.
func (r *replay) Usage() exchange.TokenUsage { return r.e.Usage }

// End implements stage.Source.
func (r *replay) End(error) { r.timer.Stop() }

// newID is prefix followed by 24 random hex digits.
func newID(prefix string) string {
	var b [12]byte
	rand.Read(b[:])
	return prefix + hex.EncodeToString(b[:])
}
