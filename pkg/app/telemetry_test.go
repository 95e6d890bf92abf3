package app

import (
	"bytes"
	"context"
	"encoding/hex"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	commonpb "go.opentelemetry.io/proto/otlp/common/v1"
	metricspb "go.opentelemetry.io/proto/otlp/metrics/v1"
	tracepb "go.opentelemetry.io/proto/otlp/trace/v1"
	"google.golang.org/protobuf/proto"

	"github.com/llmgw/llmgw/pkg/config"
	"github.com/llmgw/llmgw/pkg/store/embedded"
	"github.com/llmgw/llmgw/pkg/teamkey"
)

// otlpReceiver is an OTLP/HTTP collector: it decodes what it is sent with
// the official OTLP types. TracesData and MetricsData are the wire form of
// the collector services' ExportTraceServiceRequest and
// ExportMetricsServiceRequest (field 1: the repeated resource spans or
// metrics), so the test links no gRPC service code.
type otlpReceiver struct {
	*httptest.Server
	mu      sync.Mutex
	spans   []*tracepb.Span
	metrics *metricspb.MetricsData
	raw     bytes.Buffer // every body, to look for what must not be there
	types   []string
}

func newReceiver(t *testing.T) *otlpReceiver {
	rc := &otlpReceiver{}
	rc.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		rc.mu.Lock()
		defer rc.mu.Unlock()
		rc.raw.Write(body)
		rc.types = append(rc.types, r.Header.Get("Content-Type"))
		switch r.URL.Path {
		case "/v1/traces":
			var req tracepb.TracesData
			if err := proto.Unmarshal(body, &req); err != nil {
				t.Errorf("traces: %v", err)
				w.WriteHeader(http.StatusBadRequest)
				return
			}
			for _, rs := range req.ResourceSpans {
				for _, ss := range rs.ScopeSpans {
					rc.spans = append(rc.spans, ss.Spans...)
				}
			}
		case "/v1/metrics":
			var req metricspb.MetricsData
			if err := proto.Unmarshal(body, &req); err != nil {
				t.Errorf("metrics: %v", err)
				w.WriteHeader(http.StatusBadRequest)
				return
			}
			rc.metrics = &req
		default:
			w.WriteHeader(http.StatusNotFound)
			return
		}
		w.Header().Set("Content-Type", "application/x-protobuf") // an empty Export*ServiceResponse
	}))
	t.Cleanup(rc.Close)
	return rc
}

// trace returns the spans of one trace: the server span and its children.
func (rc *otlpReceiver) trace(t *testing.T, traceID string) (root *tracepb.Span, children []*tracepb.Span) {
	t.Helper()
	rc.mu.Lock()
	defer rc.mu.Unlock()
	for _, s := range rc.spans {
		if hex.EncodeToString(s.TraceId) != traceID {
			continue
		}
		if s.Kind == tracepb.Span_SPAN_KIND_SERVER {
			root = s
		} else {
			children = append(children, s)
		}
	}
	if root == nil {
		t.Fatalf("no server span for trace %s among %d spans", traceID, len(rc.spans))
	}
	for _, c := range children {
		if !bytes.Equal(c.ParentSpanId, root.SpanId) {
			t.Errorf("client span %q is not a child of the server span", c.Name)
		}
	}
	return root, children
}

func attr(s interface{ GetAttributes() []*commonpb.KeyValue }, k string) *commonpb.AnyValue {
	for _, a := range s.GetAttributes() {
		if a.Key == k {
			return a.Value
		}
	}
	return nil
}

func attrStr(s interface{ GetAttributes() []*commonpb.KeyValue }, k string) string {
	return attr(s, k).GetStringValue()
}

func attrInt(s interface{ GetAttributes() []*commonpb.KeyValue }, k string) int64 {
	return attr(s, k).GetIntValue()
}

