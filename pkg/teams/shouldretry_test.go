package teams_test

import (
	"context"
	"errors"
	"net/http"
	"testing"

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"
)

// TestLimitRefusalsTellSDKsNotToRetry: a team's rate-limit or budget
// refusal carries x-should-retry: false and Retry-After, so the official
// SDK with its default retries makes one call, not three (issue 13, item
// 11).
func TestLimitRefusalsTellSDKsNotToRetry(t *testing.T) {
	for _, tc := range []struct {
		limits, category string
		before           int // requests admitted before the refusal
	}{
		{"limits: {requests_per_minute: 1}", "rate_limited", 1},
		{"limits: {cost_per_day_usd: 0.000001}", "budget_exceeded", 0},
	} {
		t.Run(tc.category, func(t *testing.T) {
			g := newGW(t, gwOptions{open: openEmbedded, limits: tc.limits})
			for i := 0; i < tc.before; i++ {
				if resp, body := g.call(t, g.keys["search"], chatBody); resp.StatusCode != 200 {
					t.Fatalf("admitted request: %d %s", resp.StatusCode, body)
				}
			}
			client := openai.NewClient(option.WithBaseURL(g.URL+"/v1"), option.WithAPIKey(g.keys["search"])) // default retries
			var raw *http.Response
			_, err := client.Chat.Completions.New(context.Background(), openai.ChatCompletionNewParams{
				Model: "m", Messages: []openai.ChatCompletionMessageParamUnion{openai.UserMessage("hi")}}, option.WithResponseInto(&raw))
			var apiErr *openai.Error
			if !errors.As(err, &apiErr) || apiErr.StatusCode != 429 || raw.Header.Get("x-gateway-error-category") != tc.category {
				t.Fatalf("err %v, want a 429 %s", err, tc.category)
			}
			if raw.Header.Get("x-should-retry") != "false" || raw.Header.Get("Retry-After") == "" {
				t.Errorf("x-should-retry %q, Retry-After %q: want false and a wait", raw.Header.Get("x-should-retry"), raw.Header.Get("Retry-After"))
			}
			g.inflight.Wait()
			if n := len(g.records(t, "search")); n != tc.before+1 {
				t.Errorf("%d requests reached the gateway, want %d: the SDK retried a refusal", n, tc.before+1)
			}
		})
	}
}
