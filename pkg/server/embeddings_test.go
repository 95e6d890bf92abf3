package server_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"

	"github.com/llmgw/llmgw/pkg/config"
	"github.com/llmgw/llmgw/pkg/exchange"
	"github.com/llmgw/llmgw/pkg/server"
	"github.com/llmgw/llmgw/pkg/store/embedded"
	"github.com/llmgw/llmgw/pkg/teams"
	"github.com/llmgw/llmgw/pkg/usage"
)

// POST /v1/embeddings: passthrough to OpenAI-compatible targets that list
// embeddings in apis, Bedrock's Titan and Cohere models translated, the
// shared failover, limits and usage records.

// embedReply is a real OpenAI embeddings body in shape.
const embedReply = `{
  "object": "list",
  "data": [
    {"object": "embedding", "index": 0, "embedding": [0.0023064255, -0.009327292, 0.015797347]},
    {"object": "embedding", "index": 1, "embedding": [-0.0021, 0.0158, 0.0093]}
  ],
  "model": "text-embedding-3-small",
  "usage": {"prompt_tokens": 8, "total_tokens": 8}
}`

func embedOK(w http.ResponseWriter, r *http.Request, _ []byte, _ int) {
	if r.URL.Path != "/v1/embeddings" {
		w.WriteHeader(404)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	io.WriteString(w, embedReply)
}

func embedDown(w http.ResponseWriter, _ *http.Request, _ []byte, _ int) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(503)
	io.WriteString(w, `{"error":{"message":"overloaded","type":"server_error"}}`)
}

// fakeBedrockEmbed answers InvokeModel for Titan (one vector per call) and
// Cohere (one per text), counting calls.
func fakeBedrockEmbed(t *testing.T, calls *atomic.Int32) *httptest.Server {
	t.Helper()
	s := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		calls.Add(1)
		body, _ := io.ReadAll(r.Body)
		w.Header().Set("Content-Type", "application/json")
		path := r.URL.EscapedPath()
		switch {
		case strings.Contains(path, "titan-embed") && strings.HasSuffix(path, "/invoke"):
			var in struct {
				InputText string `json:"inputText"`
			}
			if json.Unmarshal(body, &in) != nil || in.InputText == "" {
				w.WriteHeader(400)
				io.WriteString(w, `{"message":"Malformed input request"}`)
				return
			}
			fmt.Fprintf(w, `{"embedding":[0.5,-0.25,%d],"inputTextTokenCount":%d}`, len(in.InputText), len(in.InputText))
		case strings.Contains(path, "cohere.embed") && strings.HasSuffix(path, "/invoke"):
			var in struct {
				Texts     []string `json:"texts"`
				InputType string   `json:"input_type"`
			}
			json.Unmarshal(body, &in)
			vs := make([]string, len(in.Texts))
			for i := range in.Texts {
				vs[i] = fmt.Sprintf("[0.125,%d]", i)
			}
			w.Header().Set("X-Amzn-Bedrock-Input-Token-Count", "7")
			fmt.Fprintf(w, `{"id":"x","embeddings":[%s],"texts":[],"response_type":"embeddings_floats"}`, strings.Join(vs, ","))
		default:
			w.WriteHeader(404)
		}
	}))
	t.Cleanup(s.Close)
	return s
}

