package failover

import (
	"cmp"
	"errors"
	"slices"
	"strings"
	"time"

	"github.com/tidwall/gjson"

	"github.com/llmgw/llmgw/pkg/breaker"
	"github.com/llmgw/llmgw/pkg/config"
	"github.com/llmgw/llmgw/pkg/exchange"
	"github.com/llmgw/llmgw/pkg/gwerr"
)

// continuation is a session's mid-stream continuation (opt-in per route,
// config.Policy.Continuation).
//
// While the stream is relayed it keeps the text sent so far. When the
// stream dies after its first token (a cut, an in-band error, an idle
// gap; never the request deadline or a client that left), the next targets
// of the chain that declare prefill (config.Target.Prefill) are asked, in
// chain order, to continue it: the request, in canonical form (API
// exchange.Prefill), with one more message - the assistant's text so far,
// trailing whitespace trimmed. The first one that produces content is
// spliced into the same response: the session returns a Continuation
// event, then that target's events (its Start dropped, leading whitespace
// dropped where the prefill's was trimmed). Both attempts are in the
// trace (the continuing one marked Continues), Trace.Continued names the
// target and Usage counts every attempt's tokens.
//
// A stream that sent anything but text (tool calls, reasoning) or already
// sent its finish cannot be continued from a prefill: it ends with today's
// typed error. So does a stream no target can continue: the client never
// sees a continuation attempt's own error in place of its own.
type continuation struct {
	r     *Router
	rq    *exchange.Request
	depth int // the chain index of the target that serves

	text    strings.Builder // the text sent so far
	blocked bool            // something else was sent: no prefill can continue it
	trimmed bool            // the prefill's trailing whitespace was trimmed

	// The response's id, model and creation time, as first announced.
	id, model string
	created   int64
	known     bool

	spent exchange.TokenUsage // the tokens of the attempts that were cut
}

// track follows an event on its way to the client.
func (c *continuation) track(ev *exchange.Event) {
	if c == nil || c.blocked {
		return
	}
	switch ev.Kind {
	case exchange.Start:
		c.announce(ev.ID, ev.Name, ev.Created)
	case exchange.Text:
		c.text.WriteString(ev.Text)
	case exchange.Raw:
		c.raw(ev)
	case exchange.Usage, exchange.Continuation:
	default: // a finish, reasoning, tool calls, signatures
		c.blocked = true
	}
}

func (c *continuation) announce(id, model string, created int64) {
	if !c.known {
		c.id, c.model, c.created, c.known = strings.Clone(id), strings.Clone(model), created, true
	}
}

// raw follows a passthrough frame: its text, or whatever makes the stream
// impossible to continue.
func (c *continuation) raw(ev *exchange.Event) {
	if ev.Flags&(exchange.HasFinish|exchange.Whole) != 0 {
		c.blocked = true
		return
	}
	switch ev.RawAPI {
	case exchange.Chat:
		r := gjson.ParseBytes(ev.Raw)
		c.announce(r.Get("id").String(), r.Get("model").String(), r.Get("created").Int())
		choices := r.Get("choices").Array()
		if len(choices) > 1 {
			c.blocked = true
			return
		}
		if len(choices) == 0 {
			return // the usage chunk
		}
		d := choices[0].Get("delta")
		if d.Get("tool_calls").Exists() || d.Get("function_call").Exists() ||
			d.Get("reasoning_content").String() != "" || d.Get("reasoning").String() != "" {
			c.blocked = true
			return
		}
		c.text.WriteString(d.Get("content").String())
	case exchange.Messages:
		r := gjson.ParseBytes(ev.Raw)
		switch r.Get("type").String() {
		case "message_start":
			c.announce(r.Get("message.id").String(), r.Get("message.model").String(), 0)
		case "content_block_start":
			if r.Get("content_block.type").String() != "text" {
				c.blocked = true
			}
		case "content_block_delta":
			if r.Get("delta.type").String() != "text_delta" {
				c.blocked = true
				return
			}
			c.text.WriteString(r.Get("delta.text").String())
		case "ping", "content_block_stop":
		default:
			c.blocked = true
		}
	default:
		c.blocked = true
	}
}

