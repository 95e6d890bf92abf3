package server_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"
	"github.com/openai/openai-go/v3/packages/ssestream"
	"github.com/openai/openai-go/v3/shared"
)

func TestSDKNonStreaming(t *testing.T) {
	up := newUpstream(t, okHandler)
	g := newGateway(t, oneRoute("", up.URL))
	client := g.sdk()
	var raw *http.Response
	resp, err := client.Chat.Completions.New(context.Background(), openai.ChatCompletionNewParams{
		Model:    "m",
		Messages: []openai.ChatCompletionMessageParamUnion{openai.UserMessage("hi")},
	}, option.WithResponseInto(&raw))
	if err != nil {
		t.Fatalf("SDK error: %v", err)
	}
	if got := resp.Choices[0].Message.Content; got != "Hello world" {
		t.Errorf("content = %q", got)
	}
	if resp.Usage.PromptTokens != 1117 || resp.Usage.CompletionTokens != 46 {
		t.Errorf("usage = %+v", resp.Usage)
	}
	for k, want := range map[string]string{"x-gateway-provider": "p0", "x-gateway-attempts": "1", "x-gateway-fallback-depth": "0"} {
		if got := raw.Header.Get(k); got != want {
			t.Errorf("%s = %q, want %q", k, got, want)
		}
	}
	if !strings.HasPrefix(raw.Header.Get("x-request-id"), "req_") {
		t.Errorf("x-request-id = %q", raw.Header.Get("x-request-id"))
	}
	var sent map[string]any
	json.Unmarshal(up.body(0), &sent)
	if sent["model"] != "up-model-0" {
		t.Errorf("upstream model = %v", sent["model"])
	}
	if _, ok := sent["stream_options"]; ok {
		t.Errorf("non-streaming call got stream_options: %s", up.body(0))
	}
	recs := g.waitRecs(t, 1)
	if len(recs) != 1 || recs[0].InputTokens != 1117 || recs[0].OutputTokens != 46 || recs[0].Outcome != "ok" {
		t.Errorf("record = %+v", recs)
	}
}

func TestSDKStreamingUsageAlwaysCountedButOnlyRelayedWhenAsked(t *testing.T) {
	up := newUpstream(t, okHandler)
	g := newGateway(t, oneRoute("", up.URL))
	client := g.sdk()
	params := openai.ChatCompletionNewParams{
		Model:    "m",
		Messages: []openai.ChatCompletionMessageParamUnion{openai.UserMessage("hi")},
	}
	stream := client.Chat.Completions.NewStreaming(context.Background(), params)
	var acc openai.ChatCompletionAccumulator
	sawUsage := false
	for stream.Next() {
		c := stream.Current()
		acc.AddChunk(c)
		if len(c.Choices) == 0 {
			sawUsage = true
		}
	}
	if err := stream.Err(); err != nil {
		t.Fatalf("stream error: %v", err)
	}
	if got := acc.Choices[0].Message.Content; got != "Hello world" {
		t.Errorf("content = %q", got)
	}
	if sawUsage {
		t.Error("client did not ask for usage but got the usage chunk")
	}
	if !bytes.Contains(up.body(0), []byte(`"stream_options":{"include_usage":true}`)) {
		t.Errorf("gateway did not ask the upstream for usage: %s", up.body(0))
	}
	recs := g.waitRecs(t, 1)
	if len(recs) != 1 || recs[0].InputTokens != 11 || recs[0].OutputTokens != 2 || recs[0].CachedTokens != 3 || recs[0].Estimated {
		t.Errorf("usage not counted from the usage chunk: %+v", recs)
	}

	// Now the client asks: the usage chunk reaches it.
	params.StreamOptions = openai.ChatCompletionStreamOptionsParam{IncludeUsage: openai.Bool(true)}
	stream = client.Chat.Completions.NewStreaming(context.Background(), params)
	var usage openai.CompletionUsage
	for stream.Next() {
		if c := stream.Current(); len(c.Choices) == 0 {
			usage = c.Usage
		}
	}
	if err := stream.Err(); err != nil {
		t.Fatalf("stream error: %v", err)
	}
	if usage.PromptTokens != 11 || usage.CompletionTokens != 2 {
		t.Errorf("usage chunk = %+v", usage)
	}
}

func TestStreamingUsageEstimatedWhenUpstreamSendsNone(t *testing.T) {
	up := newUpstream(t, func(w http.ResponseWriter, r *http.Request, body []byte, n int) {
		streamReply(w, []string{"abcdefgh", "ijkl"}, false) // ignores include_usage, like some vLLM builds
	})
	g := newGateway(t, oneRoute("", up.URL))
	resp := g.post(t, streamBody)
	readAll(t, resp.Body)
	recs := g.waitRecs(t, 1)
	if len(recs) != 1 || !recs[0].Estimated || recs[0].OutputTokens != 3 {
		t.Errorf("want estimated output tokens 3 (12 chars / 4), got %+v", recs)
	}
}

