package telemetry

import (
	"crypto/rand"
	"encoding/hex"
	"net/url"
	"strings"
	"time"

	commonpb "go.opentelemetry.io/proto/otlp/common/v1"
	tracepb "go.opentelemetry.io/proto/otlp/trace/v1"

	"github.com/llmgw/llmgw/pkg/config"
	"github.com/llmgw/llmgw/pkg/exchange"
	"github.com/llmgw/llmgw/pkg/traceid"
)

// operation is the gen_ai.operation.name of a request.
func operation(rec *exchange.Record) string {
	switch {
	case rec.Operation != "":
		return rec.Operation
	case rec.API == exchange.Embeddings:
		return "embeddings"
	}
	return "chat"
}

// failed reports whether an outcome is an error (error.type).
func failed(outcome string) bool {
	return outcome != "" && outcome != "ok" && outcome != "client_cancelled"
}

// spanID decodes a hex id, or makes a new random one when it is empty or
// not valid.
func spanID(hexID string) []byte {
	if b, err := hex.DecodeString(hexID); err == nil && len(b) == 8 {
		return b
	}
	b := make([]byte, 8)
	rand.Read(b)
	return b
}

func unixNano(t time.Time) uint64 {
	if t.IsZero() {
		return 0
	}
	return uint64(t.UnixNano())
}

// modelOf is the model part of a "provider/model" target.
func modelOf(target string) string {
	_, m, _ := strings.Cut(target, "/")
	return m
}

// serverAddress is the host a provider's calls go to ("" when the kind
// has no base URL: its SDK's default).
func serverAddress(p *config.Provider) string {
	if p == nil || p.BaseURL == "" {
		return ""
	}
	u, err := url.Parse(p.BaseURL)
	if err != nil {
		return ""
	}
	return u.Hostname()
}

// Spans turns one finished request into its spans: the server span
// (the request as the gateway served it, child of the caller's span) and
// one client span per upstream attempt, children of the server span.
// Targets skipped without a call (breaker open, no key) are events of the
// server span. Nothing here names a key: attempts carry key fingerprints,
// and those are left out too. Prompt and completion text is added only
// when content is set (the route's trace_content).
func Spans(cfg *config.Config, tc traceid.Context, req *exchange.Request, rec *exchange.Record, content *Content) []*tracepb.Span {
	tid, err := hex.DecodeString(tc.TraceID)
	if err != nil || len(tid) != 16 {
		return nil
	}
	op := operation(rec)
	start := rec.Time
	end := start.Add(time.Duration(rec.LatencyMillis * float64(time.Millisecond)))
	root := &tracepb.Span{TraceId: tid, SpanId: spanID(tc.SpanID), Kind: tracepb.Span_SPAN_KIND_SERVER,
		Name: strings.TrimSpace(op + " " + rec.Route), StartTimeUnixNano: unixNano(start), EndTimeUnixNano: unixNano(end)}
	if tc.ParentID != "" {
		root.ParentSpanId = spanID(tc.ParentID)
	}
	a := []*commonpb.KeyValue{str(AttrOperation, op), str(AttrRequestID, rec.RequestID), str(AttrAPI, string(rec.API)),
		num(AttrHTTPStatus, int64(rec.Status)), str(AttrOutcome, rec.Outcome), str(AttrTraceSource, tc.Source)}
	if rec.Route != "" {
		a = append(a, str(AttrRequestModel, rec.Route), str(AttrRoute, rec.Route))
	}
	if rec.Team != "" {
		a = append(a, str(AttrTeam, rec.Team))
	}
	if rec.Tag != "" {
		a = append(a, str(AttrTag, rec.Tag))
	}
	if rec.Target != "" {
		a = append(a, str(AttrTarget, rec.Target), str(AttrResponseModel, modelOf(rec.Target)),
			str(AttrProvider, providerName(kindOf(cfg, rec.Provider))))
	}
	a = append(a, num(AttrFallbackDepth, int64(rec.FallbackDepth)), num(AttrAttempts, int64(generationAttempts(rec))),
		boolean(AttrCacheHit, rec.ResponseCache == "hit"))
	if rec.ResponseCache != "" {
		a = append(a, str(AttrCache, rec.ResponseCache))
	}
	a = append(a, num(AttrInputTokens, int64(rec.InputTokens)), num(AttrOutputTokens, int64(rec.OutputTokens)))
	if len(rec.FinishReasons) > 0 {
		a = append(a, strs(AttrFinishReasons, rec.FinishReasons))
	}
	if rec.Stream && rec.TTFTMillis > 0 {
		a = append(a, flt(AttrTTFC, rec.TTFTMillis/1000))
	}
	if failed(rec.Outcome) {
		a = append(a, str(AttrErrorType, rec.Outcome))
		root.Status = &tracepb.Status{Code: tracepb.Status_STATUS_CODE_ERROR, Message: rec.Outcome}
	}
	root.Attributes = a
	if content != nil {
		root.Events = append(root.Events, content.event(end))
	}
	spans := []*tracepb.Span{root}
	spans = append(spans, attemptSpans(cfg, root, req, rec, op, end)...)
	return spans
}

func kindOf(cfg *config.Config, provider string) string {
	if cfg == nil {
		return ""
	}
	if p := cfg.Providers[provider]; p != nil {
		return p.Kind
	}
	return ""
}

func generationAttempts(rec *exchange.Record) int {
	n := 0
	for i := range rec.Attempts {
		if rec.Attempts[i].Stage == "" && rec.Attempts[i].Skipped == "" {
			n++
		}
	}
	return n
}

