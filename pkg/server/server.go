// Package server is the gateway's HTTP front: the client APIs of
// pkg/ingress/registry (OpenAI Chat Completions, Responses and embeddings,
// Anthropic Messages and its count_tokens), GET /v1/models (in OpenAI's
// shape, or Anthropic's for Anthropic clients), GET /healthz (HEAD wherever
// GET works), CORS (server.cors), the Content-Type check, request ids,
// the per-request log line and usage record, and panic recovery. The same
// http.Handler serves local mode (net/http) and Lambda (lambdaurl).
package server

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"log/slog"
	"net/http"
	"os"
	"runtime/debug"
	"sync/atomic"
	"time"

	"github.com/llmgw/llmgw/pkg/breaker"
	"github.com/llmgw/llmgw/pkg/config"
	"github.com/llmgw/llmgw/pkg/exchange"
	"github.com/llmgw/llmgw/pkg/failover"
	"github.com/llmgw/llmgw/pkg/gwerr"
	"github.com/llmgw/llmgw/pkg/ingress"
	"github.com/llmgw/llmgw/pkg/ingress/chat"
	"github.com/llmgw/llmgw/pkg/ingress/messages"
	ingressregistry "github.com/llmgw/llmgw/pkg/ingress/registry"
	"github.com/llmgw/llmgw/pkg/keyledger"
	providerregistry "github.com/llmgw/llmgw/pkg/provider/registry"
	"github.com/llmgw/llmgw/pkg/requestlog"
	"github.com/llmgw/llmgw/pkg/retry"
	"github.com/llmgw/llmgw/pkg/stage"
	"github.com/llmgw/llmgw/pkg/store/embedded"
	"github.com/llmgw/llmgw/pkg/traceid"
)

// Options are the handler's hooks and collaborators. Nil fields take
// defaults, in the manner of httputil.ReverseProxy.
type Options struct {
	// Logger receives one JSON line per request and state transitions
	// (nil: JSON to stderr).
	Logger *slog.Logger
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
	// Authenticate identifies callers of the /v1 API (nil: everyone is an
	// anonymous caller, for local use).
	Authenticate Authenticator
	// Extra serves more paths (e.g. /v1/usage) behind the same
	// authentication; the caller is in the request context
	// (exchange.CallerFrom).
	Extra map[string]http.Handler
	// Budget caps retries per provider (nil: a retry.Budget of this
	// process only). pkg/app gives every instance one budget shared
	// through the store (retry.NewSharedBudget).
	Budget *retry.Budget
	// Admit enforces limits and budgets before spend (nil: none).
	Admit Admitter
	// Cost prices a finished request's usage from the config's price table
	// (nil: cost is not computed).
	Cost func(cfg *config.Config, rec *exchange.Record) float64
	// ExternalCORS says CORS is handled in front of the handler (Lambda:
	// the Function URL answers preflights and adds the Access-Control
	// headers, configured by the stack from the seeded server.cors). The
	// handler then adds no CORS headers, since browsers refuse a response
	// with two Access-Control-Allow-Origin headers, and refuses any
	// preflight that reaches it. Otherwise the handler applies the config's
	// server.cors itself (local mode).
	ExternalCORS bool
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
	// Now is the clock (nil: time.Now).
	Now func() time.Time
	// Sleep waits between retries (nil: a timer that honours ctx). Tests
	// use it to see and skip waits.
	Sleep func(ctx context.Context, d time.Duration) error
}

// Handler serves the gateway API. Build it with New; swap its config with
// Reload.
type Handler struct {
	opts    Options
	log     *slog.Logger
	budget  *retry.Budget
	current atomic.Pointer[runtimeState]
	// ingresses maps each POST path to the client API served there;
	// counters each token-count path to the API (an ingress.Counter).
	ingresses map[string]ingress.Ingress
	counters  map[string]ingress.Ingress
}

// runtimeState is everything derived from one config.
type runtimeState struct {
	cfg    *config.Config
	router *failover.Router
	kinds  map[string]string // provider id -> kind
	// unresolved are the configured keys whose reference did not resolve,
	// by provider (shown in /healthz; never picked).
	unresolved map[string][]keyledger.Status
}

