package server_test

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"
)

// Item 14b (issue 13), through the HTTP front and the official SDK: an
// OpenAI-compatible primary is cut after "Hello wor"; the route continues
// on the next target that declares prefill (Anthropic), which is asked to
// continue the assistant's text and whose continuation is spliced into
// the same stream. The client sees one normal stream, the finish chunk
// carries the continuation mark, and the record and the log line name both
// attempts.
func TestCutStreamIsContinuedOnAPrefillTarget(t *testing.T) {
	t.Setenv("ANTHROPIC_TEST_KEY", "sk-ant-test-key-0000000000")
	primary := newUpstream(t, func(w http.ResponseWriter, r *http.Request, _ []byte, _ int) {
		w.Header().Set("Content-Type", "text/event-stream")
		io.WriteString(w, roleChunk(true)+contentChunk("Hello", true)+contentChunk(" wor", true)) // cut
	})
	noPrefill := newUpstream(t, okHandler)
	anth := newUpstream(t, func(w http.ResponseWriter, _ *http.Request, _ []byte, _ int) {
		w.Header().Set("Content-Type", "text/event-stream")
		for _, e := range []string{
			`event: message_start` + "\n" + `data: {"type":"message_start","message":{"id":"msg_cont","type":"message","role":"assistant","content":[],"model":"claude-sonnet-4-5","usage":{"input_tokens":30,"output_tokens":1}}}`,
			`event: content_block_start` + "\n" + `data: {"type":"content_block_start","index":0,"content_block":{"type":"text","text":""}}`,
			`event: content_block_delta` + "\n" + `data: {"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"ld!"}}`,
			`event: content_block_stop` + "\n" + `data: {"type":"content_block_stop","index":0}`,
			`event: message_delta` + "\n" + `data: {"type":"message_delta","delta":{"stop_reason":"end_turn","stop_sequence":null},"usage":{"output_tokens":2}}`,
			`event: message_stop` + "\n" + `data: {"type":"message_stop"}`,
		} {
			io.WriteString(w, e+"\n\n")
		}
	})
	g := newGateway(t, fastPolicy+fmt.Sprintf(`
providers:
  openai:    {kind: openai, base_url: %q}
  other:     {kind: openai, base_url: %q}
  anthropic: {kind: anthropic, base_url: %q, keys: [{env: ANTHROPIC_TEST_KEY}]}
routes:
  m:
    attempts: 1
    continuation: true
    targets:
      - {provider: openai, model: gpt-4.1}
      - {provider: other, model: gpt-4.1-mini}
      - {provider: anthropic, model: claude-sonnet-4-5, prefill: true}
`, primary.URL+"/v1", noPrefill.URL+"/v1", anth.URL))
	chunks, acc, err := sdkStream(t, g, "m")
	if err != nil {
		t.Fatalf("stream error %v: the continuation must complete the stream", err)
	}
	if got := acc.Choices[0].Message.Content; got != "Hello world!" || acc.Choices[0].FinishReason != "stop" {
		t.Fatalf("answer %q finish %q", got, acc.Choices[0].FinishReason)
	}
	var mark struct {
		Cut         string   `json:"cut"`
		ContinuedBy []string `json:"continued_by"`
	}
	roles := 0
	for _, c := range chunks {
		if len(c.Choices) > 0 && c.Choices[0].Delta.Role != "" {
			roles++
		}
		if c.ID != chunks[0].ID {
			t.Errorf("chunk id %q, want the stream's %q throughout", c.ID, chunks[0].ID)
		}
		if raw, ok := c.JSON.ExtraFields["x_gateway_continuation"]; ok {
			if len(c.Choices) == 0 || c.Choices[0].FinishReason != "stop" {
				t.Errorf("the continuation mark is not on the finish chunk: %s", c.RawJSON())
			}
			json.Unmarshal([]byte(raw.Raw()), &mark)
		}
	}
	if roles != 1 || mark.Cut != "openai/gpt-4.1" || len(mark.ContinuedBy) != 1 || mark.ContinuedBy[0] != "anthropic/claude-sonnet-4-5" {
		t.Errorf("%d role chunks, mark %+v", roles, mark)
	}
	if noPrefill.hits.Load() != 0 {
		t.Error("a target without prefill was asked")
	}
	var sent struct {
		Messages []struct {
			Role    string `json:"role"`
			Content []struct {
				Text string `json:"text"`
			} `json:"content"`
		} `json:"messages"`
	}
	json.Unmarshal(anth.body(0), &sent)
	if n := len(sent.Messages); n != 2 || sent.Messages[1].Role != "assistant" || sent.Messages[1].Content[0].Text != "Hello wor" {
		t.Errorf("anthropic was asked %s", anth.body(0))
	}
	rec := g.waitRecs(t, 1)[0]
	if rec.Outcome != "ok" || len(rec.Attempts) != 2 || !rec.Attempts[1].Continues || len(rec.ContinuedBy) != 1 || rec.OutputTokens < 3 {
		t.Errorf("record %+v", rec)
	}
	if int(acc.Usage.CompletionTokens) != rec.OutputTokens || int(acc.Usage.PromptTokens) != rec.InputTokens {
		t.Errorf("usage chunk %+v, record %d in %d out: the client is told every attempt's tokens", acc.Usage, rec.InputTokens, rec.OutputTokens)
	}
	if !strings.Contains(g.logs.String(), `"continued_by":["anthropic/claude-sonnet-4-5"]`) {
		t.Errorf("log line: %s", g.logs.String())
	}
}

// Item 14a (issue 13) through the HTTP front: with a head buffer, a primary
// cut inside the window fails over invisibly; the client sees only the
// secondary's answer.
func TestCutInsideTheHeadBufferFailsOverInvisibly(t *testing.T) {
	primary := newUpstream(t, func(w http.ResponseWriter, r *http.Request, _ []byte, _ int) {
		w.Header().Set("Content-Type", "text/event-stream")
		io.WriteString(w, roleChunk(true)+contentChunk("PRIMARY-HEAD", true)) // cut
	})
	secondary := newUpstream(t, okHandler)
	g := newGateway(t, oneRoute("    attempts: 1\n    head_buffer: {tokens: 20}\n", primary.URL, secondary.URL))
	out := readAll(t, g.post(t, streamBody).Body)
	if strings.Contains(out, "PRIMARY-HEAD") || strings.Contains(out, `"error"`) || !strings.Contains(out, "Hello") ||
		!strings.HasSuffix(out, "data: [DONE]\n\n") || strings.Count(out, `"role":"assistant"`) != 1 {
		t.Fatalf("client saw: %s", out)
	}
	rec := g.waitRecs(t, 1)[0]
	if rec.Target != "p1/up-model-1" || rec.Attempts[0].Phase != "head" || rec.Outcome != "ok" {
		t.Errorf("record %+v", rec)
	}
}
