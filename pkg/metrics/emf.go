// Package metrics emits CloudWatch metrics as Embedded Metric Format log
// lines: one JSON object per event on stdout, which Lambda ships to
// CloudWatch Logs and CloudWatch turns into metrics. No PutMetricData calls,
// no extra latency, no extra IAM. Namespace and names match the alarms and
// dashboard defined in infra/.
package metrics

import (
	"encoding/json"
	"io"
	"sync"
	"time"

	"github.com/llmgw/llmgw/pkg/deployment"
	"github.com/llmgw/llmgw/pkg/exchange"
)

// Namespace is the CloudWatch namespace of every gateway metric.
const Namespace = deployment.MetricNamespace

// EMF writes metrics in Embedded Metric Format.
type EMF struct {
	// W receives one JSON line per event (Lambda: os.Stdout).
	W io.Writer
	// Stage is the value of the Stage dimension on every metric.
	Stage string
	// Now is the clock (nil: time.Now).
	Now func() time.Time

	mu sync.Mutex
}

type metricDef struct {
	Name string `json:"Name"`
	Unit string `json:"Unit"`
}

type directive struct {
	Namespace  string      `json:"Namespace"`
	Dimensions [][]string  `json:"Dimensions"`
	Metrics    []metricDef `json:"Metrics"`
}

func (e *EMF) emit(doc map[string]any, directives ...directive) {
	now := time.Now
	if e.Now != nil {
		now = e.Now
	}
	doc["_aws"] = map[string]any{"Timestamp": now().UnixMilli(), "CloudWatchMetrics": directives}
	doc["Stage"] = e.Stage
	b, err := json.Marshal(doc)
	if err != nil {
		return
	}
	b = append(b, '\n')
	e.mu.Lock()
	e.W.Write(b)
	e.mu.Unlock()
}

// Request emits the per-request metrics: Requests, Fallbacks, Errors5xx,
// MalformedFrames (when any) and TimeToFirstTokenMs by [Stage] and
// [Stage, Route]; CostUSD, Requests,
// Fallbacks and TimeToFirstTokenMs by [Stage, Team].
func (e *EMF) Request(rec *exchange.Record) {
	team := rec.Team
	if team == "" {
		team = "anonymous"
	}
	doc := map[string]any{
		"Route": rec.Route, "Team": team, "request_id": rec.RequestID,
		deployment.MetricRequests: 1, deployment.MetricFallbacks: b2i(rec.FallbackDepth > 0),
		deployment.MetricErrors5xx: b2i(rec.Status >= 500), deployment.MetricCostUSD: rec.CostUSD,
	}
	perRoute := []metricDef{{deployment.MetricRequests, "Count"}, {deployment.MetricFallbacks, "Count"}, {deployment.MetricErrors5xx, "Count"}}
	perTeam := []metricDef{{deployment.MetricCostUSD, "None"}, {deployment.MetricRequests, "Count"}, {deployment.MetricFallbacks, "Count"}}
	if rec.MalformedFrames > 0 {
		doc[deployment.MetricMalformedFrames] = rec.MalformedFrames
		perRoute = append(perRoute, metricDef{deployment.MetricMalformedFrames, "Count"})
	}
	if rec.TTFTMillis > 0 {
		doc[deployment.MetricTTFT] = rec.TTFTMillis
		perRoute = append(perRoute, metricDef{deployment.MetricTTFT, "Milliseconds"})
		perTeam = append(perTeam, metricDef{deployment.MetricTTFT, "Milliseconds"})
	}
	e.emit(doc,
		directive{Namespace, [][]string{{"Stage"}, {"Stage", "Route"}}, perRoute},
		directive{Namespace, [][]string{{"Stage", "Team"}}, perTeam})
}

// BreakerOpen emits BreakerOpen=1 by [Stage] and [Stage, Target].
func (e *EMF) BreakerOpen(target string) {
	e.emit(map[string]any{"Target": target, deployment.MetricBreakerOpen: 1},
		directive{Namespace, [][]string{{"Stage"}, {"Stage", "Target"}}, []metricDef{{deployment.MetricBreakerOpen, "Count"}}})
}

// Count emits a single counter by [Stage], e.g.
// deployment.MetricConfigReloadErrors.
func (e *EMF) Count(name string, n float64) {
	e.emit(map[string]any{name: n}, directive{Namespace, [][]string{{"Stage"}}, []metricDef{{name, "Count"}}})
}

func b2i(b bool) int {
	if b {
		return 1
	}
	return 0
}