// New returns a Handler serving cfg.
func New(ctx context.Context, cfg *config.Config, opts Options) (*Handler, error) {
	if opts.Logger == nil {
		opts.Logger = slog.New(requestlog.NewJSONHandler(os.Stderr, nil))
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	if opts.ResolveKey == nil {
		opts.ResolveKey = keyledger.Env
	}
	if opts.Budget == nil {
		opts.Budget = retry.NewBudget()
		opts.Budget.Now = opts.Now
	}
	h := &Handler{opts: opts, log: opts.Logger, budget: opts.Budget, ingresses: map[string]ingress.Ingress{},
		counters: map[string]ingress.Ingress{}}
	for _, e := range ingressregistry.Ingresses {
		for _, p := range e.Paths {
			h.ingresses[p] = e.Ingress
		}
		if _, ok := e.Ingress.(ingress.Counter); ok {
			for _, p := range e.CountPaths {
				h.counters[p] = e.Ingress
			}
		}
	}
	if h.opts.Breakers == nil || h.opts.Keys == nil {
		// State of this process only: nothing to share it with, nothing
		// to keep after exit.
		mem := embedded.OpenMemory(embedded.WithClock(opts.Now))
		if h.opts.Breakers == nil {
			h.opts.Breakers = breaker.New(mem, cfg.Breaker, breaker.Options{Now: opts.Now, Logger: h.log,
				OnTransition: func(target string, _, to breaker.State, _ breaker.Snapshot) {
					if to == breaker.Open && h.opts.OnBreakerOpen != nil {
						h.opts.OnBreakerOpen(target)
					}
				}})
		}
		if h.opts.Keys == nil {
			h.opts.Keys = keyledger.New(mem, keyledger.Options{Now: opts.Now, Logger: h.log})
		}
	}
	if err := h.Reload(ctx, cfg); err != nil {
		return nil, err
	}
	return h, nil
}

// Reload swaps in a new config: it resolves the config's key references
// and hands the keys to Options.Keys. In-flight requests finish on the old
// config; breaker and key state carry over. A key whose reference does not
// resolve is skipped (logged, reported to OnKeyError, listed in /healthz);
// the rest of the config serves.
func (h *Handler) Reload(ctx context.Context, cfg *config.Config) error {
	provs, err := providerregistry.Build(ctx, cfg)
	if err != nil {
		return err
	}
	kinds := map[string]string{}
	for _, id := range cfg.ProviderIDs() {
		kinds[id] = cfg.Providers[id].Kind
	}
	res := keyledger.Resolve(ctx, cfg, h.opts.ResolveKey, h.log, h.opts.OnKeyError)
	h.opts.Keys.SetKeys(res.Keys)
	rt := &runtimeState{cfg: cfg, kinds: kinds, unresolved: res.Unresolved, router: &failover.Router{
		Providers: provs, Breakers: h.opts.Breakers, Keys: h.opts.Keys, Budget: h.budget, Now: h.opts.Now, Sleep: h.opts.Sleep,
	}}
	h.current.Store(rt)
	return nil
}

// Config returns the config in force.
func (h *Handler) Config() *config.Config { return h.current.Load().cfg }

// UnresolvedKeys counts the configured keys of the config in force whose
// reference did not resolve when it was applied (a Reload retries them).
func (h *Handler) UnresolvedKeys() int {
	n := 0
	for _, l := range h.current.Load().unresolved {
		n += len(l)
	}
	return n
}

// ServeHTTP routes a request. It never lets a panic escape: lambdaurl has no
// recover, and a panic there would kill the process.
func (h *Handler) ServeHTTP(rw http.ResponseWriter, r *http.Request) {
	rid := requestID(r)
	tc := traceid.FromRequest(r)
	rw.Header().Set("x-request-id", rid)
	rw.Header().Set("x-gateway-trace-id", tc.TraceID)
	rw.Header().Set("traceparent", tc.Traceparent())
	r = r.WithContext(traceid.With(r.Context(), tc.TraceID))
	w := &trackingWriter{ResponseWriter: rw}
	in, counter := h.ingresses[r.URL.Path], h.counters[r.URL.Path]
	shape := errorShape(r, in, counter)
	defer func() {
		if v := recover(); v != nil {
			if v == http.ErrAbortHandler {
				panic(v)
			}
			h.log.LogAttrs(r.Context(), slog.LevelError, "panic", slog.String("request_id", rid), slog.String("trace_id", tc.TraceID),
				slog.Any("panic", v), slog.String("stack", string(debug.Stack())))
			if !w.wrote {
				writeErrorIn(w, r, shape, gwerr.New(gwerr.Internal, "internal error"), rid)
			}
		}
	}()
	if h.cors(w, r, rid, shape) {
		return
	}
	if r.Method == http.MethodHead && in == nil && counter == nil {
		hw := &headWriter{ResponseWriter: w}
		get := r.WithContext(r.Context())
		get.Method = http.MethodGet
		h.route(hw, get, rid, tc, shape)
		hw.finish()
		return
	}
	h.route(w, r, rid, tc, shape)
}

// route serves a request by its path, answering errors before a client
// API's pipeline in shape (errorShape). HEAD requests for every path that
// is not a client API's arrive here as GET, through a headWriter.
func (h *Handler) route(w http.ResponseWriter, r *http.Request, rid string, tc traceid.Context, shape ingress.Ingress) {
	in, counter := h.ingresses[r.URL.Path], h.counters[r.URL.Path]
	if r.URL.Path == "/healthz" {
		if r.Method != http.MethodGet {
			methodNotAllowed(w, r, nil, rid, getMethods)
			return
		}
		h.health(w, r)
		return
	}
	caller, err := h.authenticate(r)
	if err != nil {
		writeErrorIn(w, r, shape, gwerr.As(err), rid)
		return
	}
	r = r.WithContext(exchange.WithCaller(r.Context(), caller))
	if in != nil || counter != nil {
		if r.Method != http.MethodPost {
			methodNotAllowed(w, r, shape, rid, http.MethodPost)
			return
		}
		if in != nil {
			h.serve(in, w, r, rid, tc)
		} else {
			h.count(counter, w, r, rid)
		}
		return
	}
	switch r.URL.Path {
	case "/v1/models", "/models":
		if r.Method != http.MethodGet {
			methodNotAllowed(w, r, shape, rid, getMethods)
			return
		}
		h.models(w, r, rid)
	default:
		if eh, ok := h.opts.Extra[r.URL.Path]; ok {
			eh.ServeHTTP(w, r)
			return
		}
		if m, ok := modelPath(r.URL.Path); ok && r.Method == http.MethodGet {
			h.model(w, r, rid, m)
			return
		}
		writeErrorIn(w, r, shape, gwerr.New(gwerr.NotFound, "unknown path %s", r.URL.Path).WithCode("unknown_url"), rid)
	}
}

// getMethods is the Allow header of the paths that answer GET (and HEAD).
const getMethods = "GET, HEAD"

// errorShape is the client API whose error shape the front uses before a
// request reaches its pipeline (authentication, methods, unknown paths,
// panics): the ingress of the path (or of its token-count path), else the
// Anthropic shape for a client that sends Anthropic's headers, else nil
// (the OpenAI shape).
func errorShape(r *http.Request, in, counter ingress.Ingress) ingress.Ingress {
	switch {
	case in != nil:
		return in
	case counter != nil:
		return counter
	case anthropicClient(r):
		return messages.Ingress{}
	}
	return nil
}

// anthropicClient reports whether a request comes from an Anthropic client
// (it sends anthropic-version, or its key as x-api-key).
func anthropicClient(r *http.Request) bool {
	return r.Header.Get("anthropic-version") != "" || r.Header.Get("x-api-key") != ""
}

// writeErrorIn writes e in shape's error format (nil: the OpenAI shape),
// with the request's trace id.
func writeErrorIn(w http.ResponseWriter, r *http.Request, shape ingress.Ingress, e *gwerr.Error, rid string) int {
	e.TraceID = traceid.From(r.Context())
	if shape == nil {
		return writeError(w, e, rid)
	}
	return shape.WriteError(w, &exchange.Request{ID: rid, TraceID: e.TraceID}, e)
}

func methodNotAllowed(w http.ResponseWriter, r *http.Request, shape ingress.Ingress, rid, allow string) {
	w.Header().Set("Allow", allow)
	e := gwerr.New(gwerr.InvalidRequest, "method not allowed; use %s", allow).WithCode(ingress.CodeMethodNotAllowed)
	writeErrorIn(w, r, shape, e, rid)
}

// requestID returns the client's x-request-id when it is short and plain,
// else a new random id.
func requestID(r *http.Request) string {
	if v := r.Header.Get("x-request-id"); len(v) >= 8 && len(v) <= 64 && plainID(v) {
		return v
	}
	var b [12]byte
	rand.Read(b[:])
	return "req_" + hex.EncodeToString(b[:])
}

func plainID(s string) bool {
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '-' || c == '_') {
			return false
		}
	}
	return true
}

