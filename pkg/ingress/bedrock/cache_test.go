package bedrock_test

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/bedrockruntime"
	"github.com/aws/aws-sdk-go-v2/service/bedrockruntime/types"
)

// The response cache serves a repeated Bedrock request without an
// upstream call: a passthrough InvokeModelWithResponseStream (its raw
// Anthropic frames read back by the ingress's decoder) and a Converse.
func TestRepeatedRequestsServedFromTheCache(t *testing.T) {
	live := newUpstream(t, false)
	g := gatewayRoute(t, fmt.Sprintf("  live: {kind: anthropic, base_url: %q, keys: [{env: LLMGW_TEST_BEDROCK_UPSTREAM_KEY}]}\n", live.URL),
		"claude-live", "    cache: {enabled: true}\n")
	c := goClient(g, teamKey)
	ctx := context.Background()
	stream := func() string {
		out, err := c.InvokeModelWithResponseStream(ctx, &bedrockruntime.InvokeModelWithResponseStreamInput{ModelId: aws.String("claude"), Body: []byte(invokeBody)})
		if err != nil {
			t.Fatalf("InvokeModelWithResponseStream: %v", err)
		}
		var text strings.Builder
		for ev := range out.GetStream().Events() {
			b := string(ev.(*types.ResponseStreamMemberChunk).Value.Bytes)
			if i := strings.Index(b, `"text":"`); i >= 0 && strings.Contains(b, "text_delta") {
				text.WriteString(b[i+8 : strings.Index(b[i+8:], `"`)+i+8])
			}
		}
		if err := out.GetStream().Err(); err != nil {
			t.Fatal(err)
		}
		return text.String()
	}
	converse := func() string {
		out, err := c.Converse(ctx, &bedrockruntime.ConverseInput{ModelId: aws.String("claude"), Messages: userText("Say hello")})
		if err != nil {
			t.Fatalf("Converse: %v", err)
		}
		return out.Output.(*types.ConverseOutputMemberMessage).Value.Content[0].(*types.ContentBlockMemberText).Value
	}
	for i := range 2 {
		if got := stream(); got != "Hello from Claude" {
			t.Errorf("stream %d: %q", i, got)
		}
		if got := converse(); got != "Hello from Claude" {
			t.Errorf("converse %d: %q", i, got)
		}
	}
	if n := len(live.requests()); n != 2 {
		t.Errorf("%d upstream requests for two distinct requests sent twice, want 2", n)
	}
}