// chatStream is an OpenAI streamed answer, byte for byte.
func chatStream(model string, words ...string) string {
	var b strings.Builder
	for i, w := range words {
		role := ""
		if i == 0 {
			role = `"role":"assistant",`
		}
		fmt.Fprintf(&b, "data: {\"id\":\"chatcmpl-1\",\"object\":\"chat.completion.chunk\",\"created\":1,\"model\":%q,\"choices\":[{\"index\":0,\"delta\":{%s\"content\":%q},\"finish_reason\":null}]}\n\n", model, role, w)
	}
	fmt.Fprintf(&b, "data: {\"id\":\"chatcmpl-1\",\"object\":\"chat.completion.chunk\",\"created\":1,\"model\":%q,\"choices\":[{\"index\":0,\"delta\":{},\"finish_reason\":\"stop\"}]}\n\n", model)
	fmt.Fprintf(&b, "data: {\"id\":\"chatcmpl-1\",\"object\":\"chat.completion.chunk\",\"created\":1,\"model\":%q,\"choices\":[],\"usage\":{\"prompt_tokens\":11,\"completion_tokens\":3,\"total_tokens\":14}}\n\n", model)
	b.WriteString("data: [DONE]\n\n")
	return b.String()
}

const otelSecret = "sk-SENTINEL-otel-0000000000000000"

// otelGateway is an assembled gateway exporting to rc, with a failing
// target, a good one, one that cuts its stream, a cached route and a route
// that exports content.
type otelGateway struct {
	g       *Gateway
	key     string
	upSeen  chan string // traceparent headers the good upstream received
	rc      *otlpReceiver
	cleanup func()
}

func newOtelGateway(t *testing.T) *otelGateway {
	t.Setenv("OTEL_TEST_KEY", otelSecret)
	og := &otelGateway{upSeen: make(chan string, 16), rc: newReceiver(t)}
	bad := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusServiceUnavailable)
		io.WriteString(w, `{"error":{"message":"overloaded","type":"server_error","code":null}}`)
	}))
	t.Cleanup(bad.Close)
	good := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		select {
		case og.upSeen <- r.Header.Get("traceparent"):
		default:
		}
		w.Header().Set("Content-Type", "text/event-stream")
		io.WriteString(w, chatStream("gpt-b-2025", "Hel", "lo"))
	}))
	t.Cleanup(good.Close)
	cutter := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		io.WriteString(w, strings.SplitAfter(chatStream("gpt-c", "Hel", "lo"), "\n\n")[0])
		w.(http.Flusher).Flush()
		panic(http.ErrAbortHandler) // the connection breaks mid-stream
	}))
	t.Cleanup(cutter.Close)
	key, hash, err := teamkey.New()
	if err != nil {
		t.Fatal(err)
	}
	og.key = key
	cfg, err := config.Parse([]byte(`
providers:
  bad: {kind: openai, base_url: "` + bad.URL + `/v1", keys: [{env: OTEL_TEST_KEY}]}
  good: {kind: openai, base_url: "` + good.URL + `/v1", keys: [{env: OTEL_TEST_KEY}]}
  cutter: {kind: openai, base_url: "` + cutter.URL + `/v1", keys: [{env: OTEL_TEST_KEY}]}
routes:
  m: {targets: [{provider: bad, model: gpt-a, attempts: 1}, {provider: good, model: gpt-b}]}
  cut: {targets: [{provider: cutter, model: gpt-c, attempts: 1}]}
  cached: {cache: {enabled: true}, targets: [{provider: good, model: gpt-b}]}
  told: {trace_content: true, targets: [{provider: good, model: gpt-b}]}
teams:
  search: {keys: [{id: k1, sha256: "` + hash + `"}], admin: true}
prices:
  gpt-a: {input: 1, output: 2}
  gpt-b: {input: 1, output: 2}
  gpt-c: {input: 1, output: 2}
telemetry: {otlp_endpoint: "` + og.rc.URL + `", export_interval: 1h}
`))
	if err != nil {
		t.Fatal(err)
	}
	g, err := Build(context.Background(), cfg, embedded.OpenMemory(), BuildOptions{Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		t.Fatal(err)
	}
	og.g = g
	t.Cleanup(func() { g.Close() })
	return og
}

