package telemetry

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"sync"
	"sync/atomic"
	"time"

	tracepb "go.opentelemetry.io/proto/otlp/trace/v1"
	"google.golang.org/protobuf/proto"
)

// maxBatch is the most spans one export request carries.
const maxBatch = 512

// exporter sends spans to an OTLP/HTTP endpoint from a background loop: a
// request only ever puts its spans on a bounded queue, and a full queue
// drops them (counted), so export never slows or fails a request.
type exporter struct {
	url      string
	client   *http.Client
	resource *resourceSpans
	every    time.Duration

	queue   chan *tracepb.Span
	flushes chan chan struct{}
	stop    chan struct{}
	done    chan struct{}
	once    sync.Once

	dropped  atomic.Int64 // spans refused by a full queue
	failed   atomic.Int64 // spans lost to a failed export
	exported atomic.Int64
	onError  func(error)
}

// resourceSpans is what every export request of this process starts with.
type resourceSpans = tracepb.ResourceSpans

func newExporter(url string, client *http.Client, res *tracepb.ResourceSpans, queue int, every time.Duration, onError func(error)) *exporter {
	e := &exporter{url: url, client: client, resource: res, every: every, queue: make(chan *tracepb.Span, queue),
		flushes: make(chan chan struct{}), stop: make(chan struct{}), done: make(chan struct{}), onError: onError}
	go e.loop()
	return e
}

// enqueue offers spans to the queue without ever waiting: a span that does
// not fit is dropped and counted.
func (e *exporter) enqueue(spans ...*tracepb.Span) {
	for _, s := range spans {
		select {
		case e.queue <- s:
		default:
			e.dropped.Add(1)
		}
	}
}

func (e *exporter) loop() {
	defer close(e.done)
	t := time.NewTicker(e.every)
	defer t.Stop()
	var batch []*tracepb.Span
	send := func() {
		if len(batch) > 0 {
			e.post(batch)
			batch = nil
		}
	}
	drain := func() {
		for {
			select {
			case s := <-e.queue:
				batch = append(batch, s)
				if len(batch) >= maxBatch {
					send()
				}
			default:
				send()
				return
			}
		}
	}
	for {
		select {
		case s := <-e.queue:
			batch = append(batch, s)
			if len(batch) >= maxBatch {
				send()
			}
		case <-t.C:
			send()
		case ack := <-e.flushes:
			drain()
			close(ack)
		case <-e.stop:
			drain()
			return
		}
	}
}

// post exports one batch as an ExportTraceServiceRequest. TracesData has
// the same wire form (field 1: repeated ResourceSpans), so the collector
// service's gRPC types need not be linked.
func (e *exporter) post(batch []*tracepb.Span) {
	rs := proto.Clone(e.resource).(*tracepb.ResourceSpans)
	rs.ScopeSpans = []*tracepb.ScopeSpans{{Scope: scope(), Spans: batch}}
	body, err := proto.Marshal(&tracepb.TracesData{ResourceSpans: []*tracepb.ResourceSpans{rs}})
	if err == nil {
		err = postOTLP(e.client, e.url, body)
	}
	if err != nil {
		e.failed.Add(int64(len(batch)))
		if e.onError != nil {
			e.onError(err)
		}
		return
	}
	e.exported.Add(int64(len(batch)))
}

// postOTLP posts one OTLP/HTTP protobuf body.
func postOTLP(client *http.Client, url string, body []byte) error {
	ctx, cancel := context.WithTimeout(context.Background(), exportTimeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, bytes.NewReader(body))
	if err != nil {
		return err
	}
	req.Header.Set("Content-Type", "application/x-protobuf")
	resp, err := client.Do(req)
	if err != nil {
		return fmt.Errorf("otlp export to %s: %w", req.URL.Redacted(), err)
	}
	io.Copy(io.Discard, io.LimitReader(resp.Body, 64<<10))
	resp.Body.Close()
	if resp.StatusCode/100 != 2 {
		return fmt.Errorf("otlp export to %s: status %d", req.URL.Redacted(), resp.StatusCode)
	}
	return nil
}

// exportTimeout bounds one export request.
const exportTimeout = 5 * time.Second

// flush exports what is queued, waiting at most until ctx ends.
func (e *exporter) flush(ctx context.Context) error {
	ack := make(chan struct{})
	select {
	case e.flushes <- ack:
	case <-e.done:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
	select {
	case <-ack:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// close exports what is queued and stops the loop.
func (e *exporter) close() {
	e.once.Do(func() { close(e.stop) })
	<-e.done
}