func postEmbed(t *testing.T, g *gateway, body string) (int, string) {
	t.Helper()
	resp, err := http.Post(g.URL+"/v1/embeddings", "application/json", strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	return resp.StatusCode, readAll(t, resp.Body)
}

func TestEmbeddingsPassthroughIsByteIdentical(t *testing.T) {
	up := newUpstream(t, embedOK)
	g := newGateway(t, fastPolicy+fmt.Sprintf(`
providers:
  oa: {kind: openai, base_url: %q, apis: [chat, embeddings]}
prices:
  oa/text-embedding-3-small: {input: 0.02, output: 0}
routes:
  emb: {targets: [{provider: oa, model: text-embedding-3-small}]}
`, up.URL+"/v1"), func(o *server.Options) { o.Cost = usage.Cost })
	in := `{ "input" : ["hello", "world"],  "model":"emb", "encoding_format":"float", "x_vendor": {"keep": true} }`
	status, out := postEmbed(t, g, in)
	if status != 200 || out != embedReply {
		t.Fatalf("status %d body %s, want the upstream's bytes", status, out)
	}
	want := strings.Replace(in, `"model":"emb"`, `"model":"text-embedding-3-small"`, 1)
	if got := string(up.body(0)); got != want {
		t.Errorf("upstream got %s\nwant %s", got, want)
	}
	// The official client, on both paths.
	client := g.sdk()
	res, err := client.Embeddings.New(context.Background(), openai.EmbeddingNewParams{Model: "emb",
		Input: openai.EmbeddingNewParamsInputUnion{OfArrayOfStrings: []string{"hello", "world"}}})
	if err != nil || len(res.Data) != 2 || res.Data[0].Embedding[0] != 0.0023064255 || res.Usage.PromptTokens != 8 {
		t.Fatalf("sdk: %v %+v", err, res)
	}
	recs := g.waitRecs(t, 2)
	r := recs[1]
	if r.Route == "" || r.API != "embeddings" || r.Outcome != "ok" || r.InputTokens != 8 || r.OutputTokens != 0 || r.Target != "oa/text-embedding-3-small" {
		t.Errorf("record %+v", r)
	}
	if want := 8 * 0.02 / 1e6; r.CostUSD < want*0.999 || r.CostUSD > want*1.001 {
		t.Errorf("cost %g, want %g (input tokens priced)", r.CostUSD, want)
	}
}

func TestEmbeddingsFailOverToAnotherOpenAITargetAndToBedrock(t *testing.T) {
	t.Setenv("AWS_ACCESS_KEY_ID", "AKIDTEST")
	t.Setenv("AWS_SECRET_ACCESS_KEY", "secret")
	t.Setenv("AWS_REGION", "us-east-1")
	down := newUpstream(t, embedDown)
	chatOnly := newUpstream(t, embedOK)
	up := newUpstream(t, embedOK)
	var brCalls atomic.Int32
	br := fakeBedrockEmbed(t, &brCalls)
	g := newGateway(t, fmt.Sprintf(`
defaults: {attempts: 1, backoff_base: 1ms, backoff_max: 2ms}
providers:
  down: {kind: openai, base_url: %q, apis: [embeddings]}
  chatonly: {kind: openai, base_url: %q}
  up: {kind: openai, base_url: %q, apis: [embeddings]}
  br: {kind: bedrock, region: us-east-1, endpoint: %q}
  anth: {kind: anthropic, base_url: "http://127.0.0.1:1"}
  gem: {kind: gemini, base_url: "http://127.0.0.1:1"}
prices:
  br/amazon.titan-embed-text-v2:0: {input: 0.02, output: 0}
routes:
  openai-chain:
    targets:
      - {provider: down, model: e}
      - {provider: chatonly, model: e}
      - {provider: up, model: e}
  titan:
    targets:
      - {provider: down, model: e}
      - {provider: anth, model: claude}
      - {provider: gem, model: gemini-embedding-001}
      - {provider: br, model: "amazon.titan-embed-text-v2:0"}
  cohere:
    targets:
      - {provider: br, model: "cohere.embed-multilingual-v3"}
`, down.URL+"/v1", chatOnly.URL+"/v1", up.URL+"/v1", br.URL), func(o *server.Options) { o.Cost = usage.Cost })
	client := g.sdk()
	ctx := context.Background()
	two := openai.EmbeddingNewParamsInputUnion{OfArrayOfStrings: []string{"hello", "world!"}}

	res, err := client.Embeddings.New(ctx, openai.EmbeddingNewParams{Model: "openai-chain", Input: two})
	if err != nil || len(res.Data) != 2 {
		t.Fatalf("openai chain: %v %+v", err, res)
	}
	if chatOnly.hits.Load() != 0 || up.hits.Load() != 1 {
		t.Errorf("hits: chat-only %d (want 0: it does not speak embeddings), up %d", chatOnly.hits.Load(), up.hits.Load())
	}

	res, err = client.Embeddings.New(ctx, openai.EmbeddingNewParams{Model: "titan", Input: two, Dimensions: openai.Int(256)})
	if err != nil {
		t.Fatalf("titan: %v", err)
	}
	if len(res.Data) != 2 || res.Data[1].Index != 1 || len(res.Data[1].Embedding) != 3 || res.Data[1].Embedding[2] != 6 ||
		res.Object != "list" || res.Usage.PromptTokens != 11 || res.Usage.TotalTokens != 11 || res.Model != "amazon.titan-embed-text-v2:0" {
		t.Errorf("titan answer %+v", res)
	}
	if brCalls.Load() != 2 {
		t.Errorf("%d InvokeModel calls, want one per input", brCalls.Load())
	}

	// base64: the gateway encodes the float32 vectors itself.
	status, out := postEmbed(t, g, `{"model":"cohere","input":"hola","encoding_format":"base64"}`)
	if status != 200 || !strings.Contains(out, `"embedding":"AAAAPgAAAAA="`) || !strings.Contains(out, `"prompt_tokens":7`) {
		t.Errorf("cohere base64: %d %s", status, out)
	}

	recs := g.waitRecs(t, 3)
	byRoute := map[string]exchange.Record{}
	for _, r := range recs {
		byRoute[r.Route] = r
	}
	if r := byRoute["titan"]; r.Provider != "br" || r.InputTokens != 11 || r.OutputTokens != 0 || r.FallbackDepth != 3 || r.CostUSD <= 0 {
		t.Errorf("titan record %+v", r)
	}
	refused := 0
	for _, a := range byRoute["titan"].Attempts {
		if p, _, _ := strings.Cut(a.Target, "/"); p == "anth" || p == "gem" {
			refused++
			if a.Status != 0 || a.Category != "invalid_request" {
				t.Errorf("%s: %+v, want refused before any call (the embeddings API is unsupported)", a.Target, a)
			}
		}
	}
	if refused != 2 {
		t.Errorf("attempts %+v: want anthropic and gemini refused", byRoute["titan"].Attempts)
	}

	// Token arrays reach passthrough targets only: Bedrock refuses them.
	status, out = postEmbed(t, g, `{"model":"cohere","input":[[1,2,3]]}`)
	if status != 400 || !strings.Contains(out, "token-array input") {
		t.Errorf("token arrays on bedrock: %d %s", status, out)
	}
}

func TestEmbeddingsBadInputIs400WithoutUpstreamCall(t *testing.T) {
	up := newUpstream(t, embedOK)
	g := newGateway(t, fastPolicy+fmt.Sprintf(`
providers:
  oa: {kind: openai, base_url: %q, apis: [embeddings]}
routes:
  emb: {targets: [{provider: oa, model: e}]}
`, up.URL+"/v1"))
	for name, tc := range map[string]struct{ body, param string }{
		"no model":         {`{"input":"x"}`, "model"},
		"no input":         {`{"model":"emb"}`, "input"},
		"empty string":     {`{"model":"emb","input":""}`, "input"},
		"empty array":      {`{"model":"emb","input":[]}`, "input"},
		"empty item":       {`{"model":"emb","input":["a",""]}`, "input"},
		"mixed array":      {`{"model":"emb","input":["a",1]}`, "input"},
		"object input":     {`{"model":"emb","input":{"a":1}}`, "input"},
		"float tokens":     {`{"model":"emb","input":[1.5]}`, "input"},
		"bad format":       {`{"model":"emb","input":"x","encoding_format":"int8"}`, "encoding_format"},
		"zero dimensions":  {`{"model":"emb","input":"x","dimensions":0}`, "dimensions"},
		"stream":           {`{"model":"emb","input":"x","stream":true}`, "stream"},
		"not json":         {`{"model":`, ""},
		"redirect field":   {`{"model":"emb","input":"x","base_url":"http://evil"}`, "base_url"},
		"duplicate model":  {`{"model":"emb","model":"other","input":"x"}`, ""},
		"negative dims":    {`{"model":"emb","input":"x","dimensions":-3}`, "dimensions"},
		"tokens and texts": {`{"model":"emb","input":[[1],"a"]}`, "input"},
	} {
		status, out := postEmbed(t, g, tc.body)
		var env struct {
			Error struct{ Type, Param string }
		}
		if status != 400 || json.Unmarshal([]byte(out), &env) != nil || env.Error.Type != "invalid_request" ||
			(tc.param != "" && env.Error.Param != tc.param) {
			t.Errorf("%s: %d %s", name, status, out)
		}
	}
	if n := up.hits.Load(); n != 0 {
		t.Errorf("%d upstream calls for bad input", n)
	}
	client := g.sdk()
	if _, err := client.Embeddings.New(context.Background(), openai.EmbeddingNewParams{Model: "emb",
		Input: openai.EmbeddingNewParamsInputUnion{OfArrayOfTokenArrays: [][]int64{{1, 2}, {3}}}}); err != nil {
		t.Errorf("token arrays pass through: %v", err)
	}
}

func TestEmbeddingsBudgetsCountInputTokens(t *testing.T) {
	up := newUpstream(t, embedOK)
	yaml := fastPolicy + fmt.Sprintf(`
providers:
  oa: {kind: openai, base_url: %q, apis: [embeddings]}
prices:
  oa/e: {input: 1000000, output: 0}
routes:
  emb: {targets: [{provider: oa, model: e}]}
teams:
  core:
    keys: [{id: k1, sha256: %q}]
    limits: {max_input_tokens: 50, cost_per_day_usd: 30}
`, up.URL+"/v1", teams.HashKey(teamKey))
	cfg, err := config.Parse([]byte(yaml))
	if err != nil {
		t.Fatal(err)
	}
	current := func() *config.Config { return cfg }
	log := slog.New(slog.DiscardHandler)
	lim := teams.NewLimiter(embedded.OpenMemory(), current, log)
	auth := teams.NewAuthenticator(current, log)
	g := newGateway(t, yaml, func(o *server.Options) {
		o.Authenticate, o.Admit, o.Cost = auth.Authenticate, lim.Admit, usage.Cost
	})
	client := openai.NewClient(option.WithBaseURL(g.URL+"/v1"), option.WithAPIKey(teamKey), option.WithMaxRetries(0))
	ctx := context.Background()
	_, err = client.Embeddings.New(ctx, openai.EmbeddingNewParams{Model: "emb",
		Input: openai.EmbeddingNewParamsInputUnion{OfString: openai.String(strings.Repeat("word ", 60))}})
	var ae *openai.Error
	if !errors.As(err, &ae) || ae.StatusCode != 400 || ae.Code != "max_input_tokens_exceeded" || ae.Param != "input" {
		t.Fatalf("over the input ceiling: %v", err)
	}
	// 20 estimated tokens at $1/token reserve $20 of the $30 day: the
	// first request is admitted (and settles at 8 tokens, $8), the second
	// still fits, the third does not.
	in := openai.EmbeddingNewParamsInputUnion{OfString: openai.String(strings.Repeat("abcd", 20))}
	for i := range 2 {
		if _, err := client.Embeddings.New(ctx, openai.EmbeddingNewParams{Model: "emb", Input: in}); err != nil {
			t.Fatalf("request %d: %v", i, err)
		}
	}
	_, err = client.Embeddings.New(ctx, openai.EmbeddingNewParams{Model: "emb", Input: in})
	if !errors.As(err, &ae) || ae.StatusCode != 429 || !strings.Contains(ae.Code, "budget") {
		t.Fatalf("over the day's budget: %v", err)
	}
	if n := up.hits.Load(); n != 2 {
		t.Errorf("%d upstream calls, want 2", n)
	}
}