func TestSDKToolsAndParametersReachUpstreamAndToolCallsReassemble(t *testing.T) {
	up := newUpstream(t, func(w http.ResponseWriter, r *http.Request, body []byte, n int) {
		w.Header().Set("Content-Type", "text/event-stream")
		frames := []string{
			roleChunk(true),
			"data: " + chunkHead + `[{"index":0,"delta":{"tool_calls":[{"index":0,"id":"call_DdmO9pD3xa9XTPNJ32zg2hcA","type":"function","function":{"name":"get_weather","arguments":""}}]},"logprobs":null,"finish_reason":null}],"usage":null}` + "\n\n",
			"data: " + chunkHead + `[{"index":0,"delta":{"tool_calls":[{"index":0,"function":{"arguments":"{\"loc"}}]},"logprobs":null,"finish_reason":null}],"usage":null}` + "\n\n",
			"data: " + chunkHead + `[{"index":0,"delta":{"tool_calls":[{"index":0,"function":{"arguments":"ation\":\"Paris\"}"}}]},"logprobs":null,"finish_reason":null}],"usage":null}` + "\n\n",
			finishChunk("tool_calls", true),
			usageChunk(80, 17, 0),
			"data: [DONE]\n\n",
		}
		for _, f := range frames {
			io.WriteString(w, f)
		}
	})
	g := newGateway(t, oneRoute("", up.URL))
	client := g.sdk()
	stream := client.Chat.Completions.NewStreaming(context.Background(), openai.ChatCompletionNewParams{
		Model:               "m",
		Messages:            []openai.ChatCompletionMessageParamUnion{openai.SystemMessage("be brief"), openai.UserMessage("weather in Paris?")},
		Tools:               []openai.ChatCompletionToolUnionParam{openai.ChatCompletionFunctionTool(shared.FunctionDefinitionParam{Name: "get_weather", Parameters: shared.FunctionParameters{"type": "object", "properties": map[string]any{"location": map[string]any{"type": "string"}}}})},
		ToolChoice:          openai.ChatCompletionToolChoiceOptionUnionParam{OfAuto: openai.String("auto")},
		ResponseFormat:      openai.ChatCompletionNewParamsResponseFormatUnion{OfJSONObject: &shared.ResponseFormatJSONObjectParam{}},
		Stop:                openai.ChatCompletionNewParamsStopUnion{OfStringArray: []string{"END"}},
		MaxCompletionTokens: openai.Int(200),
		MaxTokens:           openai.Int(200),
		Temperature:         openai.Float(0.2),
		N:                   openai.Int(1),
		User:                openai.String("user-123"),
		StreamOptions:       openai.ChatCompletionStreamOptionsParam{IncludeUsage: openai.Bool(true)},
	})
	var acc openai.ChatCompletionAccumulator
	for stream.Next() {
		acc.AddChunk(stream.Current())
	}
	if err := stream.Err(); err != nil {
		t.Fatalf("stream error: %v", err)
	}
	calls := acc.Choices[0].Message.ToolCalls
	if len(calls) != 1 || calls[0].Function.Name != "get_weather" || calls[0].Function.Arguments != `{"location":"Paris"}` || calls[0].ID != "call_DdmO9pD3xa9XTPNJ32zg2hcA" {
		t.Fatalf("tool calls = %+v", calls)
	}
	if acc.Choices[0].FinishReason != "tool_calls" || acc.Usage.CompletionTokens != 17 {
		t.Errorf("finish=%q usage=%+v", acc.Choices[0].FinishReason, acc.Usage)
	}
	var sent map[string]any
	if err := json.Unmarshal(up.body(0), &sent); err != nil {
		t.Fatal(err)
	}
	for _, k := range []string{"tools", "tool_choice", "response_format", "stop", "max_completion_tokens", "max_tokens", "temperature", "n", "user", "stream_options"} {
		if _, ok := sent[k]; !ok {
			t.Errorf("upstream did not receive %q: %s", k, up.body(0))
		}
	}
}

