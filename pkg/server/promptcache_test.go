package server_test

import (
	"fmt"
	"io"
	"math"
	"net/http"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws/protocol/eventstream"

	"github.com/llmgw/llmgw/pkg/server"
	"github.com/llmgw/llmgw/pkg/usage"
)

// Prompt-cache tokens on every provider kind and path: each upstream
// reports cache reads and writes in its own wire format, passthrough and
// translated, streamed and whole, and the usage record carries them and
// prices them exactly (docs/prompt-caching.md).

// cachePrices prices every test model apart: input 1, cache reads 0.1,
// 5-minute writes 2, 1-hour writes 4, output 10 (USD per million tokens).
const cachePrices = `
prices:
  "up-model": {input: 1, output: 10, cached_input: 0.1, cache_write: 2, cache_write_1h: 4}
`

// Anthropic usage with 1,000 tokens read from the cache, 500 written (200
// for 5 minutes, 300 for an hour) and 100 uncached: 1,600 prompt tokens.
const anthropicCacheUsage = `"input_tokens":100,"cache_creation_input_tokens":500,"cache_read_input_tokens":1000,` +
	`"cache_creation":{"ephemeral_5m_input_tokens":200,"ephemeral_1h_input_tokens":300}`

func anthropicCacheStream() string {
	return `event: message_start
data: {"type":"message_start","message":{"id":"msg_01Cache","type":"message","role":"assistant","model":"claude-sonnet-4-5-20250929","content":[],"stop_reason":null,"stop_sequence":null,"usage":{` + anthropicCacheUsage + `,"output_tokens":1,"service_tier":"standard"}}}

` + msgTextBlock(0, "Hello", " cache") + msgEnd("end_turn", "", 50)
}

func anthropicCacheBody() string {
	return `{"id":"msg_01Cache","type":"message","role":"assistant","model":"claude-sonnet-4-5-20250929","content":[{"type":"text","text":"Hello cache"}],` +
		`"stop_reason":"end_turn","stop_sequence":null,"usage":{` + anthropicCacheUsage + `,"output_tokens":50,"service_tier":"standard"}}`
}

func anthropicCacheHandler(w http.ResponseWriter, r *http.Request, body []byte, _ int) {
	if strings.Contains(string(body), `"stream":true`) {
		sseFrames(w, anthropicCacheStream())
		return
	}
	w.Header().Set("Content-Type", "application/json")
	io.WriteString(w, anthropicCacheBody())
}

// OpenAI usage: 1,600 prompt tokens of which 1,000 cached (OpenAI reports
// no writes).
func openaiCacheHandler(w http.ResponseWriter, r *http.Request, body []byte, _ int) {
	if strings.Contains(string(body), `"stream":true`) {
		w.Header().Set("Content-Type", "text/event-stream")
		io.WriteString(w, roleChunk(true)+contentChunk("Hello", true)+finishChunk("stop", true)+usageChunk(1600, 50, 1000)+"data: [DONE]\n\n")
		return
	}
	w.Header().Set("Content-Type", "application/json")
	io.WriteString(w, `{"id":"chatcmpl-Cache","object":"chat.completion","created":1741570283,"model":"gpt-4.1-2025-04-14","choices":[{"index":0,"message":{"role":"assistant","content":"Hello","refusal":null,"annotations":[]},"logprobs":null,"finish_reason":"stop"}],`+
		`"usage":{"prompt_tokens":1600,"completion_tokens":50,"total_tokens":1650,"prompt_tokens_details":{"cached_tokens":1000,"audio_tokens":0},"completion_tokens_details":{"reasoning_tokens":0,"audio_tokens":0,"accepted_prediction_tokens":0,"rejected_prediction_tokens":0}},"service_tier":"default","system_fingerprint":"fp_fc9f1d7035"}`)
}