// chainIndex is the position of target in the request's chain (its
// fallback depth), -1 when it is not in it.
func chainIndex(req *exchange.Request, target string) int {
	if req == nil {
		return -1
	}
	for i, s := range req.Steps {
		if s.ID == target {
			return i
		}
	}
	return -1
}

// forced is the operator's breaker override of target in the chain.
func forced(req *exchange.Request, target string) string {
	if req == nil {
		return ""
	}
	for _, s := range req.Steps {
		if s.ID == target {
			return s.Breaker
		}
	}
	return ""
}

// attemptSpans are the client spans of the upstream attempts. A
// successful attempt committed the response: its span lasts until the
// next successful one took over (a mid-stream continuation: it was cut)
// or the request ended, and the last one carries the usage, the finish
// reasons and, when the request failed after the commit (a cut stream),
// the error.
func attemptSpans(cfg *config.Config, root *tracepb.Span, req *exchange.Request, rec *exchange.Record, op string, end time.Time) []*tracepb.Span {
	var out []*tracepb.Span
	perTarget := map[string]int{}
	lastOK := -1
	for i := range rec.Attempts {
		at := &rec.Attempts[i]
		if at.Skipped == "" && at.Category == "" && at.Stage == "" {
			lastOK = i
		}
	}
	var served []*tracepb.Span // the committed attempts' spans, in order
	for i := range rec.Attempts {
		at := &rec.Attempts[i]
		prov, model, _ := config.SplitTargetID(at.Target)
		if at.Skipped != "" {
			decision := "skipped"
			if f := forced(req, at.Target); f != "" {
				decision = "forced_" + f
			}
			root.Events = append(root.Events, &tracepb.Span_Event{Name: EventSkipped, TimeUnixNano: unixNano(at.Start),
				Attributes: []*commonpb.KeyValue{str(AttrTarget, at.Target), str(AttrSkipped, at.Skipped), str(AttrBreaker, decision)}})
			continue
		}
		perTarget[at.Target]++
		var p *config.Provider
		if cfg != nil {
			p = cfg.Providers[prov]
		}
		start := at.Start
		if start.IsZero() {
			start = rec.Time
		}
		s := &tracepb.Span{TraceId: root.TraceId, SpanId: spanID(""), ParentSpanId: root.SpanId, Kind: tracepb.Span_SPAN_KIND_CLIENT,
			Name: op + " " + model, StartTimeUnixNano: unixNano(start), EndTimeUnixNano: unixNano(start.Add(at.Latency))}
		decision := "allowed"
		if f := forced(req, at.Target); f != "" {
			decision = "forced_" + f
		}
		a := []*commonpb.KeyValue{str(AttrOperation, op), str(AttrProvider, providerName(kindOf(cfg, prov))), str(AttrRequestModel, model),
			str(AttrTarget, at.Target), num(AttrAttempt, int64(perTarget[at.Target])), str(AttrBreaker, decision)}
		if d := chainIndex(req, at.Target); d >= 0 {
			a = append(a, num(AttrFallbackDepth, int64(d)))
		}
		if addr := serverAddress(p); addr != "" {
			a = append(a, str(AttrServerAddress, addr))
		}
		if rec.Route != "" {
			a = append(a, str(AttrRoute, rec.Route))
		}
		if rec.Team != "" {
			a = append(a, str(AttrTeam, rec.Team))
		}
		if at.Status != 0 {
			a = append(a, num(AttrHTTPStatus, int64(at.Status)))
		}
		if at.Stage != "" {
			a = append(a, str(AttrStage, at.Stage))
		}
		if at.Continues {
			a = append(a, boolean(AttrContinues, true))
		}
		switch {
		case at.Category != "":
			a = append(a, str(AttrErrorType, string(at.Category)), str(AttrCategory, string(at.Category)))
			if at.Phase != "" {
				a = append(a, str(AttrPhase, at.Phase))
			}
			s.Status = &tracepb.Status{Code: tracepb.Status_STATUS_CODE_ERROR, Message: string(at.Category)}
		case at.Stage == "":
			// It committed the response: its span runs on while the
			// answer streams.
			if n := len(served); n > 0 {
				prev := served[n-1]
				prev.EndTimeUnixNano = s.StartTimeUnixNano
				prev.Attributes = append(prev.Attributes, str(AttrErrorType, "interrupted"), str(AttrCategory, "interrupted"))
				prev.Status = &tracepb.Status{Code: tracepb.Status_STATUS_CODE_ERROR, Message: "interrupted"}
			}
			s.EndTimeUnixNano = unixNano(end)
			served = append(served, s)
			if i == lastOK {
				a = append(a, str(AttrResponseModel, model), num(AttrInputTokens, int64(rec.InputTokens)), num(AttrOutputTokens, int64(rec.OutputTokens)))
				if len(rec.FinishReasons) > 0 {
					a = append(a, strs(AttrFinishReasons, rec.FinishReasons))
				}
				if failed(rec.Outcome) {
					a = append(a, str(AttrErrorType, rec.Outcome), str(AttrCategory, rec.Outcome))
					s.Status = &tracepb.Status{Code: tracepb.Status_STATUS_CODE_ERROR, Message: rec.Outcome}
				}
			}
		default:
			a = append(a, num(AttrInputTokens, int64(at.InputTokens)), num(AttrOutputTokens, int64(at.OutputTokens)))
		}
		s.Attributes = a
		out = append(out, s)
	}
	return out
}
