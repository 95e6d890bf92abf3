package teams_test

import (
	"testing"

	"github.com/llmgw/llmgw/pkg/exchange"
	"github.com/llmgw/llmgw/pkg/teams"
)

func TestEstimateEmbedTokens(t *testing.T) {
	if got := teams.EstimateEmbedTokens(&exchange.EmbedRequest{Inputs: []string{"abcdefgh", "abc"}}); got != 3 {
		t.Errorf("texts: %d, want 3 (one token per 4 bytes, per input)", got)
	}
	if got := teams.EstimateEmbedTokens(&exchange.EmbedRequest{Tokens: [][]int{{1, 2, 3}, {4}}}); got != 4 {
		t.Errorf("token arrays: %d, want their length", got)
	}
	if got := teams.EstimateEmbedTokens(nil); got != 0 {
		t.Errorf("nil: %d", got)
	}
}
