package server_test

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/anthropics/anthropic-sdk-go/v2"
	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/responses"
	"github.com/tidwall/gjson"
)

// Service tiers (docs/prompt-caching.md#service-tiers): a target asks for
// its provider's tier as the provider's API names it, the record says
// which tier served, each attempt is priced at its tier, and a route
// [priority, default] of one model falls back on throttling.

const tierPrices = `
prices:
  "up-model": {input: 1, output: 10, tiers: {priority: {input: 2, output: 20}, flex: {input: 0.5, output: 5}}}
`

// priorityThrottled answers 429 to a request asking for the priority tier
// and serves every other one, echoing the tier it served at.
func priorityThrottled(w http.ResponseWriter, r *http.Request, body []byte, _ int) {
	if gjson.GetBytes(body, "service_tier").Str == "priority" {
		w.Header().Set("Content-Type", "application/json")
		w.Header().Set("retry-after-ms", "10")
		w.WriteHeader(http.StatusTooManyRequests)
		io.WriteString(w, `{"error":{"message":"Rate limit reached for priority tier","type":"requests","param":null,"code":"rate_limit_exceeded"}}`)
		return
	}
	okStream(w, r, body)
}

func TestPriorityTargetFallsBackToTheDefaultTierOnThrottling(t *testing.T) {
	up := newUpstream(t, priorityThrottled)
	t.Setenv("TIER_TEST_KEY", "sk-tier-test-0123456789")
	g := newGateway(t, fmt.Sprintf(`defaults: {attempts: 1}
providers:
  oai: {kind: openai, base_url: "%s/v1", keys: [{env: TIER_TEST_KEY}]}
routes:
  m:
    targets:
      - {provider: oai, model: up-model, service_tier: priority}
      - {provider: oai, model: up-model}
`, up.URL)+tierPrices, withCost)
	c := g.sdk()
	st := c.Chat.Completions.NewStreaming(context.Background(), openai.ChatCompletionNewParams{Model: "m",
		Messages: []openai.ChatCompletionMessageParamUnion{openai.UserMessage("hi")}})
	var text strings.Builder
	for st.Next() {
		if ch := st.Current(); len(ch.Choices) > 0 {
			text.WriteString(ch.Choices[0].Delta.Content)
		}
	}
	if err := st.Err(); err != nil || text.String() != "Hello world" {
		t.Fatalf("stream: %q, %v", text.String(), err)
	}
	if n := up.hits.Load(); n != 2 {
		t.Fatalf("%d upstream calls, want 2", n)
	}
	if got := gjson.GetBytes(up.body(0), "service_tier").Str; got != "priority" {
		t.Errorf("first call's service_tier %q, want priority: %s", got, up.body(0))
	}
	if gjson.GetBytes(up.body(1), "service_tier").Exists() {
		t.Errorf("the default-tier target sent a service_tier: %s", up.body(1))
	}
	rec := g.waitRecs(t, 1)[0]
	if rec.Target != "oai/up-model" || rec.FallbackDepth != 1 || len(rec.Attempts) != 2 ||
		rec.Attempts[0].Target != "oai/up-model#priority" || rec.Attempts[0].Status != 429 {
		t.Fatalf("record: target %q depth %d attempts %+v", rec.Target, rec.FallbackDepth, rec.Attempts)
	}
	// /healthz lists the two tiers as two targets, the priority tier's key
	// rate-limited, the default tier's usable.
	hr, err := http.Get(g.URL + "/healthz")
	if err != nil {
		t.Fatal(err)
	}
	health := gjson.Parse(readAll(t, hr.Body))
	hr.Body.Close()
	pri, def := health.Get(`targets.#(id=="oai/up-model#priority")`), health.Get(`targets.#(id=="oai/up-model")`)
	if pri.Get("keys.0.reason").Str != "rate_limited" || def.Get("keys.0.reason").Str != "" || !def.Exists() {
		t.Errorf("healthz targets: %s", health.Get("targets").Raw)
	}
	// The stream's usage chunk echoes service_tier "default": priced at
	// the model's own price (11 x 1 + 2 x 10 per million).
	if rec.ServiceTier != "default" || !near(rec.CostUSD, 31e-6) {
		t.Errorf("served at tier %q costing %g, want default at 3.1e-05", rec.ServiceTier, rec.CostUSD)
	}
}