func TestSDKSurfacesErrorWhenStreamIsCutMidway(t *testing.T) {
	up := newUpstream(t, func(w http.ResponseWriter, r *http.Request, body []byte, n int) {
		w.Header().Set("Content-Type", "text/event-stream")
		io.WriteString(w, roleChunk(true))
		io.WriteString(w, contentChunk("Once upon", true))
		io.WriteString(w, contentChunk(" a time", true))
		w.(http.Flusher).Flush()
		conn, _, _ := http.NewResponseController(w).Hijack()
		conn.Close() // the provider dies mid-sentence
	})
	second := newUpstream(t, okHandler)
	g := newGateway(t, oneRoute("", up.URL, second.URL))
	client := g.sdk()
	stream := client.Chat.Completions.NewStreaming(context.Background(), openai.ChatCompletionNewParams{
		Model: "m", Messages: []openai.ChatCompletionMessageParamUnion{openai.UserMessage("tell a story")},
	})
	var text strings.Builder
	for stream.Next() {
		if c := stream.Current(); len(c.Choices) > 0 {
			text.WriteString(c.Choices[0].Delta.Content)
		}
	}
	err := stream.Err()
	var se *ssestream.StreamError
	if !errors.As(err, &se) {
		t.Fatalf("SDK finished without an error (silent truncation); err = %v, text %q", err, text.String())
	}
	if !strings.Contains(err.Error(), "interrupted") {
		t.Errorf("error does not name the category: %v", err)
	}
	if text.String() != "Once upon a time" {
		t.Errorf("text before the cut = %q", text.String())
	}
	if second.hits.Load() != 0 {
		t.Error("gateway switched provider after the first token")
	}
}

func TestUnknownFieldsReachUpstreamByteIdentical(t *testing.T) {
	up := newUpstream(t, okHandler)
	g := newGateway(t, oneRoute("", up.URL))
	// Vendor fields, odd spacing, key order and escapes the gateway must keep.
	body := `{ "messages" : [{"role":"user","content":"h\u00e9llo \"q\""}],"top_k":40, "model":"m",  "vendor_x":{"a":[1,2.50,{"b":null}]},"safe_prompt":true,"repetition_penalty":1.10}`
	readAll(t, g.post(t, body).Body)
	want := strings.Replace(body, `"model":"m"`, `"model":"up-model-0"`, 1)
	if got := string(up.body(0)); got != want {
		t.Errorf("upstream body changed beyond the model:\n got %s\nwant %s", got, want)
	}

	// Streaming: the same, plus stream_options appended.
	sbody := `{"stream":true,"model":"m","messages":[{"role":"user","content":"x"}],"guided_json":{"type":"object"}}`
	readAll(t, g.post(t, sbody).Body)
	swant := strings.Replace(sbody, `"model":"m"`, `"model":"up-model-0"`, 1)
	swant = swant[:len(swant)-1] + `,"stream_options":{"include_usage":true}}`
	if got := string(up.body(1)); got != swant {
		t.Errorf("streaming upstream body:\n got %s\nwant %s", got, swant)
	}
}

