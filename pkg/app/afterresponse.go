package app

import (
	"context"
	"sync"
)

// afterResponse runs the work that follows a local response (settlement,
// log line, usage record: server.Reporting.AfterResponse) on background
// goroutines, so that a kept-alive connection reads its next request at
// once. At most limit pieces run at once; beyond that the handler runs the
// work itself, so a slow store slows requests down instead of piling work
// up without bound.
type afterResponse struct {
	sem chan struct{}
	wg  sync.WaitGroup
}

// afterResponseLimit bounds the background work of one local gateway.
const afterResponseLimit = 1024

func newAfterResponse(limit int) *afterResponse {
	return &afterResponse{sem: make(chan struct{}, limit)}
}

// Go runs work in the background, or inline when limit pieces already run.
func (a *afterResponse) Go(work func()) {
	select {
	case a.sem <- struct{}{}:
	default:
		work()
		return
	}
	a.wg.Add(1)
	go func() {
		defer func() { <-a.sem; a.wg.Done() }()
		work()
	}()
}

// Wait waits until every piece started has finished, or ctx ends.
func (a *afterResponse) Wait(ctx context.Context) error {
	done := make(chan struct{})
	go func() { a.wg.Wait(); close(done) }()
	select {
	case <-done:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}
