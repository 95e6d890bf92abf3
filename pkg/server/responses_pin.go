package server

import (
	"context"
	"log/slog"
	"strings"

	"github.com/tidwall/gjson"

	"github.com/llmgw/llmgw/pkg/config"
	"github.com/llmgw/llmgw/pkg/exchange"
	"github.com/llmgw/llmgw/pkg/gwerr"
	"github.com/llmgw/llmgw/pkg/keyledger"
	"github.com/llmgw/llmgw/pkg/responsestate"
	"github.com/llmgw/llmgw/pkg/stage"
	"github.com/llmgw/llmgw/pkg/wire/jsonb"
)

// Responses API state follows its account (docs/responses.md): a response
// created through the gateway by a target that speaks the Responses API is
// recorded (Upstream.ResponseOwners) with the target and provider key that
// created it; a follow-up naming it (previous_response_id) and every call
// on it (GET, DELETE, input_items, cancel: responses_state.go) go to that
// target with that key only. When that account cannot be used now (its
// breaker is open, its key is rate-limited, disabled or gone, the target
// left the config) the client gets CodeResponseAccount, never an answer
// from another account that lacks the state.

// Codes of the errors of a request pinned to a response's account.
const (
	// CodeResponseAccount: the account holding the response is unavailable
	// (502).
	CodeResponseAccount = "response_account_unavailable"
	// CodeResponseNotInRoute: the request's route has no target on the
	// account holding the response (400).
	CodeResponseNotInRoute = "response_account_not_in_route"
	// CodeResponseNotFound: the gateway created no such response for this
	// team, or it expired (404).
	CodeResponseNotFound = "response_not_found"
)

// pinFollowUp pins a Responses request that names a previous_response_id
// the gateway recorded to the account that created it: the request's
// chain becomes that one target, and its key the only one picked. false
// means the client was answered (an error).
func (x *exchangeState) pinFollowUp(ctx context.Context) bool {
	if x.req.API != exchange.Responses {
		return true
	}
	prev := gjson.GetBytes(x.req.Body, "previous_response_id").Str
	if prev == "" {
		return true
	}
	o, found, err := x.h.up.ResponseOwners.Get(ctx, prev)
	if err != nil {
		x.fail(gwerr.New(gwerr.Unavailable, "the gateway could not read which account holds response %s; retry later", prev).
			WithParam("previous_response_id").WithCode(CodeResponseAccount))
		return false
	}
	if !found {
		return true // not created through the gateway: the route's native targets, as before
	}
	if o.Team != x.req.Caller.Team {
		x.fail(notFound(prev).WithParam("previous_response_id"))
		return false
	}
	step, ok := ownerStep(x.req.Steps, o)
	if !ok {
		x.fail(gwerr.New(gwerr.InvalidRequest, "response %s is held by %s, which route %q does not include; send the follow-up through a route that does",
			prev, o, x.req.Route).WithParam("previous_response_id").WithCode(CodeResponseNotInRoute))
		return false
	}
	x.req.Steps = []config.Step{step}
	x.pin = &o
	x.rt = x.rt.pinned(o)
	return true
}

// notFound is the error for a response id the caller may not use.
func notFound(id string) *gwerr.Error {
	return gwerr.New(gwerr.NotFound, "no response %s was created through this gateway for this team (or it expired)", id).WithCode(CodeResponseNotFound)
}

// ownerStep is the step of steps on the owner's account: its very target,
// else a target of the same provider (another model of the same account,
// which holds the same state).
func ownerStep(steps []config.Step, o responsestate.Owner) (config.Step, bool) {
	for _, s := range steps {
		if s.ID == o.Target {
			return s, true
		}
	}
	for _, s := range steps {
		if s.Provider == o.Provider {
			return s, true
		}
	}
	return config.Step{}, false
}

