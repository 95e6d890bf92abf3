package bedrock_test

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync"
	"testing"

	"github.com/llmgw/llmgw/pkg/config"
	"github.com/llmgw/llmgw/pkg/exchange"
	"github.com/llmgw/llmgw/pkg/server"
	"github.com/llmgw/llmgw/pkg/usage"
)

// cachedBody asks for cache points on the system prompt, a user message
// and a tool.
const cachedBody = `{"model":"%s","tools":[{"type":"function","function":{"name":"get_time"},"cache_control":{"type":"ephemeral"}}],
	"messages":[{"role":"system","content":"Long rules.","cache_control":{"type":"ephemeral"}},
	{"role":"user","content":[{"type":"text","text":"Big doc","cache_control":{"type":"ephemeral"}},{"type":"text","text":"Question"}]}]}`

// TestPromptCachingFollowsTheModelTable drives the real gateway with
// targets of every model-id form: cache_control becomes cachePoint blocks
// only for models that support prompt caching (tools only for Claude),
// is dropped for the rest (never a 4xx), follows the per-target override,
// and every target is priced by its base model.
func TestPromptCachingFollowsTheModelTable(t *testing.T) {
	const sonnet = "anthropic.claude-sonnet-4-5-20250929-v1:0"
	const appProfile = "arn:aws:bedrock:us-east-1:123456789012:application-inference-profile/a1b2c3d4e5f6"
	cases := []struct {
		route, model, options   string
		system, messages, tools bool // cache points expected
	}{
		{"base", sonnet, "", true, true, true},
		{"us_profile", "us." + sonnet, "", true, true, true},
		{"global_profile", "global." + sonnet, "", true, true, true},
		{"profile_arn", "arn:aws:bedrock:us-east-1:123456789012:inference-profile/eu." + sonnet, "", true, true, true},
		{"foundation_arn", "arn:aws:bedrock:us-east-1::foundation-model/" + sonnet, "", true, true, true},
		{"app_profile_with_base_model", appProfile, "{base_model: " + sonnet + "}", true, true, true},
		{"app_profile_unknown", strings.Replace(appProfile, "a1b2c3d4e5f6", "zz9999", 1), "", false, false, false},
		{"nova_no_tool_cache", "us.amazon.nova-pro-v1:0", "", true, true, false},
		{"llama_unsupported", "us.meta.llama3-3-70b-instruct-v1:0", "", false, false, false},
		{"old_sonnet_unsupported", "anthropic.claude-3-5-sonnet-20240620-v1:0", "", false, false, false},
		{"forced_off", "us." + sonnet, "{prompt_caching: \"off\"}", false, false, false},
		{"forced_on", "us.meta.llama3-3-70b-instruct-v1:0", "{prompt_caching: \"on\"}", true, true, true},
	}
	f := newFake(t, reply{body: okConverse})
	awsEnv(t)
	var b strings.Builder
	b.WriteString("providers:\n  br: {kind: bedrock, region: us-east-1, endpoint: \"" + f.srv.URL + "\"}\nprices:\n  " +
		sonnet + ": {input: 3, output: 15}\n  amazon.nova-pro-v1:0: {input: 0.8, output: 3.2}\n  meta.llama3-3-70b-instruct-v1:0: {input: 0.72, output: 0.72}\n" +
		"  anthropic.claude-3-5-sonnet-20240620-v1:0: {input: 3, output: 15}\nroutes:\n")
	for _, c := range cases {
		opts := ""
		if c.options != "" {
			opts = ", options: " + c.options
		}
		b.WriteString("  " + c.route + ": {attempts: 1, targets: [{provider: br, model: \"" + c.model + "\"" + opts + "}]}\n")
	}
	cfg, err := config.Parse([]byte(b.String()))
	if err != nil {
		t.Fatalf("config: %v\n%s", err, b.String())
	}
	var mu sync.Mutex
	var recs []exchange.Record
	h, err := server.New(context.Background(), cfg, server.Options{
		Logger: slog.New(slog.NewTextHandler(io.Discard, nil)),
		Reporting: server.Reporting{
			Cost:   usage.Cost,
			Record: func(_ context.Context, r *exchange.Record) { mu.Lock(); recs = append(recs, *r); mu.Unlock() },
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(h)
	defer srv.Close()
	for i, c := range cases {
		resp, err := http.Post(srv.URL+"/v1/chat/completions", "application/json", strings.NewReader(strings.Replace(cachedBody, "%s", c.route, 1)))
		if err != nil {
			t.Fatal(err)
		}
		out, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != 200 {
			t.Errorf("%s: status %d: %s", c.route, resp.StatusCode, out)
			continue
		}
		req := f.requests()[i]
		if p, _ := url.PathUnescape(req.path); p != "/model/"+c.model+"/converse" || strings.Count(req.path, "/") != 3 {
			t.Errorf("%s: path %s, want the model id as one escaped segment", c.route, req.path)
		}
		has := func(field string) bool {
			b, _ := json.Marshal(req.body[field])
			return strings.Contains(string(b), "cachePoint")
		}
		if has("system") != c.system || has("messages") != c.messages || has("toolConfig") != c.tools {
			t.Errorf("%s: cache points system %v messages %v tools %v, want %v %v %v", c.route,
				has("system"), has("messages"), has("toolConfig"), c.system, c.messages, c.tools)
		}
	}
	mu.Lock()
	defer mu.Unlock()
	for i, r := range recs {
		c := cases[i]
		want := 18.0 / 1e6 // one input and one output token at the base model's price
		switch {
		case strings.Contains(c.model, "nova"):
			want = 4.0 / 1e6
		case strings.Contains(c.model, "llama"):
			want = 1.44 / 1e6
		case c.route == "app_profile_unknown":
			want = 0 // no base model known: unpriced, as any model without a price
		}
		if diff := r.CostUSD - want; diff > 1e-12 || diff < -1e-12 {
			t.Errorf("%s: cost %g, want %g", c.route, r.CostUSD, want)
		}
	}
}
