package telemetry

import (
	"sort"
	"strings"
	"sync"
	"time"

	commonpb "go.opentelemetry.io/proto/otlp/common/v1"
	metricspb "go.opentelemetry.io/proto/otlp/metrics/v1"

	"github.com/llmgw/llmgw/pkg/config"
	"github.com/llmgw/llmgw/pkg/exchange"
)

// Bucket boundaries the GenAI conventions give for their histograms.
var (
	tokenBuckets    = []float64{1, 4, 16, 64, 256, 1024, 4096, 16384, 65536, 262144, 1048576, 4194304, 16777216, 67108864}
	durationBuckets = []float64{0.01, 0.02, 0.04, 0.08, 0.16, 0.32, 0.64, 1.28, 2.56, 5.12, 10.24, 20.48, 40.96, 81.92}
)

// maxSeries bounds the series of one metric: past it, data points go to
// one overflow series (otel.metric.overflow=true), as the OTel SDKs do.
const maxSeries = 1000

// histogram is one cumulative histogram series.
type histogram struct {
	attrs  []*commonpb.KeyValue
	counts []uint64
	count  uint64
	sum    float64
	min    float64
	max    float64
}

func (h *histogram) add(bounds []float64, v float64) {
	i := sort.SearchFloat64s(bounds, v)
	h.counts[i]++
	if h.count == 0 || v < h.min {
		h.min = v
	}
	if h.count == 0 || v > h.max {
		h.max = v
	}
	h.count++
	h.sum += v
}

// instrument is one histogram metric and its series.
type instrument struct {
	name, unit, desc string
	bounds           []float64
	series           map[string]*histogram
}

// meter aggregates the GenAI client metrics per route, target and team
// (and operation, provider, error type, token type). Route, target and
// team values not in the config in force are recorded as "_other", so
// the series stay bounded by the config.
type meter struct {
	mu    sync.Mutex
	start time.Time
	inst  []*instrument
}

func newMeter(now time.Time) *meter {
	return &meter{start: now, inst: []*instrument{
		{name: MetricTokenUsage, unit: "{token}", desc: "Number of input and output tokens used.", bounds: tokenBuckets, series: map[string]*histogram{}},
		{name: MetricDuration, unit: "s", desc: "GenAI operation duration.", bounds: durationBuckets, series: map[string]*histogram{}},
		{name: MetricTimeToFirst, unit: "s", desc: "Time to receive the first chunk of a streamed response.", bounds: durationBuckets, series: map[string]*histogram{}},
	}}
}

func (m *meter) record(inst *instrument, attrs []*commonpb.KeyValue, v float64) {
	var kb strings.Builder
	for _, a := range attrs {
		kb.WriteString(a.Key)
		kb.WriteByte('=')
		kb.WriteString(a.Value.GetStringValue())
		kb.WriteByte(0)
	}
	key := kb.String()
	h := inst.series[key]
	if h == nil {
		if len(inst.series) >= maxSeries {
			key, attrs = "overflow", []*commonpb.KeyValue{boolean(overflowAttr, true)}
			h = inst.series[key]
		}
		if h == nil {
			h = &histogram{attrs: attrs, counts: make([]uint64, len(inst.bounds)+1)}
			inst.series[key] = h
		}
	}
	h.add(inst.bounds, v)
}

// bounded returns v when known holds it, else "_other".
func bounded(v string, known bool) string {
	if v == "" || known {
		return v
	}
	return otherValue
}

// observe records one finished request.
func (m *meter) observe(cfg *config.Config, rec *exchange.Record) {
	if rec.Operation == exchange.OperationCountTokens {
		return // no generation: nothing the GenAI metrics count
	}
	route, target, team := rec.Route, rec.Target, rec.Team
	prov := ""
	if cfg != nil {
		_, ok := cfg.Routes[route]
		route = bounded(route, ok)
		_, ok = cfg.Teams[team]
		team = bounded(team, ok || team == config.AnonymousTeam)
		p, ok := cfg.Providers[rec.Provider]
		target = bounded(target, ok)
		if ok {
			prov = providerName(p.Kind)
		}
	}
	base := []*commonpb.KeyValue{str(AttrOperation, operation(rec))}
	if prov != "" {
		base = append(base, str(AttrProvider, prov))
	}
	if route != "" {
		base = append(base, str(AttrRequestModel, route), str(AttrRoute, route))
	}
	if target != "" {
		base = append(base, str(AttrTarget, target))
	}
	if team != "" {
		base = append(base, str(AttrTeam, team))
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	dur := base
	if failed(rec.Outcome) {
		dur = append(append([]*commonpb.KeyValue(nil), base...), str(AttrErrorType, rec.Outcome))
	}
	m.record(m.inst[1], dur, rec.LatencyMillis/1000)
	if rec.Stream && rec.TTFTMillis > 0 && !failed(rec.Outcome) {
		m.record(m.inst[2], base, rec.TTFTMillis/1000)
	}
	if rec.Target != "" && (rec.InputTokens > 0 || rec.OutputTokens > 0) {
		in := append(append([]*commonpb.KeyValue(nil), base...), str(AttrTokenType, "input"))
		out := append(append([]*commonpb.KeyValue(nil), base...), str(AttrTokenType, "output"))
		m.record(m.inst[0], in, float64(rec.InputTokens))
		m.record(m.inst[0], out, float64(rec.OutputTokens))
	}
}

// collect returns every series as OTLP metrics (cumulative since start).
func (m *meter) collect(now time.Time) []*metricspb.Metric {
	m.mu.Lock()
	defer m.mu.Unlock()
	var out []*metricspb.Metric
	for _, inst := range m.inst {
		if len(inst.series) == 0 {
			continue
		}
		keys := make([]string, 0, len(inst.series))
		for k := range inst.series {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		h := &metricspb.Histogram{AggregationTemporality: metricspb.AggregationTemporality_AGGREGATION_TEMPORALITY_CUMULATIVE}
		for _, k := range keys {
			s := inst.series[k]
			sum, lo, hi := s.sum, s.min, s.max
			h.DataPoints = append(h.DataPoints, &metricspb.HistogramDataPoint{Attributes: s.attrs,
				StartTimeUnixNano: unixNano(m.start), TimeUnixNano: unixNano(now), Count: s.count, Sum: &sum, Min: &lo, Max: &hi,
				BucketCounts: append([]uint64(nil), s.counts...), ExplicitBounds: inst.bounds})
		}
		out = append(out, &metricspb.Metric{Name: inst.name, Unit: inst.unit, Description: inst.desc,
			Data: &metricspb.Metric_Histogram{Histogram: h}})
	}
	return out
}
