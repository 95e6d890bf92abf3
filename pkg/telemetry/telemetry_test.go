package telemetry

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	commonpb "go.opentelemetry.io/proto/otlp/common/v1"
	tracepb "go.opentelemetry.io/proto/otlp/trace/v1"
	"google.golang.org/protobuf/proto"

	"github.com/llmgw/llmgw/pkg/config"
	"github.com/llmgw/llmgw/pkg/exchange"
	"github.com/llmgw/llmgw/pkg/traceid"
)

// TestFullQueueDropsAndCountsWithoutWaiting: while the collector holds
// an export, a request's spans go on the bounded queue; what does not fit
// is dropped and counted, and Observe returns at once (a blocked
// Observe would hang this test: the collector is released only after).
func TestFullQueueDropsAndCountsWithoutWaiting(t *testing.T) {
	arrived, release := make(chan struct{}), make(chan struct{})
	var mu sync.Mutex
	got := 0
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		var td tracepb.TracesData
		if err := proto.Unmarshal(body, &td); err != nil {
			t.Error(err)
		}
		mu.Lock()
		first := got == 0
		for _, rs := range td.ResourceSpans {
			for _, ss := range rs.ScopeSpans {
				got += len(ss.Spans)
			}
		}
		mu.Unlock()
		if first {
			close(arrived)
			<-release
		}
	}))
	defer srv.Close()
	tel := New(config.TelemetrySettings{OTLPEndpoint: srv.URL, QueueSize: 2, ExportInterval: config.Duration(time.Hour), Metrics: new(bool)},
		Options{Config: func() *config.Config { return &config.Config{} }})
	defer tel.Close()
	rec := func(i int) *exchange.Record {
		return &exchange.Record{RequestID: fmt.Sprint(i), TraceID: fmt.Sprintf("%032x", i+1), Time: time.Unix(1, 0), Outcome: "ok"}
	}
	ctx := func(i int) context.Context {
		return traceid.WithSpan(context.Background(), traceid.Context{TraceID: fmt.Sprintf("%032x", i+1), SpanID: "00f067aa0ba902b7", Sampled: true})
	}
	tel.Observe(ctx(0), nil, rec(0))
	flushed := make(chan error, 1)
	go func() { flushed <- tel.Flush(context.Background()) }()
	<-arrived // the export loop is now inside the held export, the queue empty
	for i := 1; i <= 5; i++ {
		tel.Observe(ctx(i), nil, rec(i)) // one server span each
	}
	if s := tel.Stats(); s.Dropped != 3 {
		t.Errorf("dropped %d spans, want 3 (5 offered to a queue of 2)", s.Dropped)
	}
	close(release)
	if err := <-flushed; err != nil {
		t.Fatal(err)
	}
	if err := tel.Flush(context.Background()); err != nil {
		t.Fatal(err)
	}
	mu.Lock()
	defer mu.Unlock()
	if s := tel.Stats(); got != 3 || s.Exported != 3 {
		t.Errorf("the collector got %d spans, exported %d; want 3 (the first and the two queued)", got, s.Exported)
	}
}

// TestFailedExportIsCountedNotRaised: a collector that answers 500 loses
// its batch (counted), and Observe still returns normally.
func TestFailedExportIsCountedNotRaised(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { w.WriteHeader(http.StatusInternalServerError) }))
	defer srv.Close()
	var errs []error
	tel := New(config.TelemetrySettings{OTLPEndpoint: srv.URL, ExportInterval: config.Duration(time.Hour)},
		Options{Config: func() *config.Config { return &config.Config{} }, OnError: func(err error) { errs = append(errs, err) }})
	defer tel.Close()
	tel.Observe(traceid.WithSpan(context.Background(), traceid.New()), nil, &exchange.Record{Time: time.Unix(1, 0), Outcome: "ok"})
	tel.Flush(context.Background())
	if s := tel.Stats(); s.Failed != 1 || s.Exported != 0 {
		t.Errorf("stats %+v, want one failed span", s)
	}
	if len(errs) == 0 {
		t.Error("the failed export was not reported")
	}
}