// OpenAI Responses usage: the same figures in input_tokens_details.
func responsesCacheHandler(w http.ResponseWriter, r *http.Request, body []byte, _ int) {
	resp := func(status, output string, usage string) string {
		return `{"id":"resp_01Cache","object":"response","created_at":1741570283,"status":"` + status + `","model":"gpt-4.1-2025-04-14","output":[` + output + `],"service_tier":"default","usage":` + usage + `}`
	}
	const item = `{"id":"msg_01","type":"message","status":"completed","role":"assistant","content":[{"type":"output_text","text":"Hello","annotations":[]}]}`
	const u = `{"input_tokens":1600,"input_tokens_details":{"cached_tokens":1000},"output_tokens":50,"output_tokens_details":{"reasoning_tokens":0},"total_tokens":1650}`
	if strings.Contains(string(body), `"stream":true`) {
		w.Header().Set("Content-Type", "text/event-stream")
		for i, f := range []string{
			`{"type":"response.created","sequence_number":0,"response":` + resp("in_progress", "", "null") + `}`,
			`{"type":"response.output_item.added","sequence_number":1,"output_index":0,"item":{"id":"msg_01","type":"message","status":"in_progress","role":"assistant","content":[]}}`,
			`{"type":"response.output_text.delta","sequence_number":2,"item_id":"msg_01","output_index":0,"content_index":0,"delta":"Hello"}`,
			`{"type":"response.output_item.done","sequence_number":3,"output_index":0,"item":` + item + `}`,
			`{"type":"response.completed","sequence_number":4,"response":` + resp("completed", item, u) + `}`,
		} {
			name := []string{"response.created", "response.output_item.added", "response.output_text.delta", "response.output_item.done", "response.completed"}[i]
			fmt.Fprintf(w, "event: %s\ndata: %s\n\n", name, f)
		}
		return
	}
	w.Header().Set("Content-Type", "application/json")
	io.WriteString(w, resp("completed", item, u))
}

// Gemini usageMetadata: 1,600 prompt tokens of which 1,000 from cached
// content.
func geminiCacheHandler(w http.ResponseWriter, r *http.Request, _ []byte, _ int) {
	const chunk = `{"candidates":[{"content":{"parts":[{"text":"Hello"}],"role":"model"},"finishReason":"STOP","index":0}],` +
		`"usageMetadata":{"promptTokenCount":1600,"candidatesTokenCount":50,"totalTokenCount":1650,"cachedContentTokenCount":1000},"modelVersion":"gemini-2.5-flash","responseId":"abc"}`
	if strings.Contains(r.URL.Path, "stream") {
		w.Header().Set("Content-Type", "text/event-stream")
		io.WriteString(w, "data: "+chunk+"\r\n\r\n")
		return
	}
	w.Header().Set("Content-Type", "application/json")
	io.WriteString(w, chunk)
}

// Bedrock Converse usage: inputTokens excludes the cache; cacheDetails
// splits the writes by lifetime.
const converseCacheUsage = `{"inputTokens":100,"outputTokens":50,"totalTokens":1650,"cacheReadInputTokens":1000,"cacheWriteInputTokens":500,` +
	`"cacheDetails":[{"inputTokens":200,"ttl":"5m"},{"inputTokens":300,"ttl":"1h"}]}`

func bedrockCacheHandler(w http.ResponseWriter, r *http.Request) {
	switch {
	case strings.HasSuffix(r.URL.Path, "/converse"):
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, `{"output":{"message":{"role":"assistant","content":[{"text":"Hello"}]}},"stopReason":"end_turn","usage":`+converseCacheUsage+`,"metrics":{"latencyMs":300}}`)
	case strings.HasSuffix(r.URL.Path, "/converse-stream"):
		w.Header().Set("Content-Type", "application/vnd.amazon.eventstream")
		enc := eventstream.NewEncoder()
		for _, e := range [][2]string{
			{"messageStart", `{"role":"assistant"}`},
			{"contentBlockDelta", `{"contentBlockIndex":0,"delta":{"text":"Hello"}}`},
			{"contentBlockStop", `{"contentBlockIndex":0}`},
			{"messageStop", `{"stopReason":"end_turn"}`},
			{"metadata", `{"usage":` + converseCacheUsage + `,"metrics":{"latencyMs":300}}`},
		} {
			var m eventstream.Message
			m.Headers.Set(":message-type", eventstream.StringValue("event"))
			m.Headers.Set(":event-type", eventstream.StringValue(e[0]))
			m.Headers.Set(":content-type", eventstream.StringValue("application/json"))
			m.Payload = []byte(e[1])
			enc.Encode(w, m)
		}
	case strings.HasSuffix(r.URL.Path, "/invoke-with-response-stream"):
		bedrockEvents(w, anthropicCacheStream(), "", 0)
	case strings.HasSuffix(r.URL.Path, "/invoke"):
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, anthropicCacheBody())
	default:
		http.Error(w, "unexpected path "+r.URL.Path, 404)
	}
}

