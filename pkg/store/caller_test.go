package store

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

type manualClock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *manualClock) now() time.Time { c.mu.Lock(); defer c.mu.Unlock(); return c.t }
func (c *manualClock) advance(d time.Duration) {
	c.mu.Lock()
	c.t = c.t.Add(d)
	c.mu.Unlock()
}

// A call whose store ignores its context returns when the timeout fires;
// after a failure, blocking calls are skipped for Retry, background calls
// are still made, and the first success ends the outage.
func TestCallerBoundsCallsAndRemembersOutages(t *testing.T) {
	clk := &manualClock{t: time.Unix(1_700_000_000, 0)}
	var logs bytes.Buffer
	fire := make(chan struct{})
	var first atomic.Bool
	c := NewCaller(CallerOptions{Component: "test", Retry: time.Second, Now: clk.now,
		Logger: slog.New(slog.NewTextHandler(&logs, nil)),
		NewContext: func() (context.Context, context.CancelFunc) {
			// Only the first call's timeout fires (on close(fire)): later
			// calls must not race a context that is already done.
			ctx, cancel := context.WithCancel(context.Background())
			if !first.CompareAndSwap(false, true) {
				return ctx, cancel
			}
			go func() {
				select {
				case <-fire:
					cancel()
				case <-ctx.Done():
				}
			}()
			return ctx, cancel
		}})
	hang := make(chan struct{})
	defer close(hang)
	done := make(chan error, 1)
	go func() {
		done <- c.Do(true, "hang", func(context.Context) error { <-hang; return nil })
	}()
	select {
	case err := <-done:
		t.Fatalf("Do returned before its timeout fired: %v", err)
	case <-time.After(50 * time.Millisecond):
	}
	close(fire)
	if err := <-done; !errors.Is(err, context.Canceled) {
		t.Fatalf("Do = %v, want the context's error", err)
	}
	if c.Healthy() {
		t.Fatal("healthy right after a failed call")
	}
	called := false
	if err := c.Do(true, "skipped", func(context.Context) error { called = true; return nil }); err == nil || called {
		t.Fatalf("a blocking call was made during the outage (err %v)", err)
	}
	if err := c.Do(false, "background", func(context.Context) error { return ErrConflict }); err == nil {
		t.Fatal("the background call's answer was lost")
	}
	if !c.Healthy() || !strings.Contains(logs.String(), "reachable again") {
		t.Fatalf("a conflict is an answer from a working store: healthy %v, logs:\n%s", c.Healthy(), logs.String())
	}
	if c.Calls() != 2 || c.BlockingCalls() != 1 {
		t.Fatalf("calls %d, blocking %d; want 2 and 1", c.Calls(), c.BlockingCalls())
	}
}

func TestCallerLogsFailuresAtBoundedRate(t *testing.T) {
	clk := &manualClock{t: time.Unix(1_700_000_000, 0)}
	var logs bytes.Buffer
	c := NewCaller(CallerOptions{LogEvery: 10 * time.Second, Now: clk.now, Logger: slog.New(slog.NewTextHandler(&logs, nil))})
	boom := errors.New("boom")
	for range 60 {
		c.Do(false, "op", func(context.Context) error { return boom })
		clk.advance(time.Second)
	}
	if n := strings.Count(logs.String(), "store call failed"); n != 6 {
		t.Fatalf("%d failure lines over 60s at one per 10s, want 6:\n%s", n, logs.String())
	}
	if !strings.Contains(logs.String(), "suppressed=9") {
		t.Fatalf("suppressed count missing:\n%s", logs.String())
	}
}

func TestCallerWaitsForBackgroundWork(t *testing.T) {
	c := NewCaller(CallerOptions{})
	var mu sync.Mutex
	n := 0
	for range 10 {
		c.Go(func() {
			time.Sleep(time.Millisecond)
			mu.Lock()
			n++
			mu.Unlock()
		})
	}
	c.Wait()
	mu.Lock()
	defer mu.Unlock()
	if n != 10 {
		t.Fatalf("Wait returned with %d of 10 goroutines done", n)
	}
}

func TestMillisRoundTrip(t *testing.T) {
	at := time.Date(2026, 3, 1, 12, 0, 0, 123_456_789, time.UTC)
	if got := FromMillis(Millis(at)); !got.Equal(at.Truncate(time.Millisecond)) {
		t.Fatalf("round trip = %v", got)
	}
	if Millis(time.Time{}) != 0 || !FromMillis(0).IsZero() {
		t.Fatal("the zero time must be 0")
	}
}
