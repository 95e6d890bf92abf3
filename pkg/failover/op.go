package failover

import (
	"context"
	"io"

	"github.com/llmgw/llmgw/pkg/exchange"
	"github.com/llmgw/llmgw/pkg/provider"
)

// Op is an upstream call that is not a generation and is answered by one
// whole body: a token count (count_tokens), a moderation endpoint's
// verdict. [Router.Call] walks a request's chain for it under the same
// rules as a generation: the breaker, the key ledger, the retry budget,
// the policy's response timeout and fallbacks, one trace.
type Op struct {
	// Name is the operation's name in the key ledger (keyledger.Slot), for
	// an operation the provider rate-limits apart from generation
	// (Anthropic's count_tokens): its 429s then set the key aside for that
	// operation only and are not held against the target's breaker, since
	// they say nothing about its generation. Empty: the target's model,
	// as a generation.
	Name string
	// Post makes one attempt, as an adapter's Send does: it reports every
	// upstream response to call.OnResponse and returns the body of a
	// success, or a *gwerr.Error (provider.ErrCannotCount-like refusals
	// included) without retrying.
	Post func(ctx context.Context, call *provider.Call) ([]byte, error)
}

func (o *Op) name() string {
	if o == nil {
		return ""
	}
	return o.Name
}

// Call walks rq's chain for op and returns the body of the first target
// that answers. rq.Trace records every attempt and skip; the error is
// gwerr.ErrClientGone or a *gwerr.Error for the client, as for Open.
func (r *Router) Call(ctx context.Context, rq *exchange.Request, op Op) ([]byte, error) {
	rq.Stream = false
	s, err := r.open(ctx, rq, &op)
	if err != nil {
		return nil, err
	}
	ev, err := s.Next()
	s.End(io.EOF)
	if err != nil {
		return nil, err
	}
	return ev.Raw, nil
}

// send makes one attempt: the adapter's Send for a generation, op's Post
// (its body as one whole Raw event) otherwise.
func (r *Router) send(ctx context.Context, call *provider.Call, op *Op) (provider.Stream, error) {
	if op == nil {
		return r.Providers[call.Step.Provider].Send(ctx, call)
	}
	body, err := op.Post(ctx, call)
	if err != nil {
		return nil, err
	}
	return &wholeBody{ev: exchange.Event{Kind: exchange.Raw, Raw: body, RawAPI: call.Req.API,
		Flags: exchange.HasContent | exchange.HasFinish | exchange.Whole}}, nil
}

// wholeBody is the stream of an Op's answer: one event.
type wholeBody struct {
	ev   exchange.Event
	done bool
}

func (w *wholeBody) Next() (exchange.Event, error) {
	if w.done {
		return exchange.Event{}, io.EOF
	}
	w.done = true
	return w.ev, nil
}

func (w *wholeBody) Usage() exchange.TokenUsage { return exchange.TokenUsage{} }
func (w *wholeBody) Close() error               { return nil }