// trackingWriter remembers whether the response was committed, so that a
// recovered panic does not try to write a second status line.
type trackingWriter struct {
	http.ResponseWriter
	wrote bool
}

func (t *trackingWriter) WriteHeader(code int) {
	t.wrote = true
	t.ResponseWriter.WriteHeader(code)
}

func (t *trackingWriter) Write(b []byte) (int, error) {
	t.wrote = true
	return t.ResponseWriter.Write(b)
}

// Unwrap lets http.ResponseController reach the underlying writer's Flush.
func (t *trackingWriter) Unwrap() http.ResponseWriter { return t.ResponseWriter }

// authenticate runs the Authenticator; without one every caller is anonymous.
func (h *Handler) authenticate(r *http.Request) (*exchange.Caller, error) {
	if h.opts.Authenticate == nil {
		return &exchange.Caller{}, nil
	}
	c, err := h.opts.Authenticate(r)
	if err != nil {
		return nil, err
	}
	if c == nil {
		return nil, gwerr.New(gwerr.Authentication, "invalid API key")
	}
	return c, nil
}

// writeError writes an error outside any client API's pipeline in the
// OpenAI error shape (its TraceID set by the caller).
func writeError(w http.ResponseWriter, e *gwerr.Error, rid string) int {
	return chat.WriteError(w, e, rid, ingress.Status(e))
}
