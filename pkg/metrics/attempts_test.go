package metrics

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"

	"github.com/llmgw/llmgw/pkg/exchange"
)

// TestAttemptsEmitThePerTargetView: a failed attempt counts under its
// target and category, a streamed answer's first-token time under its
// target; skipped targets and stage calls emit nothing.
func TestAttemptsEmitThePerTargetView(t *testing.T) {
	var buf bytes.Buffer
	e := &EMF{W: &buf, Stage: "prod"}
	e.Attempts(&exchange.Record{Stream: true, Attempts: []exchange.Attempt{
		{Target: "a/x", Skipped: "breaker_open"},
		{Target: "b/y", Category: "overloaded"},
		{Target: "m/j", Stage: exchange.StageModerationInput, LatencyM: 5},
		{Target: "c/z", LatencyM: 420},
	}})
	lines := strings.Split(strings.TrimSpace(buf.String()), "\n")
	if len(lines) != 2 {
		t.Fatalf("%d documents, want 2: %s", len(lines), buf.String())
	}
	var errDoc, ttftDoc map[string]any
	json.Unmarshal([]byte(lines[0]), &errDoc)
	json.Unmarshal([]byte(lines[1]), &ttftDoc)
	if errDoc["Target"] != "b/y" || errDoc["Category"] != "overloaded" || errDoc["AttemptErrors"] != 1.0 ||
		!strings.Contains(mustJSON(errDoc["_aws"]), `["Stage","Target","Category"]`) {
		t.Errorf("error document %v", errDoc)
	}
	if ttftDoc["Target"] != "c/z" || ttftDoc["AttemptTimeToFirstTokenMs"] != 420.0 || !strings.Contains(mustJSON(ttftDoc["_aws"]), `["Stage","Target"]`) {
		t.Errorf("ttft document %v", ttftDoc)
	}
}
