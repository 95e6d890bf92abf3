// Package asyncrecorder takes usage-record writes off the request path of
// the local server: a decorator around usage.Recorder (or anything with
// the same two methods) that queues each record on a bounded channel and
// returns, while one goroutine drains the queue and writes what it finds
// as one batch (one store transaction for the embedded store).
//
// No record is dropped: when the queue is full, Record writes
// synchronously (the caller waits, exactly as without the decorator), and
// Close writes everything queued before it returns. The bound is an orderly
// shutdown (SIGTERM, SIGINT, app.RunLocal returning): a process killed
// with SIGKILL, or one that crashes, loses the records still queued (at
// most the queue size plus one batch). On Lambda the record must be
// durable before the handler returns, so Lambda mode does not use this
// package.
package asyncrecorder

import (
	"context"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/llmgw/llmgw/pkg/exchange"
)

// Writer is what the Recorder decorates: usage.Recorder's Record (one
// record, synchronously; it logs failures) and RecordBatch (many, in one
// store transaction where the store can).
type Writer interface {
	Record(ctx context.Context, rec *exchange.Record)
	RecordBatch(ctx context.Context, recs []*exchange.Record)
}

// Defaults of [Options].
const (
	// DefaultQueue is how many records may wait to be written.
	DefaultQueue = 4096
	// DefaultMaxBatch is the most records written in one transaction.
	DefaultMaxBatch = 256
	// DefaultTimeout bounds one batch write.
	DefaultTimeout = 30 * time.Second
	// DefaultLinger is how long the writer waits for more records after
	// the first of a batch.
	DefaultLinger = 5 * time.Millisecond
)

// Options configures a [Recorder]; zero fields take the defaults.
type Options struct {
	// Queue is how many records may wait (DefaultQueue).
	Queue int
	// MaxBatch is the most records written in one batch (DefaultMaxBatch).
	MaxBatch int
	// Timeout bounds one batch write (DefaultTimeout).
	Timeout time.Duration
	// Linger is how long the writer waits for more records once a batch
	// has its first one (DefaultLinger; negative: not at all). At a steady
	// trickle of requests it turns one store transaction per record into
	// one per Linger; a record is written at most Linger later, and Close
	// does not wait for it.
	Linger time.Duration
}

// Recorder queues records for a background writer. Create it with [New];
// its Record has the signature of server.Options.Record. Close it to write
// what is queued.
type Recorder struct {
	w      Writer
	opts   Options
	ch     chan *exchange.Record
	done   chan struct{}
	mu     sync.RWMutex // held (read) while sending on ch; (write) to close it
	closed bool
	syncs  atomic.Int64
}

// New starts the background writer of w.
func New(w Writer, o Options) *Recorder {
	if o.Queue <= 0 {
		o.Queue = DefaultQueue
	}
	if o.MaxBatch <= 0 {
		o.MaxBatch = DefaultMaxBatch
	}
	if o.Timeout <= 0 {
		o.Timeout = DefaultTimeout
	}
	if o.Linger == 0 {
		o.Linger = DefaultLinger
	}
	r := &Recorder{w: w, opts: o, ch: make(chan *exchange.Record, o.Queue), done: make(chan struct{})}
	go r.loop()
	return r
}

// Record queues a copy of rec (the caller may reuse rec once it returns).
// When the queue is full, or the Recorder is closed, it writes the record
// synchronously instead: a record is never dropped.
func (r *Recorder) Record(ctx context.Context, rec *exchange.Record) {
	cp := clone(rec)
	r.mu.RLock()
	if !r.closed {
		select {
		case r.ch <- cp:
			r.mu.RUnlock()
			return
		default:
		}
	}
	r.mu.RUnlock()
	r.syncs.Add(1)
	r.w.Record(ctx, cp)
}

// Synchronous reports how many records Record wrote synchronously because
// the queue was full or the Recorder closed.
func (r *Recorder) Synchronous() int64 { return r.syncs.Load() }

// Close stops queueing (later records are written synchronously) and waits
// until every queued record is written, or ctx ends (then it returns ctx's
// error and the writer goes on in the background). It may be called more
// than once.
func (r *Recorder) Close(ctx context.Context) error {
	r.mu.Lock()
	if !r.closed {
		r.closed = true
		close(r.ch)
	}
	r.mu.Unlock()
	select {
	case <-r.done:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// loop writes batches until the channel is closed and drained.
func (r *Recorder) loop() {
	defer close(r.done)
	batch := make([]*exchange.Record, 0, r.opts.MaxBatch)
	linger := time.NewTimer(time.Hour)
	linger.Stop()
	defer linger.Stop()
	for rec := range r.ch {
		batch = append(batch[:0], rec)
		if r.opts.Linger > 0 {
			linger.Reset(r.opts.Linger)
		}
	fill:
		for len(batch) < r.opts.MaxBatch {
			var next *exchange.Record
			var ok bool
			if r.opts.Linger > 0 {
				select { // more records, until the linger ends
				case next, ok = <-r.ch:
				case <-linger.C:
					break fill
				}
			} else {
				select { // what is queued already
				case next, ok = <-r.ch:
				default:
					break fill
				}
			}
			if !ok {
				break fill // closed: write what there is at once
			}
			batch = append(batch, next)
		}
		linger.Stop()
		ctx, cancel := context.WithTimeout(context.Background(), r.opts.Timeout)
		r.w.RecordBatch(ctx, batch)
		cancel()
		clear(batch)
	}
}

// clone copies rec and the slices it shares with the request.
func clone(rec *exchange.Record) *exchange.Record {
	cp := *rec
	cp.Attempts = slices.Clone(rec.Attempts)
	cp.DroppedFeatures = slices.Clone(rec.DroppedFeatures)
	return &cp
}
