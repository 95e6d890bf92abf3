// Package app wires the gateway together for its two ways of running: a
// plain HTTP server for local use, and a Lambda function behind a Function
// URL. The functions/ mains only parse flags and call it.
package app

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/llmgw/llmgw/pkg/config"
	"github.com/llmgw/llmgw/pkg/usage"
)

// LocalOptions configures a local run.
type LocalOptions struct {
	ConfigPath string // "" means the built-in demo config
	Addr       string // host:port
	Logger     *slog.Logger
	Store      StoreOptions
	// ReloadEvery is how often the config file is checked for changes
	// (default 2s): revoking a key is an edit, not a restart.
	ReloadEvery time.Duration

	// extra are components the gateway flushes and closes with its own
	// (tests).
	extra []Component
}

// OnLambda reports whether the process runs inside AWS Lambda.
func OnLambda() bool { return os.Getenv("AWS_LAMBDA_RUNTIME_API") != "" }

// LoadConfig loads a config file, or the demo config when path is empty.
func LoadConfig(path string) (*config.Config, error) {
	if path == "" {
		return config.Demo(), nil
	}
	return config.LoadFile(path)
}

// RunLocal serves the gateway with net/http until SIGINT/SIGTERM.
func RunLocal(ctx context.Context, o LocalOptions) error {
	log := o.Logger
	cfg, err := LoadConfig(o.ConfigPath)
	if err != nil {
		return err
	}
	addr, note, err := SafeAddr(o.Addr, len(cfg.Teams) > 0)
	if err != nil {
		return err
	}
	if note != "" {
		log.Warn(note)
	}
	o.Store.CreateTable = true // local mode: a fresh dynalite needs no other step
	st, where, err := OpenStore(ctx, o.Store)
	if err != nil {
		return err
	}
	spill := usage.NewFileSpill(usage.DefaultSpillFile(statePath(o.Store)))
	boundHost, _, _ := net.SplitHostPort(addr)
	g, err := Build(ctx, cfg, st, BuildOptions{Logger: log, AnonymousWithoutTeams: true, BoundHost: boundHost, Spill: spill,
		AsyncRecords: true, extra: o.extra})
	if err != nil {
		st.Close()
		return err
	}
	// The config source and the background loops, closed after the
	// components that hold data (Gateway.Shutdown).
	if o.ConfigPath != "" {
		g.run("config watcher", func(ctx context.Context) {
			watchConfig(ctx, o.ConfigPath, o.ReloadEvery, g.Reload, g.ReloadFailed, log)
		})
	}
	// Keep today's rollups fresh for GET /v1/usage and the cost table.
	g.run("rollup loop", func(ctx context.Context) { g.Roller.Loop(ctx, usage.Hourly, time.Minute) })
	// Give back budget leases left unused (other instances may need them).
	g.run("lease loop", func(ctx context.Context) { g.Limiter.Loop(ctx, time.Second) })
	// Drain usage records spilled while the store failed.
	g.run("spill drain", func(ctx context.Context) { drainLoop(ctx, g.Recorder, spillDrainEvery, log) })
	defer g.Close()
	h := g.Handler
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return err
	}
	// ReadTimeout bounds reading a request (headers and body: no
	// slow-loris holds a handler); responses may stream for as long as they
	// need.
	srv := &http.Server{Handler: h, ReadHeaderTimeout: 10 * time.Second, ReadTimeout: time.Minute, IdleTimeout: 120 * time.Second}
	source := o.ConfigPath
	if source == "" {
		source = "built-in demo config (fake providers, no keys needed)"
	}
	log.Info("gateway listening", slog.String("addr", "http://"+ln.Addr().String()),
		slog.String("config", source), slog.String("store", where), slog.Any("models", cfg.RouteNames()))
	ctx, stop := signal.NotifyContext(ctx, os.Interrupt, syscall.SIGTERM)
	defer stop()
	errc := make(chan error, 1)
	go func() { errc <- srv.Serve(ln) }()
	select {
	case err := <-errc:
		return err
	case <-ctx.Done():
	}
	// Stop taking requests and let those in flight finish; then the
	// deferred Close flushes and closes every component.
	shutdown, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := srv.Shutdown(shutdown); err != nil && !errors.Is(err, http.ErrServerClosed) {
		return err
	}
	return g.Close()
}

// spillDrainEvery is how often a local gateway drains its usage spill file.
const spillDrainEvery = 10 * time.Second

// drainLoop drains the Recorder's spill into the store every period until
// ctx ends; a drain that fails (the store is still down) is logged and
// retried.
func drainLoop(ctx context.Context, r *usage.Recorder, every time.Duration, log *slog.Logger) {
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		sum, err := r.Drain(ctx)
		switch {
		case err != nil && ctx.Err() == nil:
			log.Warn("usage spill not drained yet; retrying", slog.Int("drained", sum.Records), slog.String("error", err.Error()))
		case sum.Records > 0:
			log.Info("usage spill drained into the store", slog.Int("records", sum.Records))
		}
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

// SafeAddr keeps an unauthenticated gateway on loopback: when no caller
// authentication is configured, a non-loopback host is replaced by
// 127.0.0.1 and a note says so.
func SafeAddr(addr string, authConfigured bool) (string, string, error) {
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		return "", "", fmt.Errorf("-addr %q: %w", addr, err)
	}
	if authConfigured {
		return addr, "", nil
	}
	ip := net.ParseIP(host)
	if host == "localhost" || (ip != nil && ip.IsLoopback()) {
		return addr, "no team keys configured: serving on loopback only", nil
	}
	safe := net.JoinHostPort("127.0.0.1", port)
	return safe, fmt.Sprintf("no team keys configured: refusing to serve on %s without authentication; serving on %s (loopback only)", addr, safe), nil
}

// watchConfig hands the config file to reload (Gateway.Reload) when it
// changes. An invalid edit keeps the config in force, is logged and is
// told to failed (the status page's last failed reload).
func watchConfig(ctx context.Context, path string, every time.Duration, reload func(context.Context, *config.Config) error,
	failed func(error), log *slog.Logger) {
	if every <= 0 {
		every = 2 * time.Second
	}
	last, _ := os.Stat(path)
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		fi, err := os.Stat(path)
		if err != nil || (last != nil && fi.ModTime().Equal(last.ModTime()) && fi.Size() == last.Size()) {
			continue
		}
		last = fi
		cfg, err := config.LoadFile(path)
		if err != nil {
			failed(err) // Reload records its own failures
		} else {
			err = reload(ctx, cfg)
		}
		if err != nil {
			log.Error("config reload failed; keeping the config in force", slog.String("error", err.Error()))
			if failed != nil {
				failed(err)
			}
			continue
		}
		log.Info("config reloaded", slog.String("path", path), slog.Any("models", cfg.RouteNames()))
	}
}