func TestModelsListAndHealthHaveNoSecrets(t *testing.T) {
	const secret = "sk-SENTINEL-provider-key-0123456789"
	t.Setenv("TEST_PROVIDER_KEY", secret)
	up := newUpstream(t, okHandler)
	cfg := fastPolicy + `
providers:
  p0: {kind: openai, base_url: "` + up.URL + `/v1", keys: [{env: TEST_PROVIDER_KEY}, {env: TEST_UNSET_KEY}]}
routes:
  alpha: {targets: [{provider: p0, model: a}]}
  beta:  {targets: [{provider: p0, model: b}]}
`
	g := newGateway(t, cfg)
	client := g.sdk()
	page, err := client.Models.List(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	var ids []string
	for _, m := range page.Data {
		ids = append(ids, m.ID)
	}
	if strings.Join(ids, ",") != "alpha,beta" {
		t.Errorf("models = %v", ids)
	}
	resp, err := http.Get(g.URL + "/healthz")
	if err != nil {
		t.Fatal(err)
	}
	body := readAll(t, resp.Body)
	if strings.Contains(body, secret) || strings.Contains(body, "SENTINEL") {
		t.Fatalf("healthz leaks a key: %s", body)
	}
	var h struct {
		Targets []struct {
			ID      string `json:"id"`
			Breaker struct {
				State string `json:"state"`
			} `json:"breaker"`
			Keys []struct {
				Fingerprint, Reason, Ref string
			} `json:"keys"`
		} `json:"targets"`
	}
	json.Unmarshal([]byte(body), &h)
	// The unset variable's key is listed by the variable's name, as missing.
	if len(h.Targets) != 2 || h.Targets[0].Breaker.State != "closed" || len(h.Targets[0].Keys) != 2 || !strings.HasPrefix(h.Targets[0].Keys[0].Fingerprint, "k-") ||
		h.Targets[0].Keys[1].Fingerprint != "" || h.Targets[0].Keys[1].Reason != "missing" || h.Targets[0].Keys[1].Ref != "TEST_UNSET_KEY" {
		t.Errorf("healthz = %s", body)
	}
	// The key is sent as a Bearer token; the unset one is skipped, never "Bearer ".
	readAll(t, g.post(t, `{"model":"alpha","messages":[{"role":"user","content":"x"}]}`).Body)
	if got := up.header(0).Get("Authorization"); got != "Bearer "+secret {
		t.Errorf("Authorization = %q", got)
	}
}

func TestAbsentKeyEnvSendsNoAuthorization(t *testing.T) {
	up := newUpstream(t, okHandler)
	cfg := fastPolicy + `
providers:
  local: {kind: openai, base_url: "` + up.URL + `/v1"}
routes:
  m: {targets: [{provider: local, model: a}]}
`
	g := newGateway(t, cfg)
	readAll(t, g.post(t, chatBody).Body)
	if v, ok := up.header(0)["Authorization"]; ok {
		t.Errorf("Authorization sent without a key: %q", v)
	}
}

// TestOpenAIPassthroughCarriesEveryFeature proves the openai column of the
// semantics matrix: each feature's bytes reach an OpenAI-compatible
// upstream unchanged (only the model is rewritten).
func TestOpenAIPassthroughCarriesEveryFeature(t *testing.T) {
	up := newUpstream(t, okHandler)
	g := newGateway(t, oneRoute("", up.URL))
	features := map[string]string{
		"system":            `"messages":[{"role":"system","content":"be brief"},{"role":"developer","content":"really"},{"role":"user","content":"hi"}]`,
		"multi_turn":        `"messages":[{"role":"user","content":"a"},{"role":"assistant","content":"b"},{"role":"user","content":"c"}]`,
		"images":            `"messages":[{"role":"user","content":[{"type":"text","text":"what is this"},{"type":"image_url","image_url":{"url":"data:image/png;base64,iVBORw0KGgo=","detail":"low"}},{"type":"image_url","image_url":{"url":"https://example.com/cat.png"}}]}]`,
		"tools":             `"messages":[{"role":"user","content":"x"}],"tools":[{"type":"function","function":{"name":"f","description":"d","parameters":{"type":"object","properties":{"a":{"type":"string"}}},"strict":true}}]`,
		"forced_tool":       `"messages":[{"role":"user","content":"x"}],"tools":[{"type":"function","function":{"name":"f"}}],"tool_choice":{"type":"function","function":{"name":"f"}}`,
		"parallel_tools":    `"messages":[{"role":"user","content":"x"}],"tools":[{"type":"function","function":{"name":"f"}}],"parallel_tool_calls":true`,
		"tool_results":      `"messages":[{"role":"user","content":"x"},{"role":"assistant","content":null,"tool_calls":[{"id":"call_1","type":"function","function":{"name":"f","arguments":"{\"a\":1}"}}]},{"role":"tool","tool_call_id":"call_1","content":"42"}]`,
		"json_object":       `"messages":[{"role":"user","content":"x"}],"response_format":{"type":"json_object"}`,
		"json_schema":       `"messages":[{"role":"user","content":"x"}],"response_format":{"type":"json_schema","json_schema":{"name":"s","strict":true,"schema":{"type":"object"}}}`,
		"stop":              `"messages":[{"role":"user","content":"x"}],"stop":["END","STOP"]`,
		"max_tokens":        `"messages":[{"role":"user","content":"x"}],"max_tokens":50,"max_completion_tokens":60`,
		"temperature_top_p": `"messages":[{"role":"user","content":"x"}],"temperature":0.3,"top_p":0.8`,
		"cache_control":     `"messages":[{"role":"user","content":[{"type":"text","text":"long doc","cache_control":{"type":"ephemeral"}}]}]`,
		"n":                 `"messages":[{"role":"user","content":"x"}],"n":3`,
		"logprobs":          `"messages":[{"role":"user","content":"x"}],"logprobs":true,"top_logprobs":5`,
		"audio":             `"messages":[{"role":"user","content":[{"type":"input_audio","input_audio":{"data":"UklGR","format":"wav"}}]}],"modalities":["text","audio"],"audio":{"voice":"alloy","format":"wav"}`,
	}
	i := 0
	for name, f := range features {
		t.Run(name, func(t *testing.T) {
			body := `{"model":"m",` + f + `}`
			resp := g.post(t, body)
			readAll(t, resp.Body)
			if resp.StatusCode != 200 {
				t.Fatalf("status %d", resp.StatusCode)
			}
			want := strings.Replace(body, `"model":"m"`, `"model":"up-model-0"`, 1)
			if got := string(up.body(i)); got != want {
				t.Errorf("upstream got\n%s\nwant\n%s", got, want)
			}
			i++
		})
	}
}
