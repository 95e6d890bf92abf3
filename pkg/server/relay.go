package server

import (
	"errors"
	"io"
	"net/http"
	"os"
	"strconv"
	"time"

	"github.com/llmgw/llmgw/pkg/exchange"
	"github.com/llmgw/llmgw/pkg/failover"
	"github.com/llmgw/llmgw/pkg/gwerr"
	"github.com/llmgw/llmgw/pkg/stage"
)

// The failover session tells the relay when its head is still in memory.
var _ stage.Buffered = (*failover.Session)(nil)

// relay writes a committed response through the ingress's encoder: the same
// loop for streams and whole bodies, whatever the source (a failover
// session, a cache replay, a pacer or a hold around one of them). A stream
// is written event by event; a non-streaming body is sent whole at the end,
// with a Content-Length, so the client has its answer without waiting for
// the record to be written.
//
// Back-pressure: the loop asks the source for the next event only after the
// previous one was written, so between the upstream and the client there is
// at most one event, one encoded frame and the sockets' own buffers (a pacer
// adds its own bounded buffer). A client that reads slower than the model
// generates therefore slows the gateway's reads of the upstream (TCP
// back-pressure), and a client that reads nothing for
// server.client_idle_timeout is dropped (see clientWriter).
func (x *exchangeState) relay(src stage.Source) {
	enc := x.in.NewEncoder(x.req)
	x.setGatewayHeaders()
	x.noteDropped()
	h := x.w.Header()
	h.Set("Content-Type", enc.ContentType())
	cw := newClientWriter(x.w, x.rt.cfg.Server.ClientIdleTimeout.D())
	defer cw.close()
	stream := x.req.Stream
	if stream {
		h.Set("Cache-Control", "no-cache")
		h.Set("X-Accel-Buffering", "no")
		x.w.WriteHeader(http.StatusOK)
		x.rec.Status = http.StatusOK
		x.rec.TTFTMillis = exchange.Millis(x.h.now().Sub(x.req.Start))
	}
	// buf holds encoded frames not yet written: while the source has its
	// next event at hand (stage.Buffered), frames are written together.
	var buf []byte
	buffered, _ := src.(stage.Buffered)
	tap := x.tap()
	ev, err := src.Next()
	for ; err == nil; ev, err = src.Next() {
		if ev.Finish != "" {
			x.rec.NoteFinish(ev.Finish)
		}
		if tap != nil {
			tap(&ev)
		}
		if !stream {
			enc.Event(nil, &ev)
			continue
		}
		buf = enc.Event(buf, &ev)
		if buffered != nil && buffered.Buffered() {
			continue
		}
		if werr := cw.write(buf); werr != nil {
			err = gwerr.ErrClientGone
			break
		}
		buf = buf[:0]
	}
	src.End(err)
	u := src.Usage()
	x.rec.SetUsage(u)
	x.end = err
	switch {
	case err == io.EOF && !stream:
		body := enc.End(nil, u)
		h.Set("Content-Length", strconv.Itoa(len(body)))
		x.w.WriteHeader(http.StatusOK)
		x.rec.Status = http.StatusOK
		x.rec.TTFTMillis = exchange.Millis(x.h.now().Sub(x.req.Start))
		cw.write(body)
	case err == io.EOF:
		cw.write(enc.End(buf, u))
	case errors.Is(err, gwerr.ErrClientGone):
		x.rec.Outcome = "client_cancelled"
	case !stream:
		x.fail(gwerr.As(err))
	default:
		ge := gwerr.As(err)
		ge.TraceID = x.req.TraceID
		x.rec.Outcome = string(ge.Category)
		cw.write(enc.Fail(buf, ge, x.req.ID, u))
	}
	if cw.dropped {
		x.rec.Outcome, x.rec.ClientDropped = "client_cancelled", true
	}
}