func TestPriorityTierIsPricedAtItsPrice(t *testing.T) {
	up := newUpstream(t, func(w http.ResponseWriter, r *http.Request, body []byte, _ int) {
		// OpenAI echoes the tier that served.
		completion := strings.Replace(completionBody("Hello"), `"service_tier":"default"`, `"service_tier":"priority"`, 1)
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, completion)
	})
	g := newGateway(t, fmt.Sprintf(`providers:
  oai: {kind: openai, base_url: "%s/v1"}
routes:
  m: {targets: [{provider: oai, model: up-model, service_tier: priority}]}
`, up.URL)+tierPrices, withCost)
	readAll(t, g.post(t, chatBody).Body)
	rec := g.waitRecs(t, 1)[0]
	// 1,117 x 2 + 46 x 20 per million.
	if rec.ServiceTier != "priority" || !near(rec.CostUSD, (1117*2+46*20)/1e6) {
		t.Errorf("tier %q cost %g, want priority at %g", rec.ServiceTier, rec.CostUSD, (1117*2+46*20)/1e6)
	}
	if !bytes.Contains(up.body(0), []byte(`"service_tier":"priority"`)) {
		t.Errorf("upstream body %s", up.body(0))
	}
}

// completionBody is completionReply's body.
func completionBody(text string) string {
	rec := &bodyRecorder{h: http.Header{}}
	completionReply(rec, text)
	return rec.b.String()
}

type bodyRecorder struct {
	h http.Header
	b bytes.Buffer
}

func (r *bodyRecorder) Header() http.Header         { return r.h }
func (r *bodyRecorder) Write(p []byte) (int, error) { return r.b.Write(p) }
func (r *bodyRecorder) WriteHeader(int)             {}

