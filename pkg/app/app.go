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
	"github.com/llmgw/llmgw/pkg/server"
)

// LocalOptions configures a local run.
type LocalOptions struct {
	ConfigPath string // "" means the built-in demo config
	Addr       string // host:port
	Logger     *slog.Logger
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
	addr, note, err := SafeAddr(o.Addr, false)
	if err != nil {
		return err
	}
	if note != "" {
		log.Warn(note)
	}
	h, err := server.New(ctx, cfg, server.Options{Logger: log})
	if err != nil {
		return err
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return err
	}
	srv := &http.Server{Handler: h, ReadHeaderTimeout: 10 * time.Second, IdleTimeout: 120 * time.Second}
	source := o.ConfigPath
	if source == "" {
		source = "built-in demo config (fake providers, no keys needed)"
	}
	log.Info("gateway listening", slog.String("addr", "http://"+ln.Addr().String()),
		slog.String("config", source), slog.Any("models", cfg.RouteNames()))
	ctx, stop := signal.NotifyContext(ctx, os.Interrupt, syscall.SIGTERM)
	defer stop()
	errc := make(chan error, 1)
	go func() { errc <- srv.Serve(ln) }()
	select {
	case err := <-errc:
		return err
	case <-ctx.Done():
	}
	shutdown, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := srv.Shutdown(shutdown); err != nil && !errors.Is(err, http.ErrServerClosed) {
		return err
	}
	return nil
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
