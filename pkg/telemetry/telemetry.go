// Package telemetry exports the gateway's OpenTelemetry traces and GenAI
// metrics over OTLP (HTTP/protobuf), built on the official OTLP protobuf
// types rather than the OTel SDK: one server span per request and one
// client span per upstream attempt, named and attributed by the GenAI
// semantic conventions (plus the gateway's llmgw.* attributes, never a
// key), and the histograms gen_ai.client.token.usage,
// gen_ai.client.operation.duration and
// gen_ai.client.operation.time_to_first_chunk per route, target and team.
//
// It is off unless the config's telemetry.otlp_endpoint is set. A request
// only hands its finished record to Observe, which builds the spans and
// puts them on a bounded queue without waiting; a background loop exports
// them in batches. A full queue drops spans (Stats counts them), and a
// failed export loses its batch: export never slows or fails a request.
// Only the gateway command links this package (pkg/app); the rollup does
// not.
package telemetry

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"net/http"
	"os"
	"strings"
	"sync"
	"time"

	commonpb "go.opentelemetry.io/proto/otlp/common/v1"
	metricspb "go.opentelemetry.io/proto/otlp/metrics/v1"
	resourcepb "go.opentelemetry.io/proto/otlp/resource/v1"
	tracepb "go.opentelemetry.io/proto/otlp/trace/v1"
	"google.golang.org/protobuf/proto"

	"github.com/llmgw/llmgw/pkg/config"
	"github.com/llmgw/llmgw/pkg/exchange"
	"github.com/llmgw/llmgw/pkg/traceid"
)

// Options configure a Telemetry.
type Options struct {
	// Config returns the config in force: providers (for
	// gen_ai.provider.name and server.address), routes (trace_content) and
	// the bounds of the metrics' route, target and team values. Required.
	Config func() *config.Config
	// Client sends the exports (nil: an http.Client that follows no
	// redirects).
	Client *http.Client
	// OnError, when set, is told of each failed export (a log line).
	OnError func(error)
	// Now is the clock (nil: time.Now).
	Now func() time.Time
	// Getenv reads the resource attributes of the platform (nil:
	// os.Getenv): AWS_LAMBDA_FUNCTION_NAME, AWS_REGION.
	Getenv func(string) string
}

// Telemetry builds and exports one process's traces and metrics.
type Telemetry struct {
	o        Options
	settings config.TelemetrySettings
	traces   *exporter
	meter    *meter
	resource *resourcepb.Resource

	taps sync.Map // *exchange.Request -> *textTap, opted-in routes only

	stop chan struct{}
	done chan struct{}
	once sync.Once
}

// Stats are the export counters.
type Stats struct {
	// Dropped counts spans refused by the full queue.
	Dropped int64 `json:"dropped_spans"`
	// Failed counts spans lost with a failed export.
	Failed int64 `json:"failed_spans"`
	// Exported counts spans the endpoint accepted.
	Exported int64 `json:"exported_spans"`
}

