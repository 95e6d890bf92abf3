package provider

import (
	"slices"
	"testing"

	"github.com/llmgw/llmgw/pkg/config"
	"github.com/llmgw/llmgw/pkg/exchange"
	"github.com/llmgw/llmgw/pkg/gwerr"
)

// Refuse refuses a feature the route does not let translating targets drop,
// naming the target, the parameter and the feature; a feature the route's
// translate_without lists is dropped (nil) and noted once on the trace for
// that target.
func TestRefuse(t *testing.T) {
	req := &exchange.Request{}
	call := &Call{Req: req, Step: config.Step{ID: "p0/m"}}
	e := Refuse(call, "thinking", "thinking", "adaptive thinking")
	if e == nil || e.Category != gwerr.InvalidRequest || e.Code != CodeUnsupportedFeature || e.Param != "thinking" ||
		e.Message != "adaptive thinking is not supported by target p0/m" {
		t.Fatalf("refusal = %+v", e)
	}
	if len(req.Trace.Dropped) != 0 {
		t.Errorf("a refusal noted a drop: %v", req.Trace.Dropped)
	}

	req.Policy.TranslateWithout = []string{"top_k", "thinking"}
	for range 2 {
		if e := Refuse(call, "thinking", "thinking", "adaptive thinking"); e != nil {
			t.Fatalf("thinking is in translate_without, got %v", e)
		}
	}
	if e := Refuse(call, "is_error", "messages[1].content[0].is_error", "is_error"); e == nil {
		t.Error("is_error is not in translate_without and was dropped")
	}
	other := &Call{Req: req, Step: config.Step{ID: "p1/n"}}
	if e := Refuse(other, "top_k", "top_k", "top_k"); e != nil {
		t.Fatal(e)
	}
	if got := req.Trace.DroppedBy("p0/m"); !slices.Equal(got, []string{"thinking"}) {
		t.Errorf("p0/m dropped %v", got)
	}
	if got := req.Trace.DroppedBy("p1/n"); !slices.Equal(got, []string{"top_k"}) {
		t.Errorf("p1/n dropped %v", got)
	}
}
