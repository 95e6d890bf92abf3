package server_test

import (
	"context"
	"errors"
	"net/http"
	"testing"

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"
)

// Item 11: client retries must not multiply the gateway's own. An error
// answered after the gateway already retried or failed over carries
// x-should-retry: false (the OpenAI and Anthropic SDKs honour it) and the
// provider's Retry-After.

// defaultSDK is the official client as users run it: default retries (2).
func (g *gateway) defaultSDK() openai.Client {
	return openai.NewClient(option.WithBaseURL(g.URL+"/v1"), option.WithAPIKey("sk-client-test"))
}

func TestSDKCallDuringFullOutageCostsOnlyTheGatewaysAttempts(t *testing.T) {
	for _, stream := range []bool{false, true} {
		a := newUpstream(t, statusHandler(503, `{"error":{"message":"down","type":"server_error"}}`))
		b := newUpstream(t, statusHandler(503, `{"error":{"message":"down","type":"server_error"}}`))
		g := newGateway(t, oneRoute("", a.URL, b.URL)) // attempts: 2 per target (the default)
		client := g.defaultSDK()
		params := openai.ChatCompletionNewParams{Model: "m", Messages: []openai.ChatCompletionMessageParamUnion{openai.UserMessage("hi")}}
		var raw *http.Response
		var err error
		if stream {
			s := client.Chat.Completions.NewStreaming(context.Background(), params, option.WithResponseInto(&raw))
			for s.Next() {
			}
			err = s.Err()
		} else {
			_, err = client.Chat.Completions.New(context.Background(), params, option.WithResponseInto(&raw))
		}
		var apiErr *openai.Error
		if !errors.As(err, &apiErr) || apiErr.StatusCode != 503 {
			t.Fatalf("stream=%v: err %v, want the gateway's 503 (overloaded)", stream, err)
		}
		if got := raw.Header.Get("x-should-retry"); got != "false" {
			t.Errorf("stream=%v: x-should-retry %q after the gateway failed over", stream, got)
		}
		upstreamCalls := a.hits.Load() + b.hits.Load()
		if upstreamCalls != 4 || len(g.waitRecs(t, 1)) != 1 {
			t.Errorf("stream=%v: one SDK call cost %d upstream calls over %d gateway requests; want the gateway's own 4 over 1",
				stream, upstreamCalls, len(g.recs()))
		}
	}
}

func TestErrorAfterFailoverCarriesRetryAfterAndNoRetry(t *testing.T) {
	a := newUpstream(t, statusHandler(503, `{"error":{"message":"down","type":"server_error"}}`))
	b := newUpstream(t, statusHandler(429, `{"error":{"message":"slow down","type":"rate_limit_error"}}`, "Retry-After", "20"))
	g := newGateway(t, oneRoute("", a.URL, b.URL))
	var raw *http.Response
	client := g.defaultSDK()
	_, err := client.Chat.Completions.New(context.Background(), openai.ChatCompletionNewParams{
		Model: "m", Messages: []openai.ChatCompletionMessageParamUnion{openai.UserMessage("hi")}}, option.WithResponseInto(&raw))
	var apiErr *openai.Error
	if !errors.As(err, &apiErr) || apiErr.StatusCode != 429 {
		t.Fatalf("err %v, want 429", err)
	}
	if raw.Header.Get("x-should-retry") != "false" || raw.Header.Get("Retry-After") != "20" {
		t.Errorf("x-should-retry %q, Retry-After %q: want false and the provider's 20", raw.Header.Get("x-should-retry"), raw.Header.Get("Retry-After"))
	}
	if n := len(g.waitRecs(t, 1)); n != 1 || b.hits.Load() != 1 {
		t.Errorf("%d gateway requests, %d calls to the rate-limited target: the SDK retried", n, b.hits.Load())
	}
}
