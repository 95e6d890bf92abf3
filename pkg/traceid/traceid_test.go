package traceid

import (
	"context"
	"net/http/httptest"
	"regexp"
	"testing"
)

var (
	traceRe = regexp.MustCompile(`^[0-9a-f]{32}$`)
	spanRe  = regexp.MustCompile(`^[0-9a-f]{16}$`)
)

func TestParseTraceparent(t *testing.T) {
	c, ok := ParseTraceparent("00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01")
	if !ok || c.TraceID != "4bf92f3577b34da6a3ce929d0e0e4736" || !c.Sampled || !spanRe.MatchString(c.SpanID) || c.SpanID == "00f067aa0ba902b7" {
		t.Fatalf("parsed %+v %v", c, ok)
	}
	if got := c.Traceparent(); got != "00-4bf92f3577b34da6a3ce929d0e0e4736-"+c.SpanID+"-01" {
		t.Errorf("traceparent = %q", got)
	}
	if c, ok := ParseTraceparent("00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-00"); !ok || c.Sampled {
		t.Errorf("unsampled: %+v %v", c, ok)
	}
	if _, ok := ParseTraceparent("01-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01-future"); !ok {
		t.Error("a later version with more fields is read as version 00")
	}
	for _, bad := range []string{"", "garbage", "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7",
		"00-00000000000000000000000000000000-00f067aa0ba902b7-01", "00-4bf92f3577b34da6a3ce929d0e0e4736-0000000000000000-01",
		"00-4BF92F3577B34DA6A3CE929D0E0E4736-00f067aa0ba902b7-01", "ff-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01",
		"00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01-extra", "00-4bf92f3577b34da6a3ce929d0e0e473z-00f067aa0ba902b7-01"} {
		if c, ok := ParseTraceparent(bad); ok {
			t.Errorf("%q accepted as %+v", bad, c)
		}
	}
}

func TestParseXRay(t *testing.T) {
	c, ok := ParseXRay("Root=1-5759e988-bd862e3fe1be46a994272793;Parent=53995c3f42cd8ad8;Sampled=1")
	if !ok || c.TraceID != "5759e988bd862e3fe1be46a994272793" || !c.Sampled {
		t.Fatalf("parsed %+v %v", c, ok)
	}
	if got := c.XRay(); got != "Root=1-5759e988-bd862e3fe1be46a994272793;Parent="+c.SpanID+";Sampled=1" {
		t.Errorf("x-ray = %q", got)
	}
	if c, ok := ParseXRay("Sampled=0;Root=1-5759E988-BD862E3FE1BE46A994272793"); !ok || c.Sampled || c.TraceID != "5759e988bd862e3fe1be46a994272793" {
		t.Errorf("reordered fields: %+v %v", c, ok)
	}
	for _, bad := range []string{"", "Root=2-5759e988-bd862e3fe1be46a994272793", "Root=1-5759e988-bd86", "Parent=53995c3f42cd8ad8", "Self=1-5759e988-bd862e3fe1be46a994272793"} {
		if c, ok := ParseXRay(bad); ok {
			t.Errorf("%q accepted as %+v", bad, c)
		}
	}
}

// TestFromRequestPrecedence: traceparent, then X-Amzn-Trace-Id, then the
// Lambda invocation's trace (context, then environment), then generated.
func TestFromRequestPrecedence(t *testing.T) {
	t.Setenv("_X_AMZN_TRACE_ID", "")
	const tp = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"
	const xr = "Root=1-5759e988-bd862e3fe1be46a994272793"
	const lam = "Root=1-66666666-777777777777777777777777;Parent=1111111111111111;Sampled=1"
	r := httptest.NewRequest("POST", "/v1/chat/completions", nil)
	r.Header.Set("traceparent", tp)
	r.Header.Set("X-Amzn-Trace-Id", xr)
	r = r.WithContext(context.WithValue(r.Context(), lambdaKey, lam))
	if c := FromRequest(r); c.TraceID != "4bf92f3577b34da6a3ce929d0e0e4736" || c.Source != "traceparent" {
		t.Errorf("with traceparent: %+v", c)
	}
	r.Header.Set("traceparent", "not-valid")
	if c := FromRequest(r); c.TraceID != "5759e988bd862e3fe1be46a994272793" || c.Source != "x-amzn-trace-id" {
		t.Errorf("with X-Amzn-Trace-Id: %+v", c)
	}
	r.Header.Del("X-Amzn-Trace-Id")
	if c := FromRequest(r); c.TraceID != "66666666777777777777777777777777" || c.Source != "lambda" {
		t.Errorf("on Lambda (context): %+v", c)
	}
	r = httptest.NewRequest("POST", "/", nil)
	t.Setenv("_X_AMZN_TRACE_ID", lam)
	if c := FromRequest(r); c.TraceID != "66666666777777777777777777777777" || c.Source != "lambda" {
		t.Errorf("on Lambda (environment): %+v", c)
	}
	t.Setenv("_X_AMZN_TRACE_ID", "")
	a, b := FromRequest(r), FromRequest(r)
	if a.Source != "generated" || !traceRe.MatchString(a.TraceID) || !spanRe.MatchString(a.SpanID) || a.TraceID == b.TraceID || !a.Sampled {
		t.Errorf("generated: %+v, %+v", a, b)
	}
}

func TestContextCarriesTheTraceID(t *testing.T) {
	if From(context.Background()) != "" {
		t.Error("a bare context has a trace id")
	}
	if From(With(context.Background(), "abc")) != "abc" {
		t.Error("With/From lost the id")
	}
}

// TestParentIsTheCallersSpan: the caller's span id (traceparent's
// parent-id, X-Ray's Parent) is kept as ParentID, and WithSpan carries the
// whole context.
func TestParentIsTheCallersSpan(t *testing.T) {
	c, _ := ParseTraceparent("00-4bf92f3577b34da6a3ce929d0e0e4736-00F067AA0BA902B7-01")
	if c.ParentID != "00f067aa0ba902b7" {
		t.Errorf("traceparent parent %q", c.ParentID)
	}
	x, _ := ParseXRay("Root=1-5759e988-bd862e3fe1be46a994272793;Parent=53995c3f42cd8ad8;Sampled=1")
	if x.ParentID != "53995c3f42cd8ad8" {
		t.Errorf("x-ray parent %q", x.ParentID)
	}
	if x, _ := ParseXRay("Root=1-5759e988-bd862e3fe1be46a994272793;Parent=zz"); x.ParentID != "" {
		t.Errorf("an invalid Parent was kept: %q", x.ParentID)
	}
	if New().ParentID != "" {
		t.Error("a new trace has a parent")
	}
	got, ok := SpanFrom(WithSpan(context.Background(), c))
	if !ok || got != c {
		t.Errorf("SpanFrom = %+v %v", got, ok)
	}
	if _, ok := SpanFrom(context.Background()); ok {
		t.Error("SpanFrom of a bare context")
	}
}
