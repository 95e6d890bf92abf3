package app

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"
)

// Component is a stateful part of the gateway: it holds work or state the
// store does not have yet, or runs in the background. The app keeps every
// component of a Gateway in one list and shuts them all down the same way,
// whether the local server stops (SIGINT/SIGTERM, once the listener has
// drained) or the Lambda runtime sends SIGTERM (Gateway.Shutdown).
type Component interface {
	// Flush finishes the work the component has taken on and writes what
	// it holds to the store, within ctx. The component keeps serving
	// afterwards (a record that arrives later is written at once).
	Flush(ctx context.Context) error
	// Close stops the component's background work. Shutdown calls it once,
	// after every component's Flush.
	Close() error
}

// part is a Component made of two funcs (nil: nothing to do), named for
// the shutdown log.
type part struct {
	name  string
	flush func(ctx context.Context) error
	close func() error
}

func (p part) Flush(ctx context.Context) error {
	if p.flush == nil {
		return nil
	}
	return p.flush(ctx)
}

func (p part) Close() error {
	if p.close == nil {
		return nil
	}
	return p.close()
}

// flushOnly adapts a Flush without context or error (the breaker's, the
// retry budget's) to a part.
func flushOnly(name string, flush func()) part {
	return part{name: name, flush: func(context.Context) error { flush(); return nil }}
}

// named is a Component with the name its shutdown errors carry.
type named struct {
	name string
	Component
}

func nameOf(c Component) string {
	if p, ok := c.(part); ok {
		return p.name
	}
	return fmt.Sprintf("%T", c)
}

// add appends c to the components Shutdown flushes and closes, after
// those added before it.
func (g *Gateway) add(c Component) {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.components = append(g.components, named{nameOf(c), c})
}

// run starts loop in the background as a component: it runs until
// Shutdown closes it (Close cancels its context and waits for it to
// return).
func (g *Gateway) run(name string, loop func(ctx context.Context)) {
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	wg.Go(func() { loop(ctx) })
	g.add(part{name: name, close: func() error { cancel(); wg.Wait(); return nil }})
}

// Components lists the names of the gateway's components in the order
// Shutdown flushes and closes them (for the shutdown log and tests).
func (g *Gateway) Components() []string {
	g.mu.Lock()
	defer g.mu.Unlock()
	names := make([]string, len(g.components))
	for i, c := range g.components {
		names[i] = c.name
	}
	return names
}

// Shutdown flushes every component, then closes every component, both in
// the order they were added, then closes the store. Build adds them in the
// order the data flows: the post-response runner (its work settles
// budgets and produces the usage records), the usage record writer, the
// breaker, the retry budget, the key ledger, the team limiter (its leases
// given back); then what RunLocal or the Lambda path add: the config
// source (file watcher, SSM refresher) and the background loops (rollups,
// idle leases, spill drain), which hold nothing to flush and stop on
// Close. A failed or late step is logged and the rest still run; the end
// is logged ("gateway shut down", with the components in order). Shutdown
// runs once; later calls return its result.
//
// On Lambda nothing but the usage record must be written before a
// handler returns (the record is written synchronously for that: the
// environment may freeze right after); everything else is written in the
// background as requests go, and by Shutdown on the runtime's SIGTERM.
func (g *Gateway) Shutdown(ctx context.Context) error {
	g.shutdown.Do(func() {
		g.mu.Lock()
		cs := append([]named(nil), g.components...)
		g.mu.Unlock()
		var errs []error
		fail := func(c named, step string, err error) {
			g.logger().Error("component not "+step+" at shutdown", slog.String("component", c.name), slog.Any("error", err))
			errs = append(errs, fmt.Errorf("%s: %s: %w", c.name, step, err))
		}
		for _, c := range cs {
			if err := c.Flush(ctx); err != nil {
				fail(c, "flushed", err)
			}
		}
		for _, c := range cs {
			if err := c.Close(); err != nil {
				fail(c, "closed", err)
			}
		}
		if err := g.Store.Close(); err != nil {
			errs = append(errs, fmt.Errorf("store: close: %w", err))
		}
		g.shutdownErr = errors.Join(errs...)
		names := make([]string, len(cs))
		for i, c := range cs {
			names[i] = c.name
		}
		g.logger().Info("gateway shut down", slog.Any("components", names), slog.Int("failed_steps", len(errs)))
	})
	return g.shutdownErr
}

// closeTimeout bounds Close's Shutdown (local mode, tests).
const closeTimeout = time.Minute

// Close is Shutdown within closeTimeout.
func (g *Gateway) Close() error {
	ctx, cancel := context.WithTimeout(context.Background(), closeTimeout)
	defer cancel()
	return g.Shutdown(ctx)
}
