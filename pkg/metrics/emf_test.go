package metrics

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/llmgw/llmgw/pkg/exchange"
)

func TestRequestEmitsEMFWithTheDashboardsDimensions(t *testing.T) {
	var buf bytes.Buffer
	e := &EMF{W: &buf, Stage: "prod", Now: func() time.Time { return time.UnixMilli(1700000000000) }}
	e.Request(&exchange.Record{RequestID: "r1", Route: "gpt", Team: "search", FallbackDepth: 1, Status: 502, TTFTMillis: 12.5, CostUSD: 0.25})
	var doc map[string]any
	if err := json.Unmarshal(buf.Bytes(), &doc); err != nil {
		t.Fatal(err)
	}
	aws := doc["_aws"].(map[string]any)
	if aws["Timestamp"].(float64) != 1700000000000 {
		t.Errorf("timestamp = %v", aws["Timestamp"])
	}
	dirs := aws["CloudWatchMetrics"].([]any)
	if len(dirs) != 2 {
		t.Fatalf("directives = %v", dirs)
	}
	d0 := dirs[0].(map[string]any)
	if d0["Namespace"] != "LLMGateway" || !strings.Contains(mustJSON(d0["Dimensions"]), `["Stage","Route"]`) {
		t.Errorf("route directive = %v", d0)
	}
	if !strings.Contains(mustJSON(dirs[1]), `["Stage","Team"]`) || !strings.Contains(mustJSON(dirs[1]), "CostUSD") {
		t.Errorf("team directive = %v", dirs[1])
	}
	for k, want := range map[string]any{"Stage": "prod", "Route": "gpt", "Team": "search", "Requests": 1.0, "Fallbacks": 1.0, "Errors5xx": 1.0, "CostUSD": 0.25, "TimeToFirstTokenMs": 12.5} {
		if doc[k] != want {
			t.Errorf("%s = %v, want %v", k, doc[k], want)
		}
	}
}

func mustJSON(v any) string {
	b, _ := json.Marshal(v)
	return string(b)
}

// TestMalformedFramesMetric: a request whose upstream sent frames that were
// not JSON emits MalformedFrames by route (issue 13, item 7); others emit
// none.
func TestMalformedFramesMetric(t *testing.T) {
	for _, n := range []int{0, 3} {
		var buf bytes.Buffer
		e := &EMF{W: &buf, Stage: "prod"}
		e.Request(&exchange.Record{RequestID: "r1", Route: "gpt", MalformedFrames: n})
		var doc map[string]any
		if err := json.Unmarshal(buf.Bytes(), &doc); err != nil {
			t.Fatal(err)
		}
		got, ok := doc["MalformedFrames"]
		if n == 0 && ok || n > 0 && (got != float64(n) || !strings.Contains(buf.String(), `{"Name":"MalformedFrames","Unit":"Count"}`)) {
			t.Errorf("malformed %d: %s", n, buf.String())
		}
	}
}