// pinned is rt with a router that picks only o's key for o's provider.
func (rt *runtimeState) pinned(o responsestate.Owner) *runtimeState {
	r := *rt.router
	r.Keys = pinnedKeys{Picker: r.Keys, provider: o.Provider, fp: o.Key}
	cp := *rt
	cp.router = &r
	return &cp
}

// keyPinner picks one key by fingerprint (keyledger.Ledger.PickKey).
type keyPinner interface {
	PickKey(provider, model, fingerprint string) (keyledger.Key, error)
}

// pinnedKeys is a Picker that, for one provider, picks only one key.
type pinnedKeys struct {
	keyledger.Picker
	provider, fp string
}

// Pick implements keyledger.Picker.
func (p pinnedKeys) Pick(provider, model string) (keyledger.Key, error) {
	if provider != p.provider {
		return p.Picker.Pick(provider, model)
	}
	if kp, ok := p.Picker.(keyPinner); ok {
		return kp.PickKey(provider, model, p.fp)
	}
	if p.fp == "" {
		return p.Picker.Pick(provider, model)
	}
	return keyledger.Key{}, &keyledger.UnusableError{Provider: provider, Reason: keyledger.ReasonMissing}
}

// pinnedError turns the failure of a request pinned to o's account into
// the client's answer: a skip (breaker open, no usable key) or a failure
// that would have moved an unpinned request on to another target becomes
// CodeResponseAccount, saying which account and why; the account's own
// answers (its 404 for an unknown id, a 400) pass through.
func pinnedError(err error, o *responsestate.Owner, id string, tr *exchange.Trace) error {
	ge := gwerr.As(err)
	skip := ""
	for i := len(tr.Attempts) - 1; i >= 0; i-- {
		if tr.Attempts[i].Stage == "" {
			skip = tr.Attempts[i].Skipped
			break
		}
	}
	why := ""
	switch {
	case skip == "no_key":
		why = "the provider key that created it is not usable now (rate-limited, disabled or removed)"
	case ge.Category.Fallback() && ge.Category != gwerr.RateLimited:
		why = ge.Message // a breaker skip says so: "target ... is skipped: its circuit breaker is open"
	default:
		return err
	}
	e := gwerr.New(gwerr.Unavailable, "response %s is held by %s and the provider key that created it, which is unavailable now: %s; "+
		"no other account holds its state, so the gateway does not send it elsewhere", id, o, why).WithCode(CodeResponseAccount)
	e.RetryAfter, e.Cause = ge.RetryAfter, err
	return e
}

// ownerTap records the owner of a natively served Responses response as
// soon as its id passes (response.created, or the whole body). For a
// background response, and a whole body, the write ends before the client
// has the id: a follow-up, retrieval or resumed stream on another instance
// finds it. A foreground stream does not wait for the write before its
// first frame (a store write is milliseconds of time to first byte): the
// write runs beside the stream, and the response's terminal event
// (completed, failed, incomplete, an error, or the stream's end) waits for
// it, so a client holding the whole response finds its owner recorded; only
// a request naming the id while its own stream is still running may come
// too early (it then takes the route's chain).
type ownerTap struct {
	stage.Source
	x    *exchangeState
	done bool
	// pending is closed when a write started beside the stream has ended.
	pending chan struct{}
}

// tapOwner wraps src when the request is a Responses request the upstream
// may store (store not false, or background).
func (x *exchangeState) tapOwner(src stage.Source) stage.Source {
	if x.req.API != exchange.Responses {
		return src
	}
	if gjson.GetBytes(x.req.Body, "store").Type == gjson.False && !background(x.req.Body) {
		return src
	}
	return &ownerTap{Source: src, x: x}
}

// Buffered passes the inner source's answer through (stage.Buffered).
func (t *ownerTap) Buffered() bool {
	b, ok := t.Source.(stage.Buffered)
	return ok && b.Buffered()
}

