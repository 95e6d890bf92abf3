package metrics

import (
	"github.com/llmgw/llmgw/pkg/deployment"
	"github.com/llmgw/llmgw/pkg/exchange"
)

// Attempts emits the per-target view of a request's upstream attempts
// (skipped targets and stage calls left out): AttemptErrors=1 by
// [Stage, Target, Category] for each failed attempt, and
// AttemptTimeToFirstTokenMs by [Stage, Target] for each streamed attempt
// that answered. Targets come from the config and categories from a fixed
// set, so the dimensions stay bounded.
func (e *EMF) Attempts(rec *exchange.Record) {
	for i := range rec.Attempts {
		at := &rec.Attempts[i]
		if at.Skipped != "" || at.Stage != "" || at.Target == "" {
			continue
		}
		switch {
		case at.Category != "":
			e.emit(map[string]any{"Target": at.Target, "Category": string(at.Category), deployment.MetricAttemptErrors: 1},
				directive{Namespace, [][]string{{"Stage", "Target", "Category"}}, []metricDef{{deployment.MetricAttemptErrors, "Count"}}})
		case rec.Stream && at.LatencyM > 0:
			e.emit(map[string]any{"Target": at.Target, deployment.MetricAttemptTTFT: at.LatencyM},
				directive{Namespace, [][]string{{"Stage", "Target"}}, []metricDef{{deployment.MetricAttemptTTFT, "Milliseconds"}}})
		}
	}
}
