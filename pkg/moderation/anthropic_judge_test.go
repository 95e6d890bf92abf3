package moderation_test

import (
	"context"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/tidwall/gjson"

	"github.com/llmgw/llmgw/pkg/config"
	"github.com/llmgw/llmgw/pkg/moderation"
	"github.com/llmgw/llmgw/pkg/server"
)

// A check route served by Anthropic (an adapter that builds from the
// Prompt): the judge gets the policy as the system prompt and the text as
// the user turn, and its verdict blocks the request.
func TestCheckRouteOnAnAnthropicJudge(t *testing.T) {
	t.Setenv("LLMGW_TEST_JUDGE_KEY", "sk-ant-judge")
	var sent []byte
	judge := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		sent, _ = io.ReadAll(r.Body)
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, `{"id":"msg_j","type":"message","role":"assistant","model":"claude-haiku-4-5","content":[{"type":"text","text":"{\"verdict\":\"block\",\"category\":\"violence\"}"}],"stop_reason":"end_turn","usage":{"input_tokens":50,"output_tokens":10}}`)
	}))
	t.Cleanup(judge.Close)
	gen := newScripted(t, "", generatorHandler)
	cfg, err := config.Parse([]byte(`
defaults: {attempts: 1}
providers:
  gen: {kind: openai, base_url: "` + gen.URL + `/v1"}
  judge: {kind: anthropic, base_url: "` + judge.URL + `", keys: [{env: LLMGW_TEST_JUDGE_KEY}]}
routes:
  m: {moderation: checked, targets: [{provider: gen, model: g}]}
  judge: {targets: [{provider: judge, model: claude-haiku-4-5, max_tokens: 64}]}
moderation:
  policies:
    checked: {mode: fail_closed, check: {route: judge, prompt: "Block violence.", timeout: 2s}}
`))
	if err != nil {
		t.Fatal(err)
	}
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	h, err := server.New(context.Background(), cfg, server.Options{Logger: log, Stages: server.Stages{Moderation: &moderation.Moderator{Logger: log}}})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	resp, err := http.Post(srv.URL+"/v1/chat/completions", "application/json", strings.NewReader(`{"model":"m","messages":[{"role":"user","content":"hit him"}]}`))
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 400 || gen.hits.Load() != 0 {
		t.Errorf("status %d, generator hits %d: %s", resp.StatusCode, gen.hits.Load(), body)
	}
	if !strings.HasPrefix(gjson.GetBytes(sent, "system.0.text").String(), "Block violence.") ||
		!strings.Contains(gjson.GetBytes(sent, "messages.0.content.0.text").String(), "\nhit him") || !strings.HasPrefix(gjson.GetBytes(sent, "messages.0.content.0.text").String(), "<<<TEXT ") || gjson.GetBytes(sent, "temperature").Float() != 0 {
		t.Errorf("the judge got %s", sent)
	}
}