// Next implements stage.Source.
func (t *ownerTap) Next() (exchange.Event, error) {
	ev, err := t.Source.Next()
	if t.pending != nil {
		select {
		case <-t.pending: // the write has ended: nothing to wait for
			t.pending = nil
		default:
			if err != nil || terminalResponsesEvent(ev) {
				<-t.pending
				t.pending = nil
			}
		}
	}
	if err != nil || t.done || ev.Kind != exchange.Raw || ev.RawAPI != exchange.Responses {
		return ev, err
	}
	var id string
	whole := ev.Flags&exchange.Whole != 0
	if whole {
		id = gjson.GetBytes(ev.Raw, "id").Str
	} else if gjson.GetBytes(ev.Raw, "type").Str == "response.created" {
		id = gjson.GetBytes(ev.Raw, "response.id").Str
	}
	if id == "" {
		return ev, nil
	}
	t.done = true
	id = strings.Clone(id)
	o := t.x.owner(id, t.Source.Usage())
	if whole || background(t.x.req.Body) { // a background stream may be resumed from its id alone
		t.x.putOwner(id, o)
		return ev, nil
	}
	t.pending = make(chan struct{})
	go func() {
		defer close(t.pending)
		t.x.putOwner(id, o)
	}()
	return ev, nil
}

// terminalResponsesEvent reports whether ev is a Responses stream's last
// event: response.completed, response.failed, response.incomplete or error.
func terminalResponsesEvent(ev exchange.Event) bool {
	if ev.Kind != exchange.Raw || ev.RawAPI != exchange.Responses {
		return false
	}
	switch gjson.Get(jsonb.String(ev.Raw), "type").Str { // Get on a view: GetBytes copies what it returns
	case "response.completed", "response.failed", "response.incomplete", "error":
		return true
	}
	return false
}

// recordOwner writes the owner of response id (owner, then putOwner).
func (x *exchangeState) recordOwner(id string, u exchange.TokenUsage) {
	x.putOwner(id, x.owner(id, u))
}

// owner is the owner of response id: the serving target and the key of the
// attempt that committed; it notes the id (and a queued background
// response's outcome) on the record.
func (x *exchangeState) owner(id string, u exchange.TokenUsage) responsestate.Owner {
	tr := &x.req.Trace
	// A streamed background response delivers its answer and usage in
	// the stream, like any other: only a queued one is settled later.
	o := responsestate.Owner{Target: tr.Target, Provider: tr.Provider, Route: x.req.Route, Team: x.req.Caller.Team,
		Background: background(x.req.Body) && !x.req.Stream}
	for i := len(tr.Attempts) - 1; i >= 0; i-- {
		if a := tr.Attempts[i]; a.Stage == "" && a.Target == tr.Target && a.Skipped == "" {
			o.Key = a.Key
			break
		}
	}
	if o.Background {
		o.EstimatedInput = u.Input
		x.rec.Outcome = OutcomeQueued
	}
	x.rec.ResponseID = id
	return o
}

// putOwner writes owner o of response id. A failed write is logged; the
// answer still goes out (follow-ups then take the route's chain). It reads
// nothing of the exchange but its ids, so it may run beside the stream.
func (x *exchangeState) putOwner(id string, o responsestate.Owner) {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(x.r.Context()), responsestate.DefaultTimeout)
	defer cancel()
	if err := x.h.up.ResponseOwners.Put(ctx, id, o); err != nil {
		x.h.log.LogAttrs(ctx, slog.LevelWarn, "could not record the account of a response", slog.String("request_id", x.req.ID),
			slog.String("target", o.Target), slog.String("error", err.Error()))
	}
}

// OutcomeQueued is the record outcome of a background response's creation:
// accepted, not done; its tokens are settled when the gateway first sees it
// finished (responses_state.go).
const OutcomeQueued = "queued"

// background reports whether a Responses request asks for background: true.
func background(body []byte) bool { return gjson.GetBytes(body, "background").Type == gjson.True }