// New starts the export of s (the config's telemetry section). It returns
// nil when s turns neither traces nor metrics on: every method of a nil
// *Telemetry does nothing.
func New(s config.TelemetrySettings, o Options) *Telemetry {
	if !s.TracesOn() && !s.MetricsOn() {
		return nil
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	if o.Getenv == nil {
		o.Getenv = os.Getenv
	}
	if o.Client == nil {
		o.Client = &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	}
	if s.QueueSize <= 0 {
		s.QueueSize = config.DefaultTelemetryQueue
	}
	if s.ExportInterval <= 0 {
		s.ExportInterval = config.Duration(config.DefaultTelemetryInterval)
	}
	if s.ServiceName == "" {
		s.ServiceName = config.DefaultServiceName
	}
	t := &Telemetry{o: o, settings: s, resource: resourceOf(s, o.Getenv), stop: make(chan struct{}), done: make(chan struct{})}
	base := strings.TrimRight(s.OTLPEndpoint, "/")
	if s.TracesOn() {
		t.traces = newExporter(base+"/v1/traces", o.Client, &tracepb.ResourceSpans{Resource: t.resource}, s.QueueSize, s.ExportInterval.D(), o.OnError)
	}
	if s.MetricsOn() {
		t.meter = newMeter(o.Now())
		go t.metricsLoop(base + "/v1/metrics")
	} else {
		close(t.done)
	}
	return t
}

func resourceOf(s config.TelemetrySettings, getenv func(string) string) *resourcepb.Resource {
	var id [8]byte
	rand.Read(id[:])
	attrs := []*commonpb.KeyValue{str("service.name", s.ServiceName), str("service.instance.id", hex.EncodeToString(id[:])),
		str("telemetry.sdk.name", "llmgw"), str("telemetry.sdk.language", "go")}
	if fn := getenv("AWS_LAMBDA_FUNCTION_NAME"); fn != "" {
		attrs = append(attrs, str("cloud.provider", "aws"), str("cloud.platform", "aws_lambda"), str("faas.name", fn))
		if r := getenv("AWS_REGION"); r != "" {
			attrs = append(attrs, str("cloud.region", r))
		}
	}
	return &resourcepb.Resource{Attributes: attrs}
}

// Tap returns the collector of a request's output text when its route
// exports content (trace_content) and traces are on; nil otherwise (the
// server.Reporting.Tap hook). Observe hands the text to the span and
// forgets it.
func (t *Telemetry) Tap(req *exchange.Request) func(ev *exchange.Event) {
	if t == nil || t.traces == nil || req == nil {
		return nil
	}
	cfg := t.o.Config()
	if r := cfg.Routes[req.Route]; r == nil || !r.TraceContent {
		return nil
	}
	tap := &textTap{}
	t.taps.Store(req, tap)
	return tap.add
}

// Observe records one finished request (the server.Reporting.Observe
// hook): its spans go on the export queue (unless the caller's
// traceparent or X-Ray header said not sampled), its measurements into the metrics. It
// never blocks.
func (t *Telemetry) Observe(ctx context.Context, req *exchange.Request, rec *exchange.Record) {
	if t == nil {
		return
	}
	var tap *textTap
	if v, ok := t.taps.LoadAndDelete(req); ok {
		tap = v.(*textTap)
	}
	cfg := t.o.Config()
	if t.meter != nil {
		t.meter.observe(cfg, rec)
	}
	if t.traces == nil {
		return
	}
	tc, ok := traceid.SpanFrom(ctx)
	if !ok {
		tc = traceid.Context{TraceID: rec.TraceID, Sampled: true}
	}
	if !tc.Sampled && tc.Source != "lambda" {
		// The caller decided. The Lambda invocation's own X-Ray header says
		// Sampled=0 whenever the function's X-Ray tracing is not active: it
		// is no caller's decision, and the export is what was asked for.
		return
	}
	var content *Content
	if tap != nil {
		content = contentOf(req, tap.b.String(), rec.FinishReasons)
	}
	t.traces.enqueue(Spans(cfg, tc, req, rec, content)...)
}

// Stats returns the span export counters (zero when traces are off).
func (t *Telemetry) Stats() Stats {
	if t == nil || t.traces == nil {
		return Stats{}
	}
	return Stats{Dropped: t.traces.dropped.Load(), Failed: t.traces.failed.Load(), Exported: t.traces.exported.Load()}
}

func (t *Telemetry) metricsLoop(url string) {
	defer close(t.done)
	tick := time.NewTicker(t.settings.ExportInterval.D())
	defer tick.Stop()
	for {
		select {
		case <-tick.C:
			t.exportMetrics(url)
		case <-t.stop:
			t.exportMetrics(url)
			return
		}
	}
}

// exportMetrics posts every series (cumulative) as an
// ExportMetricsServiceRequest (MetricsData has its wire form).
func (t *Telemetry) exportMetrics(url string) error {
	ms := t.meter.collect(t.o.Now())
	if t.traces != nil {
		ms = append(ms, droppedMetric(t.traces.dropped.Load()+t.traces.failed.Load(), t.meter.start, t.o.Now()))
	}
	if len(ms) == 0 {
		return nil
	}
	body, err := proto.Marshal(&metricspb.MetricsData{ResourceMetrics: []*metricspb.ResourceMetrics{{Resource: t.resource,
		ScopeMetrics: []*metricspb.ScopeMetrics{{Scope: scope(), Metrics: ms}}}}})
	if err == nil {
		err = postOTLP(t.o.Client, url, body)
	}
	if err != nil && t.o.OnError != nil {
		t.o.OnError(err)
	}
	return err
}

// droppedMetric is the count of spans lost (queue full or failed export).
func droppedMetric(n int64, start, now time.Time) *metricspb.Metric {
	return &metricspb.Metric{Name: MetricDroppedSpans, Unit: "{span}", Description: "Spans dropped by a full export queue or lost with a failed export.",
		Data: &metricspb.Metric_Sum{Sum: &metricspb.Sum{IsMonotonic: true,
			AggregationTemporality: metricspb.AggregationTemporality_AGGREGATION_TEMPORALITY_CUMULATIVE,
			DataPoints: []*metricspb.NumberDataPoint{{StartTimeUnixNano: unixNano(start), TimeUnixNano: unixNano(now),
				Value: &metricspb.NumberDataPoint_AsInt{AsInt: n}}}}}}
}

// Flush exports the queued spans and the metrics now, within ctx (Lambda:
// before the environment may freeze; shutdown).
func (t *Telemetry) Flush(ctx context.Context) error {
	if t == nil {
		return nil
	}
	var errs []error
	if t.traces != nil {
		errs = append(errs, t.traces.flush(ctx))
	}
	if t.meter != nil {
		errs = append(errs, t.exportMetrics(strings.TrimRight(t.settings.OTLPEndpoint, "/")+"/v1/metrics"))
	}
	return errors.Join(errs...)
}

// Close stops the background export after a last one.
func (t *Telemetry) Close() error {
	if t == nil {
		return nil
	}
	t.once.Do(func() {
		if t.traces != nil {
			t.traces.close()
		}
		close(t.stop)
		<-t.done
	})
	return nil
}
