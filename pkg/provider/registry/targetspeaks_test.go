package registry

import (
	"context"
	"slices"
	"testing"

	"github.com/llmgw/llmgw/pkg/config"
	"github.com/llmgw/llmgw/pkg/exchange"
	"github.com/llmgw/llmgw/pkg/provider"
)

// Whether a provider speaks the client's API is asked per target: a
// Bedrock target whose model is Claude speaks Messages (its kind's
// TargetSpeaks) and gets what only Messages carries; one whose model is
// not is refused it, unless translate_without lets it drop, which the
// guard notes on the trace for the response to name.
func TestGuardAsksWhetherTheTargetSpeaksTheAPI(t *testing.T) {
	lost := []exchange.Feature{{Param: "context_management", Key: "context_management", What: "field"}}
	for _, tc := range []struct {
		model string
		allow []string
		serve bool
		drops []string
	}{
		{"us.anthropic.claude-sonnet-4-5-20250929-v1:0", nil, true, nil},
		{"amazon.nova-pro-v1:0", nil, false, nil},
		{"amazon.nova-pro-v1:0", []string{"context_management"}, true, []string{"context_management"}},
	} {
		next := &countingProvider{}
		g := guard("bedrock", nil, next)
		call := &provider.Call{Req: &exchange.Request{API: exchange.Messages, Untranslated: lost, Policy: config.Policy{TranslateWithout: tc.allow}},
			Step: config.Step{ID: "br/" + tc.model, Model: tc.model}}
		_, err := g.Send(context.Background(), call)
		if (err == nil) != tc.serve || (next.calls.Load() == 1) != tc.serve {
			t.Errorf("%s %v: err %v, calls %d", tc.model, tc.allow, err, next.calls.Load())
		}
		if got := call.Req.Trace.DroppedBy(call.Step.ID); !slices.Equal(got, tc.drops) {
			t.Errorf("%s %v: dropped %q, want %q", tc.model, tc.allow, got, tc.drops)
		}
	}
}
