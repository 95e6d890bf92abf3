package bedrockwire

import (
	"testing"

	"github.com/llmgw/llmgw/pkg/wire/delta"
)

// The usage readers take the 1-hour cache writes from cacheDetails and the
// serving tier from the serviceTier beside the usage, in the stream's
// metadata event and in a whole Converse body alike.
func TestReadUsageCarriesOneHourWritesAndTier(t *testing.T) {
	const usage = `"usage":{"inputTokens":100,"outputTokens":5,"cacheReadInputTokens":1000,"cacheWriteInputTokens":500,` +
		`"cacheDetails":[{"ttl":"5m","inputTokens":200},{"ttl":"1h","inputTokens":300}]},"serviceTier":{"type":"priority"}`
	want := Usage{Input: 100, Output: 5, CacheRead: 1000, CacheWrite: 500, CacheWrite1h: 300, Tier: "priority"}
	ei, parts := ReadEvent(nil, EventMetadata, []byte(`{`+usage+`,"metrics":{"latencyMs":3}}`))
	if !ei.HasUsage || ei.Usage != want {
		t.Errorf("metadata event: %+v, want %+v", ei.Usage, want)
	}
	if len(parts) != 1 || parts[0].Usage != (delta.Tokens{Input: 1600, Output: 5, CacheRead: 1000, CacheWrite: 500, CacheWrite1h: 300, Tier: "priority"}) {
		t.Errorf("metadata parts %+v", parts)
	}
	ei, _ = ReadResponse(nil, []byte(`{"output":{"message":{"role":"assistant","content":[{"text":"hi"}]}},"stopReason":"end_turn",`+usage+`}`))
	if !ei.HasUsage || ei.Usage != want {
		t.Errorf("whole body: %+v, want %+v", ei.Usage, want)
	}
}
