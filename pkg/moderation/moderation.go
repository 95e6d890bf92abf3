// Package moderation is the moderation stage (stage.Moderation): two
// layers of checks, per route or team policy (config moderation.policies),
// run before anything is generated and, optionally, on the answer.
//
// Layer one is an OpenAI-compatible moderation endpoint (POST
// <base_url>/moderations of a configured kind openai provider). Layer two,
// which runs only when layer one passed, is a chat-based check: the policy
// prompt (system message) and the text go to a configured route, whose
// answer must be exactly the verdict
//
//	{"verdict": "allow" | "block", "category": "<the category violated, or empty>"}
//
// (whitespace and a ```json fence around it are tolerated, other members
// ignored; anything else is a malformed verdict).
//
// Layer three, which runs when the layers before it passed, is a Bedrock
// guardrail (guardrail.go): the text goes to ApplyGuardrail with source
// INPUT or OUTPUT, and GUARDRAIL_INTERVENED blocks. Its text units are
// priced (moderation.guardrail_prices) into the request's cost.
//
// A violation in any layer blocks: content_policy, code
// content_policy_violation. An error, a timeout or a malformed answer of a
// layer blocks under fail_closed (unavailable, code moderation_unavailable)
// and lets the request through under fail_open, after at most the layer's
// timeout (then layer two still runs after a failed layer one). Every
// decision is logged (policy, direction, layer, outcome, category, latency,
// the error's kind) - never the text. Every call is an attempt in the
// request's trace (stage moderation_input or moderation_output), bounded by
// its layer's timeout; the check's tokens are priced into the request's
// cost, so they count against the team's budget.
//
// What is moderated: the text of the request's user, system and developer
// messages (images and files are not); with output: true, the answer's
// text and reasoning. Output moderation holds the whole answer - streamed
// or not - until it is complete, checks it, and only then sends it (a
// refusal is a plain error response, nothing of the answer is sent): the
// simple, correct choice, at the price of the stream's first token arriving
// when the answer is complete. An answer larger than max_output_bytes is a
// moderation error. A policy with output_window (a guardrail policy's
// default: 900 characters) checks the answer window by window instead
// (window.go): at most a window of text is held back, and a violation
// ends the answer where it is with an error in the client's format.
//
// Every layer's decision and reason is also recorded on its call's
// attempt (exchange.Attempt Decision and Reason) in the usage record.
package moderation

import (
	"context"
	"errors"
	"log/slog"
	"net/http"
	"strings"
	"time"

	"github.com/llmgw/llmgw/pkg/config"
	"github.com/llmgw/llmgw/pkg/exchange"
	"github.com/llmgw/llmgw/pkg/gwerr"
	"github.com/llmgw/llmgw/pkg/stage"
)

// Moderator is the moderation stage. The zero value is ready.
type Moderator struct {
	// Client calls moderation endpoints (nil: a client that follows no
	// redirect); each call is bounded by its layer's timeout.
	Client *http.Client
	// Logger receives one line per decision (nil: discarded).
	Logger *slog.Logger
	// Now is the clock of latencies (nil: time.Now).
	Now func() time.Time
	// Guardrails returns the Bedrock client a guardrail layer calls (nil:
	// NewGuardrailClient's, one per region and endpoint, built on first
	// use and kept).
	Guardrails func(ctx context.Context, g *config.ModerationGuardrail) (GuardrailAPI, error)

	clientCache
}

var _ stage.Moderation = (*Moderator)(nil)

// Layers, directions and outcomes, as logged.
const (
	layerEndpoint = "endpoint"
	layerCheck    = "check"
	dirInput      = "input"
	dirOutput     = "output"
)

// verdict is a layer's answer.
type verdict struct {
	block    bool
	category string
}

// layerError is a layer that could not answer. reason is safe to log and
// to show: it never holds the text or an upstream body.
type layerError struct{ reason string }

// Error implements error.
func (e *layerError) Error() string { return e.reason }

func (m *Moderator) now() time.Time {
	if m.Now != nil {
		return m.Now()
	}
	return time.Now()
}

func (m *Moderator) log() *slog.Logger {
	if m.Logger != nil {
		return m.Logger
	}
	return slog.New(slog.DiscardHandler)
}

