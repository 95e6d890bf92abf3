package app

import (
	"context"
	"sync/atomic"
	"testing"
	"time"
)

// TestAfterResponseIsBoundedAndWaited: work beyond the limit runs inline
// (the caller waits: back-pressure), and Wait returns only once every
// background piece has finished.
func TestAfterResponseIsBoundedAndWaited(t *testing.T) {
	a := newAfterResponse(2)
	release := make(chan struct{})
	var done atomic.Int32
	for i := 0; i < 2; i++ {
		a.Go(func() { <-release; done.Add(1) })
	}
	inline := false
	a.Go(func() { inline = true }) // both slots are busy
	if !inline {
		t.Fatal("work beyond the limit did not run inline")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Millisecond)
	if err := a.Wait(ctx); err == nil {
		t.Fatal("Wait returned while work was still running")
	}
	cancel()
	close(release)
	if err := a.Wait(context.Background()); err != nil || done.Load() != 2 {
		t.Fatalf("Wait: %v, %d pieces done", err, done.Load())
	}
}
