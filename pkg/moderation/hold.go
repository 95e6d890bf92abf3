package moderation

import (
	"context"
	"io"
	"log/slog"
	"strings"

	"github.com/llmgw/llmgw/pkg/config"
	"github.com/llmgw/llmgw/pkg/exchange"
	"github.com/llmgw/llmgw/pkg/gwerr"
	"github.com/llmgw/llmgw/pkg/stage"
)

// HoldsOutput implements stage.Moderation: a policy of the request's route
// or team has output: true.
func (m *Moderator) HoldsOutput(cfg *config.Config, req *exchange.Request) bool {
	return len(outputPolicies(cfg, req)) > 0
}

func outputPolicies(cfg *config.Config, req *exchange.Request) []string {
	var out []string
	for _, n := range cfg.ModerationFor(req.Route, team(req)) {
		if cfg.Moderation.Policies[n].Output {
			out = append(out, n)
		}
	}
	return out
}

// Output implements stage.Moderation: the whole answer is read (at most
// the smallest max_output_bytes of the policies), its text checked under
// every policy with output: true, and only then released - or, when every
// such policy has an output_window, checked and released window by window
// (windowed).
func (m *Moderator) Output(ctx context.Context, env stage.ModerationEnv, req *exchange.Request, src stage.Source, dec stage.Decoder) (stage.Source, error) {
	names := outputPolicies(env.Config, req)
	if len(names) == 0 {
		return src, nil
	}
	if window := windowFor(env.Config, names); window > 0 {
		return m.newWindowed(ctx, env, req, names, window, src, dec)
	}
	limit := 0
	for _, n := range names {
		if l := env.Config.Moderation.Policies[n].MaxOutputBytes; limit == 0 || l < limit {
			limit = l
		}
	}
	h := &held{src: src}
	var text strings.Builder
	var scratch []exchange.Event
	size, readable := 0, true
	for {
		ev, err := src.Next()
		if err == io.EOF {
			h.end = io.EOF
			break
		}
		if err != nil {
			src.End(err) // failed before anything was sent: the front answers with the error
			return nil, err
		}
		ev = ev.Clone()
		h.evs = append(h.evs, ev)
		size += len(ev.Text) + len(ev.Raw)
		switch ev.Kind {
		case exchange.Text, exchange.Reasoning:
			text.WriteString(ev.Text)
		case exchange.Raw:
			var ok bool
			if dec != nil {
				scratch, ok = dec(scratch[:0], &ev)
			}
			readable = readable && ok
			for _, e := range scratch {
				if e.Kind == exchange.Text || e.Kind == exchange.Reasoning {
					text.WriteString(e.Text)
				}
			}
		}
		if size > limit {
			break // h.end stays nil: the rest is still upstream
		}
	}
	if h.end == nil || !readable {
		reason := "the answer exceeds max_output_bytes"
		if !readable {
			reason = "the answer is not readable as text"
		}
		if err := m.unchecked(ctx, env, req, names, reason); err != nil {
			src.End(gwerr.ErrClientGone) // cancels the upstream; no breaker penalty
			return nil, err
		}
		return h, nil // fail_open: released unchecked, the rest relayed live
	}
	for _, n := range names {
		if err := m.run(ctx, env, req, n, dirOutput, text.String()); err != nil {
			src.End(io.EOF) // the upstream did its part
			return nil, err
		}
	}
	return h, nil
}

// unchecked handles an answer that cannot be checked: blocked under any
// fail_closed policy, logged and released under fail_open ones.
func (m *Moderator) unchecked(ctx context.Context, env stage.ModerationEnv, req *exchange.Request, names []string, reason string) error {
	for _, n := range names {
		p := env.Config.Moderation.Policies[n]
		outcome := "error_allowed"
		if p.Mode == config.ModerationFailClosed {
			outcome = "error_blocked"
		}
		m.log().LogAttrs(ctx, slog.LevelWarn, "moderation", slog.String("request_id", req.ID), slog.String("policy", n),
			slog.String("direction", dirOutput), slog.String("layer", "hold"), slog.String("outcome", outcome),
			slog.String("mode", p.Mode), slog.String("error", reason))
		if outcome == "error_blocked" {
			return &gwerr.Error{Category: gwerr.Unavailable, Code: gwerr.CodeModerationUnavailable,
				Message: "moderation is unavailable (" + reason + "); the answer was not sent"}
		}
	}
	return nil
}

// held yields a held answer, then (when the hold stopped early) the rest
// of the source.
type held struct {
	src stage.Source
	evs []exchange.Event
	i   int
	end error // io.EOF when the whole answer is held
}

// Next implements stage.Source.
func (h *held) Next() (exchange.Event, error) {
	if h.i < len(h.evs) {
		h.i++
		return h.evs[h.i-1], nil
	}
	if h.end != nil {
		return exchange.Event{}, h.end
	}
	return h.src.Next()
}

// Usage implements stage.Source.
func (h *held) Usage() exchange.TokenUsage { return h.src.Usage() }

// End implements stage.Source.
func (h *held) End(err error) { h.src.End(err) }