// Input implements stage.Moderation.
func (m *Moderator) Input(ctx context.Context, env stage.ModerationEnv, req *exchange.Request) error {
	names := env.Config.ModerationFor(req.Route, team(req))
	if len(names) == 0 {
		return nil
	}
	text := inputText(req.Prompt)
	for _, name := range names {
		if err := m.run(ctx, env, req, name, dirInput, text); err != nil {
			return err
		}
	}
	return nil
}

// run checks text under one policy: layer one, then layer two.
func (m *Moderator) run(ctx context.Context, env stage.ModerationEnv, req *exchange.Request, name, dir, text string) error {
	p := env.Config.Moderation.Policies[name]
	stageName := exchange.StageModerationInput
	if dir == dirOutput {
		stageName = exchange.StageModerationOutput
	}
	type layer struct {
		name string
		call func() (verdict, error)
	}
	var layers []layer
	if e := p.Endpoint; e != nil {
		layers = append(layers, layer{layerEndpoint, func() (verdict, error) { return m.endpoint(ctx, env, req, e, text, stageName) }})
	}
	if k := p.Check; k != nil {
		layers = append(layers, layer{layerCheck, func() (verdict, error) { return m.check(ctx, env, req, k, text, stageName) }})
	}
	if g := p.Guardrail; g != nil {
		layers = append(layers, layer{layerGuardrail, func() (verdict, error) {
			return m.guardrail(ctx, envConfig{env.Config}, req, g, text, stageName)
		}})
	}
	if strings.TrimSpace(text) == "" {
		return nil // nothing to moderate (images and files are not)
	}
	for _, l := range layers {
		start, calls := m.now(), len(req.Trace.Attempts)
		v, err := l.call()
		if ctx.Err() != nil && !errors.Is(context.Cause(ctx), gwerr.ErrDeadline) {
			return gwerr.ErrClientGone
		}
		outcome := "allow"
		switch {
		case err != nil && p.Mode == config.ModerationFailClosed:
			outcome = "error_blocked"
		case err != nil:
			outcome = "error_allowed"
		case v.block:
			outcome = "block"
		}
		attrs := []slog.Attr{slog.String("request_id", req.ID), slog.String("policy", name), slog.String("direction", dir),
			slog.String("layer", l.name), slog.String("outcome", outcome), slog.String("category", v.category),
			slog.String("mode", p.Mode), slog.Float64("latency_ms", exchange.Millis(m.now().Sub(start)))}
		level := slog.LevelInfo
		if err != nil {
			attrs, level = append(attrs, slog.String("error", err.Error())), slog.LevelWarn
		}
		m.log().LogAttrs(ctx, level, "moderation", attrs...)
		if n := len(req.Trace.Attempts); n > calls {
			// The decision and its reason go on the usage record with
			// the layer's (last) call.
			a := &req.Trace.Attempts[n-1]
			a.Decision, a.Reason = outcome, v.category
			if err != nil {
				a.Reason = err.Error()
			}
		}
		switch outcome {
		case "block":
			what := "request"
			if dir == dirOutput {
				what = "answer"
			}
			msg := "the " + what + " was blocked by the content policy"
			if v.category != "" {
				msg += " (category: " + v.category + ")"
			}
			return &gwerr.Error{Category: gwerr.ContentPolicy, Code: gwerr.CodeContentPolicyViolation, Message: msg}
		case "error_blocked":
			return &gwerr.Error{Category: gwerr.Unavailable, Code: gwerr.CodeModerationUnavailable,
				Message: "moderation is unavailable (" + l.name + ": " + err.Error() + "); nothing was generated", Cause: err}
		}
	}
	return nil
}

// team is the caller's team, as policies name it.
func team(req *exchange.Request) string {
	if req.Caller != nil && req.Caller.Team != "" {
		return req.Caller.Team
	}
	return config.AnonymousTeam
}

// inputText is what is moderated of a request: every piece of text the
// model reads, wherever it is in the prompt (exchange.Prompt.WalkText: the
// system prompt, user and assistant turns, tool uses and results, the
// tools' names, descriptions and schemas), one per line.
func inputText(p *exchange.Prompt) string {
	if p == nil {
		return ""
	}
	var b strings.Builder
	p.WalkText(func(s string) {
		b.WriteString(s)
		b.WriteByte('\n')
	})
	return b.String()
}

// attempt appends one stage call to the trace.
func attempt(tr *exchange.Trace, a exchange.Attempt, start time.Time, now time.Time) {
	a.Latency = now.Sub(start)
	a.LatencyM = exchange.Millis(a.Latency)
	tr.Attempts = append(tr.Attempts, a)
}
