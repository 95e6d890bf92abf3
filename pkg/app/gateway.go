package app

import (
	"context"
	"log/slog"
	"net/http"
	"sync"
	"time"

	"github.com/llmgw/llmgw/pkg/breaker"
	"github.com/llmgw/llmgw/pkg/cache"
	"github.com/llmgw/llmgw/pkg/config"
	"github.com/llmgw/llmgw/pkg/deployment"
	"github.com/llmgw/llmgw/pkg/exchange"
	"github.com/llmgw/llmgw/pkg/keyledger"
	"github.com/llmgw/llmgw/pkg/locality"
	"github.com/llmgw/llmgw/pkg/metrics"
	"github.com/llmgw/llmgw/pkg/moderation"
	"github.com/llmgw/llmgw/pkg/pacing"
	"github.com/llmgw/llmgw/pkg/responsestate"
	"github.com/llmgw/llmgw/pkg/retry"
	"github.com/llmgw/llmgw/pkg/server"
	"github.com/llmgw/llmgw/pkg/status"
	"github.com/llmgw/llmgw/pkg/store"
	"github.com/llmgw/llmgw/pkg/teams"
	"github.com/llmgw/llmgw/pkg/usage"
	"github.com/llmgw/llmgw/pkg/usage/asyncrecorder"
)

// Gateway is the assembled gateway: the HTTP handler over shared state in
// a store, team authentication and budgets, usage records and rollups. It
// owns the config in force (Config, Reload: live.go) and the stateful
// components it flushes and closes on the way out (Shutdown:
// components.go).
type Gateway struct {
	Handler *server.Handler
	Store   store.Store
	Breaker *breaker.Breaker
	Ledger  *keyledger.Ledger
	// Limiter enforces team limits with budget leases (given back by
	// Shutdown).
	Limiter *teams.Limiter
	// Recorder writes usage records (to its Spill when the store fails).
	Recorder *usage.Recorder
	// Budget is the retry budget, shared by every instance through the
	// store.
	Budget *retry.Budget
	Roller *usage.Roller

	obs     *observability          // traces, metrics, the status page's facts
	records *asyncrecorder.Recorder // nil: records written synchronously
	after   *afterResponse          // nil: post-response work runs in the handler
	log     *slog.Logger

	live   liveConfig
	reload sync.Mutex // serializes Reload
	// keyed is set when the gateway started with team keys: a reload to a
	// config without teams is then refused (ErrKeylessReload).
	keyed    bool
	cfgState configState

	mu          sync.Mutex
	components  []named // flushed and closed by Shutdown, in this order
	shutdown    sync.Once
	shutdownErr error
}

// BuildOptions are the parts that differ between local mode and Lambda.
type BuildOptions struct {
	Logger *slog.Logger
	// ResolveKey resolves provider key references (nil: environment only).
	ResolveKey func(ctx context.Context, ref config.KeyRef) (string, bool, error)
	// Metrics receives EMF metrics (nil: none; local mode).
	Metrics *metrics.EMF
	// AnonymousWithoutTeams serves everyone as "anonymous" while the config
	// has no teams (local mode only: the listener is then loopback-only).
	AnonymousWithoutTeams bool
	// BoundHost is the host (name or IP, no port) of the address a local
	// gateway listens on: besides localhost, 127.0.0.1 and [::1] the only
	// Host a keyless request may carry (teams.Authenticator.BoundHosts).
	BoundHost string
	// AsyncRecords writes usage records in the background, batched (local
	// mode), and runs all post-response work (settlement, log line,
	// record) off the handler: the request does not wait for the store,
	// and Close finishes that work and writes what is queued. Lambda leaves
	// it off: there the record must be durable before the handler returns.
	AsyncRecords bool
	// Spill keeps the usage records the store did not take (local: a
	// file next to the state; Lambda: the SQS queue). Nil: none, such
	// records are logged as lost.
	Spill usage.Spill
	// ExternalCORS leaves CORS to the platform (Lambda: the Function URL,
	// configured by the stack from the seeded server.cors); see
	// server.Front.ExternalCORS.
	ExternalCORS bool

	// ConfigPath is the SSM path of the config parameters, named by the
	// status page's runbook commands ("": status.DefaultConfigPath).
	ConfigPath string

	// extra are components added after the built-in ones (tests).
	extra []Component
}