// clientWriter writes to the client with a bound on how long one write may
// block. Where the ResponseWriter supports write deadlines (net/http, via
// http.ResponseController.SetWriteDeadline) every write gets one; where it
// does not (lambdaurl's pipe), writes run on a helper goroutine and the
// relay stops waiting after the timeout. Either way a client that stops
// reading is dropped after the timeout: the relay ends, the upstream is
// cancelled, and the usage record is written before the handler returns.
type clientWriter struct {
	w       http.ResponseWriter
	rc      *http.ResponseController
	timeout time.Duration
	mode    writeMode
	setAt   time.Time // when the write deadline was last set (modeDeadline)
	async   *asyncWriter
	// dropped is set when a write stayed blocked past the timeout.
	dropped bool
}

type writeMode uint8

const (
	modeUnknown writeMode = iota
	modeDeadline
	modeAsync
)

// errStalled is the error of a write that stayed blocked past the timeout.
var errStalled = errors.New("client stopped reading")

func newClientWriter(w http.ResponseWriter, timeout time.Duration) *clientWriter {
	if timeout <= 0 {
		timeout = 30 * time.Second
	}
	return &clientWriter{w: w, rc: http.NewResponseController(w), timeout: timeout}
}

// write sends one piece and flushes it. lambdaurl's writer cannot flush and
// does not need to (every write streams), so ErrNotSupported is fine.
func (c *clientWriter) write(b []byte) error {
	if len(b) == 0 {
		return nil
	}
	if c.dropped {
		return errStalled
	}
	// Wall-clock deadlines: the handler's clock (Options.Now) may be a
	// test's. The deadline is moved only when it was set more than
	// timeout/16 ago (not on every frame of a fast stream: each move is a
	// runtime timer update), so every write still has at least 15/16 of
	// the timeout.
	now := time.Now()
	if c.mode == modeUnknown || c.mode == modeDeadline && now.Sub(c.setAt) >= c.timeout/16 {
		if err := c.rc.SetWriteDeadline(now.Add(c.timeout)); err == nil {
			c.mode, c.setAt = modeDeadline, now
		} else if c.mode == modeUnknown {
			c.mode, c.async = modeAsync, newAsyncWriter(c.w, c.rc)
		}
	}
	if c.mode == modeAsync {
		err := c.async.write(b, c.timeout)
		if err == errStalled {
			c.dropped = true
		}
		return err
	}
	start := time.Now()
	err := writeFlush(c.w, c.rc, b)
	if err != nil && (errors.Is(err, os.ErrDeadlineExceeded) || time.Since(start) >= c.timeout) {
		c.dropped = true
	}
	return err
}

// close clears the write deadline (net/http keeps it on a kept-alive
// connection otherwise) and stops the helper goroutine.
func (c *clientWriter) close() {
	switch c.mode {
	case modeDeadline:
		if !c.dropped {
			c.rc.SetWriteDeadline(time.Time{})
		}
	case modeAsync:
		c.async.close()
	}
}

func writeFlush(w http.ResponseWriter, rc *http.ResponseController, b []byte) error {
	if _, err := w.Write(b); err != nil {
		return err
	}
	if err := rc.Flush(); err != nil && !errors.Is(err, http.ErrNotSupported) {
		return err
	}
	return nil
}

// asyncWriter runs writes on one helper goroutine so that the relay can stop
// waiting for a write that never returns (a writer without deadlines whose
// reader stopped). A write abandoned that way stays with the goroutine until
// the platform closes the stream; nothing else is written after it.
type asyncWriter struct {
	in    chan []byte
	out   chan error
	timer *time.Timer
	stuck bool
}

func newAsyncWriter(w http.ResponseWriter, rc *http.ResponseController) *asyncWriter {
	a := &asyncWriter{in: make(chan []byte), out: make(chan error, 1), timer: time.NewTimer(time.Hour)}
	a.timer.Stop()
	go func() {
		for b := range a.in {
			a.out <- writeFlush(w, rc, b)
		}
	}()
	return a
}

func (a *asyncWriter) write(b []byte, timeout time.Duration) error {
	if a.stuck {
		return errStalled
	}
	a.in <- b
	a.timer.Reset(timeout)
	select {
	case err := <-a.out:
		a.timer.Stop()
		return err
	case <-a.timer.C:
		a.stuck = true
		return errStalled
	}
}

func (a *asyncWriter) close() {
	a.timer.Stop()
	close(a.in)
}
