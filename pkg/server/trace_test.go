package server_test

import (
	"encoding/json"
	"net/http"
	"regexp"
	"strings"
	"testing"
)

const clientTraceparent = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"
const clientTraceID = "4bf92f3577b34da6a3ce929d0e0e4736"

var traceparentRe = regexp.MustCompile(`^00-([0-9a-f]{32})-([0-9a-f]{16})-0[01]$`)

// logLines returns the JSON log lines with the given msg.
func logLines(t *testing.T, g *gateway, msg string) []map[string]any {
	t.Helper()
	var out []map[string]any
	for _, l := range strings.Split(g.logs.String(), "\n") {
		var m map[string]any
		if json.Unmarshal([]byte(l), &m) == nil && m["msg"] == msg {
			out = append(out, m)
		}
	}
	return out
}

// TestTraceparentFlowsThroughEveryLayer: the client's trace id reaches the
// upstream (as a traceparent with the gateway's own span), the response
// headers, the usage record and the request log line.
func TestTraceparentFlowsThroughEveryLayer(t *testing.T) {
	up := newUpstream(t, func(w http.ResponseWriter, r *http.Request, body []byte, _ int) { okStream(w, r, body) })
	g := newGateway(t, oneRoute("", up.URL))
	resp := g.post(t, streamBody, "traceparent", clientTraceparent)
	readAll(t, resp.Body)
	if resp.Header.Get("x-gateway-trace-id") != clientTraceID {
		t.Errorf("x-gateway-trace-id = %q", resp.Header.Get("x-gateway-trace-id"))
	}
	m := traceparentRe.FindStringSubmatch(resp.Header.Get("traceparent"))
	if m == nil || m[1] != clientTraceID || m[2] == "00f067aa0ba902b7" {
		t.Errorf("response traceparent = %q", resp.Header.Get("traceparent"))
	}
	sent := traceparentRe.FindStringSubmatch(up.header(0).Get("traceparent"))
	if sent == nil || sent[1] != clientTraceID || sent[2] == "00f067aa0ba902b7" || sent[0] != m[0] {
		t.Errorf("upstream traceparent = %q, want the client's trace id with the gateway's span (%q)", up.header(0).Get("traceparent"), m[0])
	}
	recs := g.waitRecs(t, 1)
	if recs[0].TraceID != clientTraceID {
		t.Errorf("record trace id = %q", recs[0].TraceID)
	}
	lines := logLines(t, g, "request")
	if len(lines) != 1 || lines[0]["trace_id"] != clientTraceID {
		t.Errorf("request log lines = %v", lines)
	}
}

// TestXAmznTraceIdIsAcceptedAndTraceGeneratedOtherwise: an X-Ray header
// gives the trace id; no header gives a new one per request.
func TestXAmznTraceIdIsAcceptedAndTraceGeneratedOtherwise(t *testing.T) {
	up := newUpstream(t, okHandler)
	g := newGateway(t, oneRoute("", up.URL))
	resp := g.post(t, chatBody, "X-Amzn-Trace-Id", "Root=1-5759e988-bd862e3fe1be46a994272793;Parent=53995c3f42cd8ad8;Sampled=1")
	readAll(t, resp.Body)
	if got := resp.Header.Get("x-gateway-trace-id"); got != "5759e988bd862e3fe1be46a994272793" {
		t.Errorf("trace id from X-Amzn-Trace-Id = %q", got)
	}
	if !strings.HasPrefix(up.header(0).Get("traceparent"), "00-5759e988bd862e3fe1be46a994272793-") {
		t.Errorf("upstream traceparent = %q", up.header(0).Get("traceparent"))
	}
	a, b := g.post(t, chatBody), g.post(t, chatBody)
	ida, idb := a.Header.Get("x-gateway-trace-id"), b.Header.Get("x-gateway-trace-id")
	if len(ida) != 32 || ida == idb || !traceparentRe.MatchString(a.Header.Get("traceparent")) {
		t.Errorf("generated trace ids %q %q (traceparent %q)", ida, idb, a.Header.Get("traceparent"))
	}
	recs := g.waitRecs(t, 3)
	if recs[1].TraceID == "" || recs[1].TraceID == recs[2].TraceID {
		t.Errorf("records' trace ids %q %q", recs[1].TraceID, recs[2].TraceID)
	}
}

// TestErrorBodiesCarryTheTraceID: pipeline errors, mid-stream error
// frames and errors outside the pipeline all name the trace id.
func TestErrorBodiesCarryTheTraceID(t *testing.T) {
	up := newUpstream(t, func(w http.ResponseWriter, r *http.Request, body []byte, _ int) {
		w.Header().Set("Content-Type", "text/event-stream")
		w.Write([]byte(roleChunk(false) + contentChunk("half", false)))
	})
	g := newGateway(t, oneRoute("", up.URL))
	type envelope struct {
		Error struct {
			TraceID string `json:"trace_id"`
		} `json:"error"`
	}
	check := func(name, body string) {
		t.Helper()
		i := strings.LastIndex(body, `{"error"`)
		var e envelope
		if i < 0 || json.Unmarshal([]byte(strings.TrimSpace(body[i:])), &e) != nil || e.Error.TraceID != clientTraceID {
			t.Errorf("%s: error body without the trace id: %s", name, body)
		}
	}
	check("unknown model", readAll(t, g.post(t, `{"model":"nope","messages":[{"role":"user","content":"hi"}]}`, "traceparent", clientTraceparent).Body))
	check("bad input", readAll(t, g.post(t, `{"model":"m"}`, "traceparent", clientTraceparent).Body))
	check("mid-stream", readAll(t, g.post(t, streamBody, "traceparent", clientTraceparent).Body))
	req, _ := http.NewRequest(http.MethodGet, g.URL+"/v1/nowhere", nil)
	req.Header.Set("traceparent", clientTraceparent)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	check("unknown path", readAll(t, resp.Body))
}

// TestBreakerTransitionLogCarriesTheTraceID: the request whose failure
// trips a breaker is named on the transition's log line.
func TestBreakerTransitionLogCarriesTheTraceID(t *testing.T) {
	up := newUpstream(t, func(w http.ResponseWriter, r *http.Request, _ []byte, _ int) {
		http.Error(w, `{"error":{"message":"boom","type":"server_error"}}`, 500)
	})
	g := newGateway(t, "breaker: {consecutive_failures: 1}\n"+oneRoute("    attempts: 1\n", up.URL))
	readAll(t, g.post(t, chatBody, "traceparent", clientTraceparent).Body)
	lines := logLines(t, g, "breaker")
	if len(lines) == 0 || lines[0]["to"] != "open" || lines[0]["trace_id"] != clientTraceID {
		t.Errorf("breaker lines = %v", lines)
	}
}