// Build assembles the gateway over st.
func Build(ctx context.Context, cfg *config.Config, st store.Store, o BuildOptions) (*Gateway, error) {
	log := o.Logger
	if o.ResolveKey == nil {
		o.ResolveKey = keyledger.Env
	}
	g := &Gateway{Store: st, log: log, keyed: len(cfg.Teams) > 0}
	g.live.cur.Store(cfg)
	g.cfgState.applied(cfg, time.Now())
	current := g.live.Get

	g.Breaker = breaker.New(st, cfg.Breaker, breaker.Options{Logger: log,
		OnTransition: func(target string, _, to breaker.State, _ breaker.Snapshot) {
			if to == breaker.Open && o.Metrics != nil {
				o.Metrics.BreakerOpen(target)
			}
		}})
	// The server resolves the keys (skipping any that do not resolve) and
	// hands them to the ledger (SetKeys) on every config it applies.
	g.Ledger = keyledger.New(st, keyledger.Options{Logger: log})
	g.Budget = retry.NewSharedBudget(st, retry.SharedOptions{Logger: log})

	auth := teams.NewAuthenticator(current, log)
	auth.AnonymousWithoutTeams = o.AnonymousWithoutTeams
	if o.BoundHost != "" {
		auth.BoundHosts = []string{o.BoundHost}
	}
	limiter := teams.NewLimiter(st, current, log)
	g.Limiter = limiter
	recorder := usage.NewRecorder(st, current, log)
	recorder.Spill = o.Spill
	g.Recorder = recorder
	record := recorder.Record
	if o.AsyncRecords {
		g.records = asyncrecorder.New(recorder, asyncrecorder.Options{})
		record = g.records.Record
		g.after = newAfterResponse(afterResponseLimit)
	}
	var after func(func())
	if g.after != nil {
		after = g.after.Go
	}
	g.Roller = usage.NewRoller(st, current)
	g.Roller.Log = log
	g.obs = newObservability(cfg, current, log)
	front := server.Front{
		Authenticate: auth.Authenticate,
		Admit:        limiter.Admit,
		ExternalCORS: o.ExternalCORS,
		ConfigStatus: g.cfgState.get,
		Extra: map[string]http.Handler{
			"/v1/usage": usage.NewHandler(st, current, usage.HandlerOptions{Viewer: teams.UsageViewer, Roller: g.Roller}),
		},
	}
	g.obs.statusPaths(&front, status.Handler(g.obs.statusOptions(g, st, o.ConfigPath)))

	h, err := server.New(ctx, cfg, server.Options{
		Logger: log,
		Front:  front,
		Upstream: server.Upstream{
			ResolveKey: o.ResolveKey,
			OnKeyError: func(string, int, error) {
				if o.Metrics != nil {
					o.Metrics.Count(deployment.MetricProviderKeyErrors, 1)
				}
			},
			Breakers: g.Breaker,
			Keys:     g.Ledger,
			Budget:   g.Budget,
			// Responses state follows its account on every instance.
			ResponseOwners: responsestate.New(st, responsestate.Options{}),
			// Conversations keep their place on every instance.
			Places: locality.New(st, locality.Options{}),
		},
		Stages: server.Stages{
			Pacing:     pacing.Pacer{},
			Cache:      cache.New(st, cache.Options{Logger: log}),
			Moderation: &moderation.Moderator{Logger: log},
		},
		Reporting: server.Reporting{
			Cost:          usage.Cost,
			AfterResponse: after,
			Record: func(ctx context.Context, rec *exchange.Record) {
				record(ctx, rec)
				if o.Metrics != nil {
					o.Metrics.Request(rec)
					o.Metrics.Attempts(rec)
				}
			},
			Observe: g.obs.observe,
			Tap:     g.obs.tap(),
		},
	})
	if err != nil {
		return nil, err
	}
	g.Handler = h
	// The order Shutdown flushes them in: see Shutdown.
	if g.after != nil {
		g.add(part{name: "post-response runner", flush: g.after.Wait})
	}
	if g.records != nil {
		g.add(part{name: "usage record writer", flush: g.records.Close})
	}
	g.add(flushOnly("breaker", g.Breaker.Flush))
	g.add(flushOnly("retry budget", g.Budget.Flush))
	g.add(flushOnly("key ledger", g.Ledger.Wait))
	g.add(part{name: "team limiter", flush: g.Limiter.Flush})
	if c := g.obs.component(); c != nil {
		g.add(c)
	}
	for _, c := range o.extra {
		g.add(c)
	}
	return g, nil
}

func (g *Gateway) logger() *slog.Logger {
	if g.log != nil {
		return g.log
	}
	return slog.Default()
}