func TestServiceTierReachesEveryKindAsItsAPINamesIt(t *testing.T) {
	t.Setenv(msgKeyEnv, msgKey)
	t.Setenv("AWS_ACCESS_KEY_ID", "AKIDTEST")
	t.Setenv("AWS_SECRET_ACCESS_KEY", "secret")
	t.Setenv("AWS_REGION", "us-east-1")
	anth := newUpstream(t, anthropicCacheHandler)
	oai := newUpstream(t, openaiCacheHandler)
	resp := newUpstream(t, responsesCacheHandler)
	var bedHeaders []http.Header
	bed := newBedrockUpstream(t, func(w http.ResponseWriter, r *http.Request) {
		bedHeaders = append(bedHeaders, r.Header.Clone())
		if strings.Contains(r.URL.Path, "/invoke") {
			w.Header().Set("X-Amzn-Bedrock-Service-Tier", "flex")
		}
		bedrockCacheHandler(w, r)
	})
	g := newGateway(t, fmt.Sprintf(`defaults: {attempts: 1}
providers:
  an: {kind: anthropic, base_url: %q, keys: [{env: %s}]}
  oai: {kind: openai, base_url: "%s/v1"}
  rs: {kind: openai, base_url: "%s/v1", apis: [chat, responses]}
  br: {kind: bedrock, region: us-east-1, endpoint: %q}
routes:
  an: {targets: [{provider: an, model: up-model, service_tier: standard_only}]}
  oai: {targets: [{provider: oai, model: up-model, service_tier: flex}]}
  rs: {targets: [{provider: rs, model: up-model, service_tier: flex}]}
  conv: {targets: [{provider: br, model: up-model, service_tier: priority}]}
  claude: {targets: [{provider: br, model: "us.anthropic.claude-sonnet-4-5-20250929-v1:0", service_tier: flex}]}
`, anth.URL, msgKeyEnv, oai.URL, resp.URL, bed.URL)+tierPrices, withCost)

	// Anthropic: passthrough (the SDK's own body) and translated.
	ac, oc := g.anthropicSDK(), g.sdk()
	if _, err := ac.Messages.New(context.Background(), anthropic.MessageNewParams{Model: "an", MaxTokens: 100,
		Messages: []anthropic.MessageParam{anthropic.NewUserMessage(anthropic.NewTextBlock("hi"))}}); err != nil {
		t.Fatal(err)
	}
	readAll(t, g.post(t, `{"model":"an","messages":[{"role":"user","content":"hi"}]}`).Body)
	for i := range 2 {
		if got := gjson.GetBytes(anth.body(i), "service_tier").Str; got != "standard_only" {
			t.Errorf("anthropic call %d: service_tier %q: %s", i, got, anth.body(i))
		}
	}
	// OpenAI chat: passthrough and translated from Messages; Responses.
	if _, err := oc.Chat.Completions.New(context.Background(), openai.ChatCompletionNewParams{Model: "oai",
		Messages: []openai.ChatCompletionMessageParamUnion{openai.UserMessage("hi")}, ServiceTier: openai.ChatCompletionNewParamsServiceTierAuto}); err != nil {
		t.Fatal(err)
	}
	readAll(t, g.postMessages(t, `{"model":"oai","max_tokens":100,"messages":[{"role":"user","content":"hi"}]}`).Body)
	for i := range 2 {
		if got := gjson.GetBytes(oai.body(i), "service_tier").Str; got != "flex" {
			t.Errorf("openai call %d: service_tier %q: %s", i, got, oai.body(i))
		}
	}
	if bytes.Count(oai.body(0), []byte(`"service_tier"`)) != 1 {
		t.Errorf("the client's service_tier was not replaced in place: %s", oai.body(0))
	}
	if _, err := oc.Responses.New(context.Background(), responsesParams("rs")); err != nil {
		t.Fatal(err)
	}
	if got := gjson.GetBytes(resp.body(0), "service_tier").Str; got != "flex" {
		t.Errorf("responses: service_tier %q: %s", got, resp.body(0))
	}
	// Bedrock: Converse's serviceTier member, InvokeModel's header.
	readAll(t, g.post(t, `{"model":"conv","messages":[{"role":"user","content":"hi"}]}`).Body)
	readAll(t, g.postMessages(t, `{"model":"claude","max_tokens":100,"messages":[{"role":"user","content":"hi"}]}`).Body)
	if got := gjson.GetBytes(bed.body(0), "serviceTier.type").Str; got != "priority" {
		t.Errorf("converse: serviceTier %q: %s", got, bed.body(0))
	}
	if got := bedHeaders[1].Get("X-Amzn-Bedrock-Service-Tier"); got != "flex" {
		t.Errorf("invoke: X-Amzn-Bedrock-Service-Tier %q", got)
	}
	recs := g.waitRecs(t, 7)
	byRoute := map[string]string{}
	for _, r := range recs {
		byRoute[r.Route] = r.ServiceTier
	}
	// The tier each response says served it (Anthropic's usage, OpenAI's
	// service_tier, Bedrock InvokeModel's header); Converse's answer
	// names none, so the target's own.
	want := map[string]string{"an": "standard", "oai": "default", "rs": "default", "conv": "priority", "claude": "flex"}
	for route, tier := range want {
		if byRoute[route] != tier {
			t.Errorf("route %s served at tier %q, want %q", route, byRoute[route], tier)
		}
	}
}

// responsesParams is a one-message Responses request for route.
func responsesParams(route string) responses.ResponseNewParams {
	return responses.ResponseNewParams{Model: route, Input: responses.ResponseNewParamsInputUnion{OfString: openai.String("hi")}}
}