// resume tries to continue s's cut stream on the next targets that declare
// prefill. On success s serves from the continuing target and the
// Continuation event is returned.
func (c *continuation) resume(s *Session) (exchange.Event, bool) {
	text := c.text.String()
	prefill := strings.TrimRight(text, " \t\r\n")
	if c.blocked || prefill == "" || c.rq.Prompt == nil || !slices.ContainsFunc(c.rq.Steps[c.depth+1:], func(st config.Step) bool { return st.Prefill }) {
		return exchange.Event{}, false
	}
	c.trimmed = len(prefill) < len(text)
	cut := s.Step
	// The cut attempt is over: its breaker hears of the fault now.
	s.wd.Stop()
	s.cancel(nil)
	s.stream.Close()
	s.done(breaker.Failure, s.ttft)
	s.done = func(breaker.Outcome, time.Duration) {}
	spent := add(c.spent, s.stream.Usage())

	crq := c.request(prefill)
	defer func() {
		c.rq.Trace.Attempts, c.rq.Trace.MalformedFrames = crq.Trace.Attempts, crq.Trace.MalformedFrames
	}()
	for d := c.depth + 1; d < len(c.rq.Steps); d++ {
		step := c.rq.Steps[d]
		if !step.Prefill {
			continue // a target that cannot continue is never asked
		}
		n := len(crq.Trace.Attempts)
		ns, err := c.r.tryTarget(s.ctx, crq, step, nil)
		for i := n; i < len(crq.Trace.Attempts); i++ {
			crq.Trace.Attempts[i].Continues = true
		}
		if errors.Is(err, gwerr.ErrClientGone) {
			break
		}
		if err != nil {
			continue
		}
		c.depth, c.spent = d, spent
		c.rq.Trace.Continued = append(c.rq.Trace.Continued, step.ID)
		s.Step, s.stream, s.actx, s.cancel, s.wd, s.done = ns.Step, ns.stream, ns.actx, ns.cancel, ns.wd, ns.done
		s.ended, s.fault, s.head, s.pending = ns.ended, false, c.splice(ns.head), ns.pending
		return exchange.Event{Kind: exchange.Continuation, ID: c.id, Name: c.model, Created: c.created, Text: step.ID, Stop: cut.ID}, true
	}
	return exchange.Event{}, false
}

// request is the continuation request: the client's, in canonical form
// (the Prompt, and the retiring chat form while a request has one), with
// the assistant's text so far as its last message.
func (c *continuation) request(prefill string) *exchange.Request {
	crq := *c.rq
	p := *c.rq.Prompt
	p.Messages = append(slices.Clone(p.Messages), exchange.Message{Role: exchange.RoleAssistant,
		Content: []exchange.Block{{Type: exchange.BlockText, Text: prefill}}})
	crq.API, crq.Prompt, crq.Body = exchange.Prefill, &p, nil
	crq.Trace.Attempts = slices.Clone(c.rq.Trace.Attempts)
	return &crq
}

// splice drops what would restart the response from the continuing
// target's first events: its Start and role chunks, and the leading
// whitespace the prefill's trimming moved.
func (c *continuation) splice(head []exchange.Event) []exchange.Event {
	out := head[:0]
	strip := c.trimmed
	for _, ev := range head {
		switch {
		case ev.Kind == exchange.Start, ev.Kind == exchange.Raw && ev.Flags == 0:
			continue
		case ev.Kind == exchange.Text && strip:
			ev.Text = strings.TrimLeft(ev.Text, " \t\r\n")
			if ev.Text == "" {
				continue
			}
		}
		if ev.Commits() {
			strip = false
		}
		out = append(out, ev)
	}
	return out
}

// add sums two attempts' tokens.
func add(a, b exchange.TokenUsage) exchange.TokenUsage {
	return exchange.TokenUsage{Input: a.Input + b.Input, Output: a.Output + b.Output, CacheRead: a.CacheRead + b.CacheRead,
		CacheWrite: a.CacheWrite + b.CacheWrite, CacheWrite1h: a.CacheWrite1h + b.CacheWrite1h, Reasoning: a.Reasoning + b.Reasoning,
		Tools: a.Tools.Add(b.Tools), Estimated: a.Estimated || b.Estimated, Tier: cmp.Or(b.Tier, a.Tier)}
}
