package failover

import (
	"errors"
	"time"

	"github.com/llmgw/llmgw/pkg/exchange"
	"github.com/llmgw/llmgw/pkg/provider"
)

// errHeadElapsed: the head buffer's duration ran out while a read was in
// flight.
var errHeadElapsed = errors.New("head buffer duration elapsed")

// read is the outcome of one stream read.
type read struct {
	ev  exchange.Event
	err error
}

// headReader reads an attempt's stream. Until a head window with a
// duration starts it reads in place; inside that window each read runs on
// a goroutine, so that the window's end commits the head on time even
// while the upstream sends nothing. The read still in flight then is
// pending: the session takes its result first.
type headReader struct {
	stream  provider.Stream
	window  *time.Timer
	pending chan read // a read in flight, when the window ended during it
}

// startWindow starts the head window's timer.
func (h *headReader) startWindow(d time.Duration) { h.window = time.NewTimer(d) }

// stopWindow stops the window's timer.
func (h *headReader) stopWindow() {
	if h.window != nil {
		h.window.Stop()
	}
}

// next reads the next event, or returns errHeadElapsed when the window
// ends first.
func (h *headReader) next() (exchange.Event, error) {
	if h.window == nil {
		return h.stream.Next()
	}
	ch := make(chan read, 1)
	go func() {
		ev, err := h.stream.Next() // used before the next read: no clone needed
		ch <- read{ev, err}
	}()
	select {
	case r := <-ch:
		return r.ev, r.err
	case <-h.window.C:
		h.pending = ch
		return exchange.Event{}, errHeadElapsed
	}
}

// settle waits for a read in flight (its context is cancelled by then), so
// that the stream is never closed under a read.
func (h *headReader) settle() {
	if h.pending != nil {
		<-h.pending
		h.pending = nil
	}
}
