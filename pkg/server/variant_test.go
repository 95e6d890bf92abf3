package server_test

import (
	"fmt"
	"net/http"
	"strings"
	"testing"
)

// TestVariantAppliedByteLevelWhenItsTargetServes: the primary fails before
// its first token and gets the client's bytes (model rewritten only); the
// fallback carries a variant and gets the same bytes with exactly the
// variant's edits. The record and the log line name the variant.
func TestVariantAppliedByteLevelWhenItsTargetServes(t *testing.T) {
	failing := newUpstream(t, func(w http.ResponseWriter, r *http.Request, _ []byte, _ int) {
		http.Error(w, `{"error":{"message":"down","type":"server_error"}}`, 503)
	})
	steady := newUpstream(t, okHandler)
	cfg := fastPolicy + fmt.Sprintf(`providers:
  p0: {kind: openai, base_url: %q}
  p1: {kind: openai, base_url: %q}
routes:
  m:
    attempts: 1
    targets:
      - {provider: p0, model: up-0}
      - provider: p1
        model: up-1
        variant: {name: fr-v2, system_suffix: " Réponds en français.", temperature: 0.1, max_tokens_cap: 100}
`, failing.URL+"/v1", steady.URL+"/v1")
	g := newGateway(t, cfg)
	const body = `{"model":"m", "messages":[{"role":"system","content":"Be brief."},{"role":"user","content":"hi"}],` +
		`"temperature": 1.2,"max_tokens":4000,"x_extra":{"a":[1,2]}}`
	resp := g.post(t, body)
	if out := readAll(t, resp.Body); resp.StatusCode != 200 || !strings.Contains(out, "Hello world") {
		t.Fatalf("status %d body %s", resp.StatusCode, out)
	}
	if got, want := string(failing.body(0)), strings.Replace(body, `"model":"m"`, `"model":"up-0"`, 1); got != want {
		t.Errorf("primary (no variant) got\n%s\nwant\n%s", got, want)
	}
	want := `{"model":"up-1", "messages":[{"role":"system","content":"Be brief. Réponds en français."},{"role":"user","content":"hi"}],` +
		`"temperature": 0.1,"max_tokens":100,"x_extra":{"a":[1,2]}}`
	if got := string(steady.body(0)); got != want {
		t.Errorf("variant target got\n%s\nwant\n%s", got, want)
	}
	recs := g.waitRecs(t, 1)
	if recs[0].Variant != "fr-v2" || recs[0].Target != "p1/up-1" {
		t.Errorf("record variant %q target %q", recs[0].Variant, recs[0].Target)
	}
	if lines := logLines(t, g, "request"); len(lines) != 1 || lines[0]["variant"] != "fr-v2" {
		t.Errorf("log lines = %v", lines)
	}
	if strings.Contains(g.logs.String(), "Réponds") || strings.Contains(g.logs.String(), "Be brief") {
		t.Error("prompt text in the logs")
	}
}

// TestVariantCapAddsALimitWhenTheClientGaveNone: a capped variant sends
// its cap on a request without max_tokens; a target without a variant
// sends the client's bytes untouched.
func TestVariantCapAddsALimitWhenTheClientGaveNone(t *testing.T) {
	up := newUpstream(t, okHandler)
	g := newGateway(t, fastPolicy+fmt.Sprintf(`providers:
  p0: {kind: openai, base_url: %q}
routes:
  m: {targets: [{provider: p0, model: up-0, variant: {name: capped, max_tokens_cap: 64}}]}
  plain: {targets: [{provider: p0, model: up-0}]}
`, up.URL+"/v1"))
	readAll(t, g.post(t, chatBody).Body)
	g.waitRecs(t, 1)
	readAll(t, g.post(t, strings.Replace(chatBody, `"m"`, `"plain"`, 1)).Body)
	if got := string(up.body(0)); got != `{"model":"up-0","messages":[{"role":"user","content":"hi"}],"max_tokens":64}` {
		t.Errorf("capped request = %s", got)
	}
	if got := string(up.body(1)); got != `{"model":"up-0","messages":[{"role":"user","content":"hi"}]}` {
		t.Errorf("plain request = %s", got)
	}
	recs := g.waitRecs(t, 2)
	if recs[0].Variant != "capped" || recs[1].Variant != "" {
		t.Errorf("variants %q %q", recs[0].Variant, recs[1].Variant)
	}
}

// TestVariantOnMessagesPassthrough: an Anthropic Messages client served
// by an Anthropic upstream gets the variant as byte-level edits of its own
// body (the system blocks, temperature, max_tokens), everything else kept;
// the upstream also receives the request's traceparent.
func TestVariantOnMessagesPassthrough(t *testing.T) {
	up := newUpstream(t, anthropicOK)
	t.Setenv(msgKeyEnv, msgKey)
	g := newGateway(t, fmt.Sprintf(`defaults: {attempts: 1}
providers:
  p0: {kind: anthropic, base_url: %q, keys: [{env: %s}]}
routes:
  claude:
    targets:
      - provider: p0
        model: up-model-0
        variant: {name: cc-v1, system_suffix: "Answer tersely.", temperature: 0.2, max_tokens_cap: 8192}
`, up.URL, msgKeyEnv))
	resp := g.postMessages(t, claudeCodeBody, "traceparent", clientTraceparent)
	if out := readAll(t, resp.Body); resp.StatusCode != 200 {
		t.Fatalf("status %d: %s", resp.StatusCode, out)
	}
	want := strings.NewReplacer(`"model":"claude"`, `"model":"up-model-0"`,
		`"cache_control":{"type":"ephemeral"}}],"tools"`, `"cache_control":{"type":"ephemeral"}},{"type":"text","text":"Answer tersely."}],"tools"`,
		`"max_tokens":32000`, `"max_tokens":8192`,
		`"stream":true}`, `"stream":true,"temperature":0.2}`).Replace(claudeCodeBody)
	if got := string(up.body(0)); got != want {
		t.Errorf("upstream body\n got %s\nwant %s", got, want)
	}
	if tp := up.header(0).Get("traceparent"); !strings.HasPrefix(tp, "00-"+clientTraceID+"-") {
		t.Errorf("traceparent to the Anthropic upstream = %q", tp)
	}
	if recs := g.waitRecs(t, 1); recs[0].Variant != "cc-v1" || recs[0].TraceID != clientTraceID {
		t.Errorf("record variant %q trace %q", recs[0].Variant, recs[0].TraceID)
	}
}

// TestMessagesErrorBodyCarriesTheTraceID: the Anthropic error shape names
// the trace id too.
func TestMessagesErrorBodyCarriesTheTraceID(t *testing.T) {
	up := newUpstream(t, anthropicOK)
	g := newGateway(t, msgRoute(t, "", "anthropic="+up.URL))
	resp := g.postMessages(t, `{"model":"nope","max_tokens":10,"messages":[{"role":"user","content":"hi"}]}`, "traceparent", clientTraceparent)
	body := readAll(t, resp.Body)
	if resp.StatusCode != 404 || !strings.Contains(body, `"trace_id":"`+clientTraceID+`"`) || !strings.HasPrefix(body, `{"type":"error"`) {
		t.Errorf("%d %s", resp.StatusCode, body)
	}
}
