// Package server is the gateway's HTTP front: the client APIs of
// pkg/ingress/registry (OpenAI Chat Completions, Responses and embeddings,
// Anthropic Messages and its count_tokens, the Bedrock Runtime operations
// at /model/{modelId}/... with GET /inference-profiles: bedrock.go),
// GET /v1/models (in OpenAI's
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
	"github.com/llmgw/llmgw/pkg/ingress/bedrock"
	"github.com/llmgw/llmgw/pkg/ingress/chat"
	"github.com/llmgw/llmgw/pkg/ingress/messages"
	ingressregistry "github.com/llmgw/llmgw/pkg/ingress/registry"
	"github.com/llmgw/llmgw/pkg/keyledger"
	"github.com/llmgw/llmgw/pkg/locality"
	providerregistry "github.com/llmgw/llmgw/pkg/provider/registry"
	"github.com/llmgw/llmgw/pkg/requestlog"
	"github.com/llmgw/llmgw/pkg/responsestate"
	"github.com/llmgw/llmgw/pkg/retry"
	"github.com/llmgw/llmgw/pkg/store/embedded"
	"github.com/llmgw/llmgw/pkg/traceid"
)

// Handler serves the gateway API. Build it with New; swap its config with
// Reload.
type Handler struct {
	log *slog.Logger
	now func() time.Time
	// The parts of Options, each used by its part of the handler.
	front  Front
	up     Upstream
	stages Stages
	report Reporting
	// current is the state derived from the config the app handed in
	// last (New, Reload).
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
	h := &Handler{log: opts.Logger, now: opts.Now, front: opts.Front, up: opts.Upstream, stages: opts.Stages,
		report: opts.Reporting, ingresses: map[string]ingress.Ingress{}, counters: map[string]ingress.Ingress{}}
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
	h.up.defaults(cfg, h.log, h.now)
	if err := h.Reload(ctx, cfg); err != nil {
		return nil, err
	}
	return h, nil
}

// defaults fills the nil parts of u with state of this process only:
// nothing to share it with, nothing to keep after exit.
func (u *Upstream) defaults(cfg *config.Config, log *slog.Logger, now func() time.Time) {
	if u.ResolveKey == nil {
		u.ResolveKey = keyledger.Env
	}
	if u.Budget == nil {
		u.Budget = retry.NewBudget()
		u.Budget.Now = now
	}
	if u.Breakers != nil && u.Keys != nil && u.ResponseOwners != nil && u.Places != nil {
		return
	}
	mem := embedded.OpenMemory(embedded.WithClock(now))
	if u.Places == nil {
		u.Places = locality.New(mem, locality.Options{Now: now})
	}
	if u.ResponseOwners == nil {
		u.ResponseOwners = responsestate.New(mem, responsestate.Options{Now: now})
	}
	if u.Breakers == nil {
		onOpen := u.OnBreakerOpen
		u.Breakers = breaker.New(mem, cfg.Breaker, breaker.Options{Now: now, Logger: log,
			OnTransition: func(target string, _, to breaker.State, _ breaker.Snapshot) {
				if to == breaker.Open && onOpen != nil {
					onOpen(target)
				}
			}})
	}
	if u.Keys == nil {
		u.Keys = keyledger.New(mem, keyledger.Options{Now: now, Logger: log})
	}
}

// Reload swaps in a new config: it resolves the config's key references
// and hands the keys to Upstream.Keys. In-flight requests finish on the old
// config; breaker and key state carry over. A key whose reference does not
// resolve is skipped (logged, reported to OnKeyError, listed in /healthz);
// the rest of the config serves.
func (h *Handler) Reload(ctx context.Context, cfg *config.Config) error {
	provs, err := providerregistry.Build(ctx, cfg)
	if err != nil {
		return err
	}
	res := keyledger.Resolve(ctx, cfg, h.up.ResolveKey, h.log, h.up.OnKeyError)
	h.up.Keys.SetKeys(res.Keys)
	rt := &runtimeState{cfg: cfg, unresolved: res.Unresolved, router: &failover.Router{
		Providers: provs, Breakers: h.up.Breakers, Keys: h.up.Keys, Budget: h.up.Budget, Now: h.now, Sleep: h.up.Sleep,
		Unresolved: res.Unresolved,
	}}
	if b, ok := h.up.Breakers.(interface{ SetSettings(config.BreakerSettings) }); ok {
		b.SetSettings(cfg.Breaker) // the shared breaker follows the config's rules
	}
	h.current.Store(rt)
	return nil
}

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
	rw.Header().Set("X-Request-Id", rid)
	rw.Header().Set("X-Gateway-Trace-Id", tc.TraceID)
	rw.Header().Set("Traceparent", tc.Traceparent())
	r = r.WithContext(traceid.WithSpan(traceid.With(r.Context(), tc.TraceID), tc))
	w := &trackingWriter{ResponseWriter: rw}
	in, counter := h.lookup(r.URL.Path)
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
	in, counter := h.lookup(r.URL.Path)
	if r.URL.Path == "/healthz" {
		if r.Method != http.MethodGet {
			methodNotAllowed(w, r, nil, rid, getMethods)
			return
		}
		h.health(w, r)
		return
	}
	if ph, ok := h.front.Public[r.URL.Path]; ok {
		ph.ServeHTTP(w, r)
		return
	}
	if e := checkAuthorization(shape, r); e != nil {
		writeErrorIn(w, r, shape, e, rid)
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
			h.count(counter, w, r, rid, tc)
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
	case bedrock.ProfilesPath:
		h.inferenceProfiles(w, r, rid, shape)
	default:
		if eh, ok := h.front.Extra[r.URL.Path]; ok {
			eh.ServeHTTP(w, r)
			return
		}
		if h.serveResponsesState(w, r, rid, tc) {
			return
		}
		if m, ok := modelPath(r.URL.Path); ok && r.Method == http.MethodGet {
			h.model(w, r, rid, m)
			return
		}
		writeErrorIn(w, r, shape, gwerr.New(gwerr.NotFound, "unknown path %s", clip(r.URL.Path)).WithCode("unknown_url"), rid)
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
	case ingressregistry.Shape(r.URL.Path) != nil:
		return ingressregistry.Shape(r.URL.Path)
	case anthropicClient(r):
		return messages.Ingress{}
	}
	return nil
}

// anthropicClient reports whether a request comes from an Anthropic client
// (it sends anthropic-version, or its key as x-api-key).
func anthropicClient(r *http.Request) bool {
	return r.Header.Get("Anthropic-Version") != "" || r.Header.Get("X-Api-Key") != ""
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
	if v := r.Header.Get("X-Request-Id"); len(v) >= 8 && len(v) <= 64 && plainID(v) {
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
	if h.front.Authenticate == nil {
		return &exchange.Caller{}, nil
	}
	c, err := h.front.Authenticate(r)
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