// cacheCase is one kind and path.
type cacheCase struct {
	name     string
	provider string // the provider's config, %s the upstream URL
	model    string // the target model
	bedrock  bool
	handler  func(http.ResponseWriter, *http.Request, []byte, int)
	path     string // the client API path
	body     string
	// the expected record
	input, read, write, write1h int
	cost, readCost, writeCost   float64
}

// Anthropic and Bedrock: plain 100 x 1 + reads 1,000 x 0.1 + writes 200 x 2
// + 300 x 4 + output 50 x 10 = 2,300 per million.
// OpenAI and Gemini: plain 600 x 1 + reads 1,000 x 0.1 + 50 x 10 = 1,200.
const (
	claudeCost, claudeRead, claudeWrite = 0.0023, 0.0001, 0.0016
	readOnlyCost, readOnlyRead          = 0.0012, 0.0001
)

func TestPromptCacheTokensArePricedOnEveryKindAndPath(t *testing.T) {
	t.Setenv(msgKeyEnv, msgKey)
	t.Setenv("AWS_ACCESS_KEY_ID", "AKIDTEST")
	t.Setenv("AWS_SECRET_ACCESS_KEY", "secret")
	t.Setenv("AWS_REGION", "us-east-1")
	const (
		chatReq     = `{"model":"m","messages":[{"role":"user","content":"hi"}]}`
		chatStream  = `{"model":"m","stream":true,"stream_options":{"include_usage":true},"messages":[{"role":"user","content":"hi"}]}`
		msgReq      = `{"model":"m","max_tokens":100,"messages":[{"role":"user","content":"hi"}]}`
		msgStream   = `{"model":"m","max_tokens":100,"stream":true,"messages":[{"role":"user","content":"hi"}]}`
		respReq     = `{"model":"m","input":"hi"}`
		respStream  = `{"model":"m","stream":true,"input":"hi"}`
		converseReq = `{"messages":[{"role":"user","content":[{"text":"hi"}]}],"inferenceConfig":{"maxTokens":100}}`
		anthropicP  = `{kind: anthropic, base_url: %q, keys: [{env: ` + msgKeyEnv + `}]}`
		openaiP     = `{kind: openai, base_url: "%s/v1"}`
		responsesP  = `{kind: openai, base_url: "%s/v1", apis: [chat, responses]}`
		geminiP     = `{kind: gemini, base_url: %q}`
		bedrockP    = `{kind: bedrock, region: us-east-1, endpoint: %q}`
		claudeModel = "us.anthropic.claude-sonnet-4-5-20250929-v1:0"
	)
	claude := func(c cacheCase) cacheCase {
		c.input, c.read, c.write, c.write1h, c.cost, c.readCost, c.writeCost = 1600, 1000, 500, 300, claudeCost, claudeRead, claudeWrite
		return c
	}
	readOnly := func(c cacheCase) cacheCase {
		c.input, c.read, c.cost, c.readCost = 1600, 1000, readOnlyCost, readOnlyRead
		return c
	}
	cases := []cacheCase{
		claude(cacheCase{name: "anthropic passthrough stream", provider: anthropicP, handler: anthropicCacheHandler, path: "/v1/messages", body: msgStream}),
		claude(cacheCase{name: "anthropic passthrough whole", provider: anthropicP, handler: anthropicCacheHandler, path: "/v1/messages", body: msgReq}),
		claude(cacheCase{name: "anthropic translated stream", provider: anthropicP, handler: anthropicCacheHandler, path: "/v1/chat/completions", body: chatStream}),
		claude(cacheCase{name: "anthropic translated whole", provider: anthropicP, handler: anthropicCacheHandler, path: "/v1/chat/completions", body: chatReq}),
		readOnly(cacheCase{name: "openai passthrough stream", provider: openaiP, handler: openaiCacheHandler, path: "/v1/chat/completions", body: chatStream}),
		readOnly(cacheCase{name: "openai passthrough whole", provider: openaiP, handler: openaiCacheHandler, path: "/v1/chat/completions", body: chatReq}),
		readOnly(cacheCase{name: "openai translated stream", provider: openaiP, handler: openaiCacheHandler, path: "/v1/messages", body: msgStream}),
		readOnly(cacheCase{name: "openai translated whole", provider: openaiP, handler: openaiCacheHandler, path: "/v1/messages", body: msgReq}),
		readOnly(cacheCase{name: "openai responses passthrough stream", provider: responsesP, handler: responsesCacheHandler, path: "/v1/responses", body: respStream}),
		readOnly(cacheCase{name: "openai responses passthrough whole", provider: responsesP, handler: responsesCacheHandler, path: "/v1/responses", body: respReq}),
		readOnly(cacheCase{name: "gemini translated stream", provider: geminiP, handler: geminiCacheHandler, path: "/v1/chat/completions", body: chatStream}),
		readOnly(cacheCase{name: "gemini translated whole", provider: geminiP, handler: geminiCacheHandler, path: "/v1/chat/completions", body: chatReq}),
		claude(cacheCase{name: "bedrock converse stream", provider: bedrockP, bedrock: true, path: "/v1/chat/completions", body: chatStream}),
		claude(cacheCase{name: "bedrock converse whole", provider: bedrockP, bedrock: true, path: "/v1/chat/completions", body: chatReq}),
		// The Bedrock Runtime API on the gateway (AWS SDK clients), served by
		// Anthropic and by Bedrock.
		claude(cacheCase{name: "bedrock api to anthropic", provider: anthropicP, handler: anthropicCacheHandler, path: "/model/m/converse", body: converseReq}),
		claude(cacheCase{name: "bedrock api to bedrock stream", provider: bedrockP, bedrock: true, path: "/model/m/converse-stream", body: converseReq}),
		claude(cacheCase{name: "bedrock invoke stream", provider: bedrockP, bedrock: true, model: claudeModel, path: "/v1/messages", body: msgStream}),
		claude(cacheCase{name: "bedrock invoke whole", provider: bedrockP, bedrock: true, model: claudeModel, path: "/v1/messages", body: msgReq}),
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			var up *upstream
			if c.bedrock {
				up = newBedrockUpstream(t, bedrockCacheHandler).upstream
			} else {
				up = newUpstream(t, c.handler)
			}
			model, prices := "up-model", cachePrices
			if c.model != "" {
				model, prices = c.model, strings.Replace(cachePrices, `"up-model"`, `"anthropic.claude-sonnet-4-5-20250929-v1:0"`, 1)
			}
			g := newGateway(t, fmt.Sprintf("defaults: {attempts: 1}\nproviders:\n  p: "+c.provider+"\nroutes:\n  m: {targets: [{provider: p, model: %q}]}\n", up.URL, model)+prices,
				withCost)
			req, _ := http.NewRequest(http.MethodPost, g.URL+c.path, strings.NewReader(c.body))
			req.Header.Set("Content-Type", "application/json")
			req.Header.Set("anthropic-version", "2023-06-01")
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			got := readAll(t, resp.Body)
			resp.Body.Close()
			if resp.StatusCode != 200 {
				t.Fatalf("status %d: %s", resp.StatusCode, got)
			}
			rec := g.waitRecs(t, 1)[0]
			if rec.InputTokens != c.input || rec.CachedTokens != c.read || rec.CacheWriteTokens != c.write || rec.CacheWrite1hTokens != c.write1h {
				t.Errorf("tokens: input %d read %d write %d write_1h %d; want %d %d %d %d", rec.InputTokens, rec.CachedTokens,
					rec.CacheWriteTokens, rec.CacheWrite1hTokens, c.input, c.read, c.write, c.write1h)
			}
			if rec.OutputTokens != 50 {
				t.Errorf("output tokens %d, want 50", rec.OutputTokens)
			}
			if !near(rec.CostUSD, c.cost) || !near(rec.CacheReadCostUSD, c.readCost) || !near(rec.CacheWriteCostUSD, c.writeCost) {
				t.Errorf("cost %g (cache reads %g, writes %g), want %g (%g, %g)", rec.CostUSD, rec.CacheReadCostUSD, rec.CacheWriteCostUSD,
					c.cost, c.readCost, c.writeCost)
			}
		})
	}
}

// withCost prices records with the config's price table, as the gateway
// does.
func withCost(o *server.Options) { o.Reporting.Cost = usage.Cost }

// near compares two costs to a nano-dollar.
func near(a, b float64) bool { return math.Abs(a-b) < 1e-9 }