// TestOffByDefault: without an endpoint there is no exporter at all, and
// its nil methods do nothing.
func TestOffByDefault(t *testing.T) {
	tel := New(config.TelemetrySettings{}, Options{})
	if tel != nil {
		t.Fatal("telemetry on without an endpoint")
	}
	tel.Observe(context.Background(), nil, &exchange.Record{})
	if tel.Tap(&exchange.Request{}) != nil || tel.Flush(context.Background()) != nil || tel.Close() != nil {
		t.Error("a nil Telemetry did something")
	}
}

// TestUnsampledCallerIsNotExported: a traceparent whose sampled flag is 0
// exports no span; the Lambda environment's unsampled X-Ray id does not
// count as the caller's decision.
func TestUnsampledCallerIsNotExported(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {}))
	defer srv.Close()
	tel := New(config.TelemetrySettings{OTLPEndpoint: srv.URL, ExportInterval: config.Duration(time.Hour), Metrics: new(bool)},
		Options{Config: func() *config.Config { return &config.Config{} }})
	defer tel.Close()
	tc, _ := traceid.ParseTraceparent("00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-00")
	tel.Observe(traceid.WithSpan(context.Background(), tc), nil, &exchange.Record{Time: time.Unix(1, 0), Outcome: "ok"})
	tel.Flush(context.Background())
	if s := tel.Stats(); s.Exported != 0 || s.Dropped != 0 {
		t.Errorf("stats %+v: an unsampled trace was exported", s)
	}
	// The Lambda invocation's X-Ray header (Sampled=0 whenever the
	// function's X-Ray tracing is off) is not the caller's decision.
	lc, _ := traceid.ParseXRay("Root=1-5759e988-bd862e3fe1be46a994272793;Parent=53995c3f42cd8ad8;Sampled=0")
	lc.Source = "lambda"
	tel.Observe(traceid.WithSpan(context.Background(), lc), nil, &exchange.Record{Time: time.Unix(1, 0), Outcome: "ok"})
	tel.Flush(context.Background())
	if s := tel.Stats(); s.Exported != 1 {
		t.Errorf("stats %+v: the Lambda-only trace was not exported", s)
	}
}

func pointAttr(attrs []*commonpb.KeyValue, k string) string {
	for _, a := range attrs {
		if a.Key == k {
			return a.Value.GetStringValue()
		}
	}
	return ""
}

// TestMetricSeriesStayBounded: route, target and team values the config
// does not name are recorded as _other, so callers cannot grow the series;
// and past maxSeries every new series folds into one overflow series.
func TestMetricSeriesStayBounded(t *testing.T) {
	cfg := &config.Config{Providers: map[string]*config.Provider{"p": {Kind: "openai"}}, Routes: map[string]*config.Route{"m": {}},
		Teams: map[string]*config.Team{"search": {}}}
	m := newMeter(time.Unix(0, 0))
	for i := 0; i < 50; i++ {
		m.observe(cfg, &exchange.Record{Route: fmt.Sprint("r", i), Provider: "q", Target: fmt.Sprint("q/x", i), Team: fmt.Sprint("t", i), Outcome: "ok", LatencyMillis: 5})
	}
	m.observe(cfg, &exchange.Record{Route: "m", Provider: "p", Target: "p/a", Team: "search", Outcome: "ok", LatencyMillis: 5})
	dur := m.inst[1]
	if len(dur.series) != 2 {
		t.Fatalf("%d duration series, want 2 (m/p/a/search and one _other)", len(dur.series))
	}
	for _, h := range dur.series {
		if r := pointAttr(h.attrs, AttrRoute); r != "m" && (r != otherValue || pointAttr(h.attrs, AttrTeam) != otherValue || pointAttr(h.attrs, AttrTarget) != otherValue) {
			t.Errorf("series %v", h.attrs)
		}
	}
	m2 := newMeter(time.Unix(0, 0))
	for i := 0; i < maxSeries+200; i++ {
		m2.observe(nil, &exchange.Record{Route: fmt.Sprint("r", i), Outcome: "ok", LatencyMillis: 5})
	}
	if n := len(m2.inst[1].series); n != maxSeries+1 {
		t.Errorf("%d series, want %d (the cap and the overflow)", n, maxSeries+1)
	}
	if h := m2.inst[1].series["overflow"]; h == nil || h.count != 200 {
		t.Errorf("overflow series %+v", h)
	}
}
