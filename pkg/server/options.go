package server

import (
	"context"
	"log/slog"
	"net/http"
	"time"

	"github.com/llmgw/llmgw/pkg/breaker"
	"github.com/llmgw/llmgw/pkg/config"
	"github.com/llmgw/llmgw/pkg/exchange"
	"github.com/llmgw/llmgw/pkg/keyledger"
	"github.com/llmgw/llmgw/pkg/locality"
	"github.com/llmgw/llmgw/pkg/responsestate"
	"github.com/llmgw/llmgw/pkg/retry"
	"github.com/llmgw/llmgw/pkg/stage"
)

// Options are the handler's hooks and collaborators, grouped by the part
// of the handler that uses them: the front (Front), the failover engine
// and the state it shares (Upstream), the serving stages (Stages) and the
// work that follows a response (Reporting). The groups are embedded, so
// o.Admit is o.Front.Admit. Nil fields take defaults, in the manner of
// httputil.ReverseProxy.
type Options struct {
	// Logger receives one JSON line per request and state transitions
	// (nil: JSON to stderr).
	Logger *slog.Logger
	// Now is the clock (nil: time.Now).
	Now func() time.Time
	Front
	Upstream
	Stages
	Reporting
}

// Front is what the HTTP front needs before a request reaches a pipeline:
// who may call, what they may spend, the extra paths it serves and who
// answers CORS.
type Front struct {
	// Authenticate identifies callers of the /v1 API (nil: everyone is an
	// anonymous caller, for local use).
	Authenticate Authenticator
	// Admit enforces limits and budgets before spend (nil: none).
	Admit Admitter
	// Extra serves more paths (e.g. /v1/usage) behind the same
	// authentication; the caller is in the request context
	// (exchange.CallerFrom).
	Extra map[string]http.Handler
	// Public serves paths without authentication: static content only
	// (the status page's HTML; the data it reads is under Extra).
	Public map[string]http.Handler
	// ExternalCORS says CORS is handled in front of the handler (Lambda:
	// the Function URL answers preflights and adds the Access-Control
	// headers, configured by the stack from the seeded server.cors). The
	// handler then adds no CORS headers, since browsers refuse a response
	// with two Access-Control-Allow-Origin headers, and refuses any
	// preflight that reaches it. Otherwise the handler applies the config's
	// server.cors itself (local mode).
	ExternalCORS bool
	// ConfigStatus, when set, tells the admin view of /healthz the config
	// version in force and the last failed reload (pkg/app's Gateway).
	ConfigStatus func() ConfigStatus
}

// Upstream is what the failover engine needs on every upstream call (and
// /healthz shows): the breaker, the key ledger and how keys resolve, the
// retry budget and the wait between retries.
type Upstream struct {
	// ResolveKey returns the secret a key reference points at; ok false
	// skips that key. An error skips it too, and /healthz lists it as not
	// in service (reason keyledger.ReasonMissing when the error wraps
	// keyledger.ErrNotFound, else keyledger.ReasonUnresolved): one missing
	// key never stops the rest of the config. Nil: environment variables
	// only (keyledger.Env). Key references are resolved on every config
	// load (New and Reload), by keyledger.Resolve, and handed to Keys with
	// SetKeys.
	ResolveKey func(ctx context.Context, ref config.KeyRef) (secret string, ok bool, err error)
	// OnKeyError, when set, is told each time a key reference fails to
	// resolve (the ProviderKeyErrors metric).
	OnKeyError func(provider string, keyIndex int, err error)
	// Breakers guards targets (nil: a breaker.Breaker with the config's
	// settings over an in-memory store, shared by nothing but this
	// handler).
	Breakers interface {
		breaker.Guard
		breaker.Reporter
	}
	// OnBreakerOpen, when set, is told each time a target of the default
	// breaker (Breakers nil) opens (the BreakerOpen metric).
	OnBreakerOpen func(target string)
	// Keys picks provider keys and learns from responses (nil: a
	// keyledger.Ledger over an in-memory store). It is given the resolved
	// keys on every config load.
	Keys interface {
		keyledger.Picker
		Statuses(provider, model string) []keyledger.Status
		SetKeys(map[string][]keyledger.Key)
	}
	// Budget caps retries per provider (nil: a retry.Budget of this
	// process only). pkg/app gives every instance one budget shared
	// through the store (retry.NewSharedBudget).
	Budget *retry.Budget
	// Sleep waits between retries (nil: a timer that honours ctx). Tests
	// use it to see and skip waits.
	Sleep func(ctx context.Context, d time.Duration) error
	// ResponseOwners records which account (target, provider key) created
	// each Responses API response, so that follow-ups and calls on it go
	// there from every instance (nil: an in-memory record of this process
	// only). pkg/app keeps it in the shared table.
	ResponseOwners *responsestate.Owners
	// Places records where each conversation of a cache_locality route was
	// last served, so its next request starts there on every instance
	// (nil: an in-memory record of this process only). pkg/app keeps it
	// in the shared table.
	Places *locality.Places
}

// Stages are the serving stages the pipeline runs around the failover
// engine (the small interfaces of pkg/stage). A nil stage is off.
type Stages struct {
	// Moderation checks requests (and, by policy, answers) before anything
	// is generated or sent (moderation.Moderator); nil: no moderation,
	// whatever the config's policies say.
	Moderation stage.Moderation
	// Cache answers repeated requests from stored answers (cache.Cache);
	// nil: no response cache.
	Cache stage.Cache
	// Pacing releases streamed text at a selected profile's rate
	// (pacing.Pacer); nil: nothing is paced and selections are ignored.
	Pacing stage.Pacing
}

// Reporting is the work that follows a sent response: pricing, the usage
// record, and where that work runs.
type Reporting struct {
	// Record is called once per request with its usage record, before the
	// handler returns (on Lambda the environment may freeze right after).
	// Nil: the record is only logged.
	Record func(ctx context.Context, rec *exchange.Record)
	// AfterResponse runs the work that follows a sent response: the
	// budget settlement, the request log line and Record. Nil runs it
	// before the handler returns (Lambda: the record must be durable by
	// then). Local mode hands it to a bounded background runner, so a
	// kept-alive connection reads its next request at once; whoever sets
	// it must wait for that work before closing what it writes to.
	AfterResponse func(work func())
	// Cost prices a finished request's usage from the config's price table
	// (nil: cost is not computed).
	Cost func(cfg *config.Config, rec *exchange.Record) float64
	// Observe, when set, is told of every request once its record is
	// complete, after Record, with the request (its trace context is in
	// ctx: traceid.SpanFrom): traces, metrics and the status page. It
	// must not block. Nil: off.
	Observe func(ctx context.Context, req *exchange.Request, rec *exchange.Record)
	// Tap, when set, is asked once per relayed answer for a function that
	// sees each of its events in canonical form (nil: none for this
	// request): the content capture of the routes that export it. Nil:
	// off.
	Tap func(req *exchange.Request) func(ev *exchange.Event)
}
