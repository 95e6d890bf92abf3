package server

import (
	"context"
	"errors"
	"io"
	"time"
	"unicode/utf8"

	"github.com/tidwall/gjson"

	"github.com/llmgw/llmgw/pkg/exchange"
	"github.com/llmgw/llmgw/pkg/failover"
	"github.com/llmgw/llmgw/pkg/gwerr"
	"github.com/llmgw/llmgw/pkg/ingress"
	"github.com/llmgw/llmgw/pkg/provider"
	"github.com/llmgw/llmgw/pkg/stage"
)

// generate answers a routed, admitted request: from the response cache
// when it holds the answer, else through the failover engine (recording
// the answer for the cache on a miss), paced when the request asked.
func (x *exchangeState) generate(ctx context.Context) {
	if mod := x.h.stages.Moderation; mod != nil {
		if err := mod.Input(ctx, x.moderationEnv(), x.req); err != nil {
			x.refuse(err)
			return
		}
	}
	var tap stage.CacheTap
	if c := x.h.stages.Cache; c != nil {
		res := c.Lookup(ctx, x.rt.cfg, x.req, x.r.Header)
		if res.Status != "" {
			x.w.Header().Set(stage.CacheHeader, res.Status)
			x.rec.ResponseCache = res.Status
		}
		if res.Hit != nil {
			x.replayHit(ctx, res.Hit)
			return
		}
		tap = res.Tap
	}
	if !x.pinFollowUp(ctx) {
		return
	}
	x.localize(ctx)
	sess, err := x.rt.router.Open(ctx, x.req)
	if err != nil {
		if x.pin != nil {
			err = pinnedError(err, x.pin, gjson.GetBytes(x.req.Body, "previous_response_id").Str, &x.req.Trace)
		}
		x.refuse(err)
		return
	}
	var src stage.Source = x.tapOwner(sess)
	if tap != nil {
		src = tap.Wrap(src, decoder(x.in))
	}
	if src = x.moderated(ctx, src); src == nil {
		return
	}
	x.relay(x.paced(src))
	x.notePlace()
	if tap != nil && x.end == io.EOF {
		// The client has its answer; the entry is written before the
		// handler returns (on Lambda the environment may freeze after).
		cctx, cancel := context.WithTimeout(context.WithoutCancel(x.r.Context()), 5*time.Second)
		defer cancel()
		tap.Commit(cctx, &x.req.Trace)
	}
}

// replayHit serves a cached answer: no upstream call. A streaming hit keeps
// the original relative timing unless the request is paced (instant: no
// waits at all; fast, steady, slow: the pacer smooths the original timing,
// as it would a live stream). The record spends no tokens and costs
// nothing; it notes what the answer cost when it was generated.
func (x *exchangeState) replayHit(ctx context.Context, hit stage.CachedAnswer) {
	gaps := x.req.Stream && x.pacing != "instant" && !x.holdsOutput()
	if src := x.moderated(ctx, hit.Replay(ctx, gaps, x.req.WantsUsage)); src != nil {
		x.relay(x.paced(src))
	}
	x.rec.SetUsage(exchange.TokenUsage{})
	target, provider, u := hit.Served()
	if x.h.report.Cost != nil {
		orig := exchange.Record{Target: target, Provider: provider}
		orig.SetUsage(u)
		x.rec.SavedCostUSD = x.h.report.Cost(x.rt.cfg, &orig)
	}
}

// moderationEnv is what the moderation stage needs of this request's
// runtime: the config and the failover engine, for its check route and
// its endpoint calls alike.
func (x *exchangeState) moderationEnv() stage.ModerationEnv {
	return stage.ModerationEnv{Config: x.rt.cfg,
		Open: func(ctx context.Context, req *exchange.Request) (stage.Source, error) {
			s, err := x.rt.router.Open(ctx, req)
			if err != nil {
				return nil, err
			}
			return s, nil
		},
		Call: func(ctx context.Context, req *exchange.Request, post func(context.Context, *provider.Call) ([]byte, error)) ([]byte, error) {
			return x.rt.router.Call(ctx, req, failover.Op{Post: post})
		}}
}

// holdsOutput reports whether the answer is held for output moderation.
func (x *exchangeState) holdsOutput() bool {
	return x.h.stages.Moderation != nil && x.h.stages.Moderation.HoldsOutput(x.rt.cfg, x.req)
}

// moderated passes the answer through output moderation. nil means it was
// refused (or failed while held) and the client has been answered.
func (x *exchangeState) moderated(ctx context.Context, src stage.Source) stage.Source {
	mod := x.h.stages.Moderation
	if mod == nil {
		return src
	}
	out, err := mod.Output(ctx, x.moderationEnv(), x.req, src, decoder(x.in))
	if err != nil {
		x.rec.SetUsage(src.Usage())
		x.refuse(err)
		return nil
	}
	return out
}

// refuse answers with err before anything was sent.
func (x *exchangeState) refuse(err error) {
	if errors.Is(err, gwerr.ErrClientGone) {
		x.rec.Outcome, x.rec.Status = "client_cancelled", 499
		return
	}
	x.fail(gwerr.As(err))
}

// paced wraps a streamed response's source in the pacer of its profile.
// Non-streaming bodies are sent whole: pacing does not apply to them.
func (x *exchangeState) paced(src stage.Source) stage.Source {
	p := x.h.stages.Pacing
	if p == nil || x.pacing == "" || !x.req.Stream {
		return src
	}
	x.rec.Pacing = x.pacing
	return p.Pace(src, x.pacing, stage.PaceOptions{Weigh: weigher(x.in), Cancel: x.cancel})
}

// decoder is the ingress's reader of its own raw frames (nil: none).
func decoder(in ingress.Ingress) stage.Decoder {
	if dec, ok := in.(ingress.RawDecoder); ok {
		return dec.DecodeRaw
	}
	return nil
}

// weigher counts the characters of text a Raw event carries, through the
// ingress's own decoder (nil when the ingress has none).
func weigher(in ingress.Ingress) func(*exchange.Event) (int, bool) {
	dec := decoder(in)
	if dec == nil {
		return nil
	}
	var scratch []exchange.Event
	return func(ev *exchange.Event) (int, bool) {
		var ok bool
		scratch, ok = dec(scratch[:0], ev)
		if !ok {
			return 0, false
		}
		n := 0
		for i := range scratch {
			if k := scratch[i].Kind; k == exchange.Text || k == exchange.Reasoning {
				n += utf8.RuneCountInString(scratch[i].Text)
			}
		}
		return n, true
	}
}
