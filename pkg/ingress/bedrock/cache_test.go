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

// A Converse and a ConverseStream passed through to a Bedrock target are
// cached from the upstream's own body and frames (read back by the
// ingress's decoder) and replayed without an upstream call.
func TestConversePassthroughIsCachedAndReplayed(t *testing.T) {
	t.Setenv("AWS_ACCESS_KEY_ID", "AKIAIOSFODNN7EXAMPLE")
	t.Setenv("AWS_SECRET_ACCESS_KEY", "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY")
	t.Setenv("AWS_BEARER_TOKEN_BEDROCK", "")
	var rec recorder
	up := fakeConverseBedrock(t, &rec)
	g := gatewayRoute(t, fmt.Sprintf("  live: {kind: bedrock, region: us-east-1, endpoint: %q}\n", up.URL),
		"amazon.nova-pro-v1:0", "    cache: {enabled: true}\n")
	c := goClient(g, teamKey)
	ctx := context.Background()
	for i := range 2 {
		out, err := c.Converse(ctx, &bedrockruntime.ConverseInput{ModelId: aws.String("claude"), Messages: userText("Say hello")})
		if err != nil {
			t.Fatalf("Converse %d: %v", i, err)
		}
		if got := out.Output.(*types.ConverseOutputMemberMessage).Value.Content[0].(*types.ContentBlockMemberText).Value; got != "Hello from Bedrock" ||
			out.StopReason != types.StopReasonEndTurn || aws.ToInt32(out.Usage.OutputTokens) != 4 {
			t.Errorf("converse %d: %q stop %q usage %+v", i, got, out.StopReason, out.Usage)
		}
		// Another prompt: the stream is cached from its own frames.
		s, err := c.ConverseStream(ctx, &bedrockruntime.ConverseStreamInput{ModelId: aws.String("claude"), Messages: userText("Say hello again")})
		if err != nil {
			t.Fatalf("ConverseStream %d: %v", i, err)
		}
		var text strings.Builder
		var stop types.StopReason
		for ev := range s.GetStream().Events() {
			switch v := ev.(type) {
			case *types.ConverseStreamOutputMemberContentBlockDelta:
				text.WriteString(v.Value.Delta.(*types.ContentBlockDeltaMemberText).Value)
			case *types.ConverseStreamOutputMemberMessageStop:
				stop = v.Value.StopReason
			}
		}
		if err := s.GetStream().Err(); err != nil || text.String() != "Hello from Bedrock" || stop != types.StopReasonEndTurn {
			t.Errorf("stream %d: %q stop %q: %v", i, text.String(), stop, err)
		}
	}
	rec.mu.Lock()
	n := len(rec.paths)
	rec.mu.Unlock()
	if n != 2 {
		t.Errorf("%d upstream requests for two distinct requests sent twice, want 2", n)
	}
}
