package server_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"strings"
	"testing"

	anthropic "github.com/anthropics/anthropic-sdk-go/v2"
	aoption "github.com/anthropics/anthropic-sdk-go/v2/option"

	"github.com/llmgw/llmgw/pkg/config"
	"github.com/llmgw/llmgw/pkg/exchange"
	"github.com/llmgw/llmgw/pkg/server"
	"github.com/llmgw/llmgw/pkg/store/embedded"
	"github.com/llmgw/llmgw/pkg/teams"
)

// count_tokens goes through the failover engine like every upstream call
// (issue 22): its rate limit is kept apart from generation's, it is
// admitted under the team's limits, writes one usage record and fails
// over.

var countParams = anthropic.MessageCountTokensParams{Model: "claude",
	Messages: []anthropic.MessageParam{anthropic.NewUserMessage(anthropic.NewTextBlock("Hello, world"))}}

// count_tokens' own 429 (Anthropic rate-limits it apart) on the key every
// team shares must not set that key aside for Messages: the next Messages
// request is served, not refused with 502 "no usable provider key".
func TestCountTokens429DoesNotSetTheKeyAsideForMessages(t *testing.T) {
	up := newUpstream(t, func(w http.ResponseWriter, r *http.Request, body []byte, n int) {
		if r.URL.Path == "/v1/messages/count_tokens" {
			w.Header().Set("Content-Type", "application/json")
			w.Header().Set("retry-after", "30")
			w.WriteHeader(http.StatusTooManyRequests)
			io.WriteString(w, `{"type":"error","error":{"type":"rate_limit_error","message":"Number of count_tokens requests has exceeded your rate limit"}}`)
			return
		}
		anthropicOK(w, r, body, n)
	})
	g := newGateway(t, msgRoute(t, "", "anthropic="+up.URL))
	client := g.anthropicSDK()
	var raw *http.Response
	n, err := client.Messages.CountTokens(context.Background(), countParams, aoption.WithResponseInto(&raw))
	if err != nil || raw.Header.Get("x-gateway-estimate") != "true" || n.InputTokens != 10 {
		t.Fatalf("count with its upstream rate-limited: %+v, %v; want the estimate", n, err)
	}
	msg, err := client.Messages.New(context.Background(), anthropic.MessageNewParams{Model: "claude", MaxTokens: 64,
		Messages: []anthropic.MessageParam{anthropic.NewUserMessage(anthropic.NewTextBlock("hi"))}})
	if err != nil || len(msg.Content) == 0 || msg.Content[0].Text != "Hello from Claude" {
		t.Fatalf("Messages after a count_tokens 429: %v, %v", msg, err)
	}
	// The count slot itself is set aside: the next count is estimated
	// without an upstream call.
	hits := up.hits.Load()
	if _, err := client.Messages.CountTokens(context.Background(), countParams); err != nil || up.hits.Load() != hits {
		t.Fatalf("second count: %v, %d new upstream calls", err, up.hits.Load()-hits)
	}
}

// A count is admitted under the team's rate limits (refused at once when
// they are spent, no upstream call) and writes one usage record: the
// target that counted, no tokens.
func TestCountTokensIsLimitedAndRecorded(t *testing.T) {
	up := newUpstream(t, func(w http.ResponseWriter, r *http.Request, body []byte, n int) {
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, `{"input_tokens":2095}`)
	})
	yaml := msgRoute(t, "", "anthropic="+up.URL) + fmt.Sprintf(`
teams:
  core:
    keys: [{id: k1, sha256: %q}]
    limits: {requests_per_minute: 2}
`, teams.HashKey(teamKey))
	cfg, err := config.Parse([]byte(yaml))
	if err != nil {
		t.Fatal(err)
	}
	current := func() *config.Config { return cfg }
	log := slog.New(slog.DiscardHandler)
	lim := teams.NewLimiter(embedded.OpenMemory(), current, log)
	auth := teams.NewAuthenticator(current, log)
	g := newGateway(t, yaml, func(o *server.Options) { o.Authenticate, o.Admit = auth.Authenticate, lim.Admit })
	client := g.anthropicSDK(aoption.WithAPIKey(teamKey))
	for i := range 2 {
		if n, err := client.Messages.CountTokens(context.Background(), countParams); err != nil || n.InputTokens != 2095 {
			t.Fatalf("count %d: %v, %v", i, n, err)
		}
	}
	recs := g.waitRecs(t, 2)
	for _, rec := range recs {
		if rec.Operation != exchange.OperationCountTokens || rec.Team != "core" || rec.Target != "p0/up-model-0" || rec.Status != 200 ||
			rec.Outcome != "ok" || rec.OutputTokens != 0 || rec.InputTokens != 0 || len(rec.Attempts) != 1 {
			t.Fatalf("record %+v", rec)
		}
	}
	_, err = client.Messages.CountTokens(context.Background(), countParams)
	var ae *anthropic.Error
	if !errors.As(err, &ae) || ae.StatusCode != 429 || ae.Type() != "rate_limit_error" || ae.Response.Header.Get("Retry-After") == "" {
		t.Fatalf("count over the team's requests per minute: %v", err)
	}
	if up.hits.Load() != 2 {
		t.Fatalf("%d upstream calls, want 2: a refused count must not reach the upstream", up.hits.Load())
	}
	if recs := g.waitRecs(t, 3); recs[2].Outcome != "rate_limited" || recs[2].Operation != exchange.OperationCountTokens {
		t.Fatalf("refused count's record %+v", recs[2])
	}
}

// A count fails over like a generation: the first target 503s, the second
// counts.
func TestCountTokensFailsOverToTheNextTarget(t *testing.T) {
	down := newUpstream(t, func(w http.ResponseWriter, r *http.Request, body []byte, n int) {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusServiceUnavailable)
		io.WriteString(w, `{"type":"error","error":{"type":"api_error","message":"unavailable"}}`)
	})
	up := newUpstream(t, func(w http.ResponseWriter, r *http.Request, body []byte, n int) {
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, `{"input_tokens":42}`)
	})
	g := newGateway(t, msgRoute(t, "", "anthropic="+down.URL, "anthropic="+up.URL))
	var raw *http.Response
	client := g.anthropicSDK()
	n, err := client.Messages.CountTokens(context.Background(), countParams, aoption.WithResponseInto(&raw))
	if err != nil || n.InputTokens != 42 || raw.Header.Get("x-gateway-estimate") != "" || raw.Header.Get("x-gateway-provider") != "p1" {
		t.Fatalf("count = %+v, %v, provider %q", n, err, raw.Header.Get("x-gateway-provider"))
	}
	if down.hits.Load() != 1 || up.hits.Load() != 1 || !strings.Contains(string(up.body(0)), `"model":"up-model-1"`) {
		t.Fatalf("calls: down %d, up %d", down.hits.Load(), up.hits.Load())
	}
	rec := g.waitRecs(t, 1)[0]
	if rec.Target != "p1/up-model-1" || rec.FallbackDepth != 1 || len(rec.Attempts) != 2 || rec.Attempts[0].Status != 503 {
		t.Fatalf("record %+v", rec)
	}
}