// chat sends one streamed chat request and waits until its handler is done
// (httptest.Server.Close waits for it): the request has been observed.
func (og *otelGateway) chat(t *testing.T, route, prompt string, hdr map[string]string) (status int, body string) {
	t.Helper()
	srv := httptest.NewServer(og.g.Handler)
	req, _ := http.NewRequest(http.MethodPost, srv.URL+"/v1/chat/completions",
		strings.NewReader(`{"model":"`+route+`","stream":true,"messages":[{"role":"user","content":"`+prompt+`"}]}`))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Authorization", "Bearer "+og.key)
	for k, v := range hdr {
		req.Header.Set(k, v)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	srv.Close()
	return resp.StatusCode, string(b)
}

// flush exports what is queued; the receiver has it when Flush returns.
func (og *otelGateway) flush(t *testing.T) {
	t.Helper()
	if err := og.g.obs.tel.Flush(context.Background()); err != nil {
		t.Fatal(err)
	}
}

// TestTraceOfAFailover: the caller's traceparent is joined (same trace id,
// the caller's span as parent); the server span is named and attributed by
// the GenAI conventions; each upstream attempt is a client span: the
// failed primary with its error type and status, the fallback with its
// usage, finish reason and fallback depth. The upstream is called with the
// same trace id. No key and no prompt text leave the gateway.
func TestTraceOfAFailover(t *testing.T) {
	og := newOtelGateway(t)
	const tid, parent = "4bf92f3577b34da6a3ce929d0e0e4736", "00f067aa0ba902b7"
	status, body := og.chat(t, "m", "PROMPT-SENTINEL", map[string]string{"traceparent": "00-" + tid + "-" + parent + "-01"})
	if status != 200 || !strings.Contains(body, "Hel") {
		t.Fatalf("chat: %d %s", status, body)
	}
	og.flush(t)
	root, kids := og.rc.trace(t, tid)
	if hex.EncodeToString(root.ParentSpanId) != parent {
		t.Errorf("server span parent %x, want the caller's %s", root.ParentSpanId, parent)
	}
	if root.Name != "chat m" {
		t.Errorf("server span name %q", root.Name)
	}
	for k, want := range map[string]string{"gen_ai.operation.name": "chat", "gen_ai.request.model": "m", "gen_ai.response.model": "gpt-b",
		"gen_ai.provider.name": "openai", "llmgw.route": "m", "llmgw.target": "good/gpt-b", "llmgw.team": "search", "llmgw.trace_source": "traceparent"} {
		if got := attrStr(root, k); got != want {
			t.Errorf("server span %s = %q, want %q", k, got, want)
		}
	}
	if attrInt(root, "gen_ai.usage.input_tokens") != 11 || attrInt(root, "gen_ai.usage.output_tokens") != 3 || attrInt(root, "llmgw.fallback_depth") != 1 {
		t.Errorf("server span usage/depth: %v", root.Attributes)
	}
	if fr := attr(root, "gen_ai.response.finish_reasons").GetArrayValue(); len(fr.GetValues()) != 1 || fr.Values[0].GetStringValue() != "stop" {
		t.Errorf("finish reasons %v", fr)
	}
	if attr(root, "error.type") != nil || root.Status.GetCode() == tracepb.Status_STATUS_CODE_ERROR {
		t.Errorf("a served request is not an error: %v", root.Attributes)
	}
	if len(kids) != 2 {
		t.Fatalf("%d client spans, want 2 (one per attempt)", len(kids))
	}
	first, second := kids[0], kids[1]
	if first.StartTimeUnixNano > second.StartTimeUnixNano {
		first, second = second, first
	}
	if first.Kind != tracepb.Span_SPAN_KIND_CLIENT || first.Name != "chat gpt-a" || attrStr(first, "error.type") != "overloaded" ||
		attrInt(first, "http.response.status_code") != 503 || attrInt(first, "llmgw.attempt") != 1 || attrInt(first, "llmgw.fallback_depth") != 0 ||
		attrStr(first, "server.address") != "127.0.0.1" || attrStr(first, "llmgw.breaker.decision") != "allowed" ||
		first.Status.GetCode() != tracepb.Status_STATUS_CODE_ERROR {
		t.Errorf("failed attempt span: %s %v", first.Name, first.Attributes)
	}
	if second.Name != "chat gpt-b" || attr(second, "error.type") != nil || attrInt(second, "llmgw.fallback_depth") != 1 ||
		attrStr(second, "gen_ai.response.model") != "gpt-b" || attrInt(second, "gen_ai.usage.output_tokens") != 3 {
		t.Errorf("serving attempt span: %s %v", second.Name, second.Attributes)
	}
	if second.EndTimeUnixNano > root.EndTimeUnixNano || first.StartTimeUnixNano < root.StartTimeUnixNano {
		t.Errorf("attempts lie outside the request: root %d-%d, attempts %d, %d", root.StartTimeUnixNano, root.EndTimeUnixNano,
			first.StartTimeUnixNano, second.EndTimeUnixNano)
	}
	if second.StartTimeUnixNano < first.EndTimeUnixNano {
		t.Errorf("the fallback's span starts at %d, before the primary's ended at %d: attempts carry their own start", second.StartTimeUnixNano, first.EndTimeUnixNano)
	}
	if tp := <-og.upSeen; !strings.Contains(tp, tid) {
		t.Errorf("upstream traceparent %q does not carry the trace id", tp)
	}
	og.rc.mu.Lock()
	raw := og.rc.raw.String()
	ct := og.rc.types
	og.rc.mu.Unlock()
	for _, bad := range []string{otelSecret, og.key, "PROMPT-SENTINEL", teamkey.Hash(og.key)} {
		if strings.Contains(raw, bad) {
			t.Errorf("the export carries %q", bad)
		}
	}
	for _, c := range ct {
		if c != "application/x-protobuf" {
			t.Errorf("export content type %q", c)
		}
	}
}

// TestTraceOfACutStream: the target committed and then broke off; the
// request's span and the serving attempt's span both carry the
// interruption.
func TestTraceOfACutStream(t *testing.T) {
	og := newOtelGateway(t)
	const tid = "5759e988bd862e3fe1be46a994272793"
	status, body := og.chat(t, "cut", "hi", map[string]string{"X-Amzn-Trace-Id": "Root=1-5759e988-bd862e3fe1be46a994272793;Parent=53995c3f42cd8ad8;Sampled=1"})
	if status != 200 || !strings.Contains(body, "Hel") {
		t.Fatalf("chat: %d %s", status, body)
	}
	og.flush(t)
	root, kids := og.rc.trace(t, tid)
	if hex.EncodeToString(root.ParentSpanId) != "53995c3f42cd8ad8" || attrStr(root, "llmgw.trace_source") != "x-amzn-trace-id" {
		t.Errorf("the X-Ray parent is not joined: %x %v", root.ParentSpanId, root.Attributes)
	}
	if attrStr(root, "error.type") != "interrupted" || root.Status.GetCode() != tracepb.Status_STATUS_CODE_ERROR {
		t.Errorf("server span of a cut stream: %v %v", root.Attributes, root.Status)
	}
	if len(kids) != 1 || attrStr(kids[0], "error.type") != "interrupted" || kids[0].Status.GetCode() != tracepb.Status_STATUS_CODE_ERROR {
		t.Fatalf("attempt spans of a cut stream: %v", kids)
	}
	if kids[0].EndTimeUnixNano != root.EndTimeUnixNano {
		t.Errorf("the committed attempt's span ends at %d, the request at %d: it streamed until the cut", kids[0].EndTimeUnixNano, root.EndTimeUnixNano)
	}
}

// TestTraceOfACacheHit: the second identical request is answered from the
// response cache: its server span says so, and it has no client span (no
// upstream call).
func TestTraceOfACacheHit(t *testing.T) {
	og := newOtelGateway(t)
	const miss, hit = "11111111111111111111111111111111", "22222222222222222222222222222222"
	for _, tid := range []string{miss, hit} {
		if status, body := og.chat(t, "cached", "same question", map[string]string{"traceparent": "00-" + tid + "-00f067aa0ba902b7-01"}); status != 200 {
			t.Fatalf("chat: %d %s", status, body)
		}
	}
	og.flush(t)
	root, kids := og.rc.trace(t, miss)
	if attr(root, "llmgw.cache.hit").GetBoolValue() || attrStr(root, "llmgw.cache") != "miss" || len(kids) != 1 {
		t.Errorf("the miss: %v, %d client spans", root.Attributes, len(kids))
	}
	root, kids = og.rc.trace(t, hit)
	if !attr(root, "llmgw.cache.hit").GetBoolValue() || attrStr(root, "llmgw.cache") != "hit" || len(kids) != 0 {
		t.Errorf("the hit: %v, %d client spans", root.Attributes, len(kids))
	}
}

// TestTraceContentOnlyWhereTheRouteOptsIn: a route with trace_content
// exports the prompt and the answer as the GenAI details event; a route
// without it exports neither.
func TestTraceContentOnlyWhereTheRouteOptsIn(t *testing.T) {
	og := newOtelGateway(t)
	const told, quiet = "33333333333333333333333333333333", "44444444444444444444444444444444"
	og.chat(t, "told", "TOLD-PROMPT", map[string]string{"traceparent": "00-" + told + "-00f067aa0ba902b7-01"})
	og.chat(t, "cached", "QUIET-PROMPT", map[string]string{"traceparent": "00-" + quiet + "-00f067aa0ba902b7-01"})
	og.flush(t)
	root, _ := og.rc.trace(t, told)
	var ev *tracepb.Span_Event
	for _, e := range root.Events {
		if e.Name == "gen_ai.client.inference.operation.details" {
			ev = e
		}
	}
	if ev == nil {
		t.Fatalf("no content event on the opted-in route: %v", root.Events)
	}
	if in := attrStr(ev, "gen_ai.input.messages"); !strings.Contains(in, `"content":"TOLD-PROMPT"`) || !strings.Contains(in, `"role":"user"`) {
		t.Errorf("input messages %s", in)
	}
	if out := attrStr(ev, "gen_ai.output.messages"); !strings.Contains(out, `"content":"Hello"`) || !strings.Contains(out, `"finish_reason":"stop"`) {
		t.Errorf("output messages %s", out)
	}
	root, _ = og.rc.trace(t, quiet)
	if len(root.Events) != 0 {
		t.Errorf("events on a route without trace_content: %v", root.Events)
	}
	og.rc.mu.Lock()
	defer og.rc.mu.Unlock()
	if strings.Contains(og.rc.raw.String(), "QUIET-PROMPT") {
		t.Error("the prompt of a route without trace_content was exported")
	}
}

// TestGenAIMetricsPerRouteTargetTeam: the GenAI client histograms arrive
// per route, target and team: tokens by type, duration, time to first
// chunk of streams.
func TestGenAIMetricsPerRouteTargetTeam(t *testing.T) {
	og := newOtelGateway(t)
	og.chat(t, "m", "hi", nil)
	og.chat(t, "m", "hi again", nil)
	og.flush(t)
	og.rc.mu.Lock()
	defer og.rc.mu.Unlock()
	if og.rc.metrics == nil {
		t.Fatal("no metrics exported")
	}
	found := map[string]bool{}
	for _, rm := range og.rc.metrics.ResourceMetrics {
		if attrStr(rm.Resource, "service.name") != "llmgw" {
			t.Errorf("resource %v", rm.Resource.Attributes)
		}
		for _, sm := range rm.ScopeMetrics {
			for _, m := range sm.Metrics {
				h := m.GetHistogram()
				if h == nil {
					continue
				}
				for _, dp := range h.DataPoints {
					if attrStr(dp, "llmgw.route") != "m" || attrStr(dp, "llmgw.target") != "good/gpt-b" || attrStr(dp, "llmgw.team") != "search" {
						t.Errorf("%s point attributes %v", m.Name, dp.Attributes)
					}
					key := m.Name + "/" + attrStr(dp, "gen_ai.token.type")
					found[key] = true
					switch key {
					case "gen_ai.client.token.usage/input":
						if dp.Count != 2 || dp.GetSum() != 22 {
							t.Errorf("input tokens: count %d sum %v", dp.Count, dp.GetSum())
						}
					case "gen_ai.client.token.usage/output":
						if dp.Count != 2 || dp.GetSum() != 6 {
							t.Errorf("output tokens: count %d sum %v", dp.Count, dp.GetSum())
						}
					case "gen_ai.client.operation.duration/", "gen_ai.client.operation.time_to_first_chunk/":
						if dp.Count != 2 || m.Unit != "s" {
							t.Errorf("%s: count %d unit %s", m.Name, dp.Count, m.Unit)
						}
					}
				}
			}
		}
	}
	for _, k := range []string{"gen_ai.client.token.usage/input", "gen_ai.client.token.usage/output", "gen_ai.client.operation.duration/",
		"gen_ai.client.operation.time_to_first_chunk/"} {
		if !found[k] {
			t.Errorf("missing %s in %v", k, found)
		}
	}
}
