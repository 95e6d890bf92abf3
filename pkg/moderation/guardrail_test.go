package moderation_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/tidwall/gjson"

	"github.com/llmgw/llmgw/pkg/config"
	"github.com/llmgw/llmgw/pkg/exchange"
	"github.com/llmgw/llmgw/pkg/internal/testkit"
	"github.com/llmgw/llmgw/pkg/moderation"
	"github.com/llmgw/llmgw/pkg/server"
	"github.com/llmgw/llmgw/pkg/usage"
)

// fakeBedrock answers ApplyGuardrail (POST
// /guardrail/{id}/version/{version}/apply, restJson1) as Bedrock does:
// action NONE, or GUARDRAIL_INTERVENED with the assessments when the text
// holds badWord. mode "slow" answers after 1 s.
type fakeBedrock struct {
	*httptest.Server
	mode  atomic.Value // string
	mu    sync.Mutex
	calls []guardrailCall
}

// guardrailCall is one ApplyGuardrail request as the fake saw it.
type guardrailCall struct {
	path, source, text string
	signed             bool
}

func newFakeBedrock(t *testing.T) *fakeBedrock {
	f := &fakeBedrock{}
	f.mode.Store("")
	f.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		c := guardrailCall{path: r.URL.Path, source: gjson.GetBytes(body, "source").String(),
			text: gjson.GetBytes(body, "content.0.text.text").String(), signed: strings.HasPrefix(r.Header.Get("Authorization"), "AWS4-HMAC-SHA256 ")}
		f.mu.Lock()
		f.calls = append(f.calls, c)
		f.mu.Unlock()
		switch f.mode.Load() {
		case "slow":
			time.Sleep(time.Second)
		case "flaky-output": // answers fail where the answer turns bad
			if c.source == "OUTPUT" && strings.Contains(c.text, badWord) {
				w.Header().Set("Content-Type", "application/json")
				w.Header().Set("x-amzn-ErrorType", "ServiceUnavailableException:http://internal.amazon.com/coral/com.amazon.bedrock/")
				w.WriteHeader(http.StatusServiceUnavailable)
				io.WriteString(w, `{"message":"Service unavailable. Try your request again."}`)
				return
			}
		}
		units := (len([]rune(c.text)) + 999) / 1000
		usage := fmt.Sprintf(`{"topicPolicyUnits":%d,"contentPolicyUnits":%d,"wordPolicyUnits":%d,"sensitiveInformationPolicyUnits":%d,"sensitiveInformationPolicyFreeUnits":0,"contextualGroundingPolicyUnits":0}`, units, units, units, units)
		w.Header().Set("Content-Type", "application/json")
		w.Header().Set("x-amzn-RequestId", "b1c2d3e4-0000-4000-8000-000000000001")
		if !strings.Contains(c.text, badWord) {
			fmt.Fprintf(w, `{"usage":%s,"action":"NONE","outputs":[],"assessments":[{"invocationMetrics":{"guardrailProcessingLatency":12,"usage":%s,"guardrailCoverage":{"textCharacters":{"guarded":%d,"total":%d}}}}],"guardrailCoverage":{"textCharacters":{"guarded":%d,"total":%d}}}`,
				usage, usage, len(c.text), len(c.text), len(c.text), len(c.text))
			return
		}
		fmt.Fprintf(w, `{"usage":%s,"action":"GUARDRAIL_INTERVENED","actionReason":"Guardrail blocked.","outputs":[{"text":"Sorry, the model cannot answer this question."}],`+
			`"assessments":[{"topicPolicy":{"topics":[{"name":"Forbidden words","type":"DENY","action":"BLOCKED","detected":true}]},`+
			`"contentPolicy":{"filters":[{"type":"VIOLENCE","confidence":"HIGH","filterStrength":"HIGH","action":"BLOCKED","detected":true},{"type":"HATE","confidence":"NONE","filterStrength":"HIGH","action":"NONE","detected":false}]},`+
			`"wordPolicy":{"customWords":[{"match":%q,"action":"BLOCKED","detected":true}],"managedWordLists":[]},`+
			`"invocationMetrics":{"guardrailProcessingLatency":15,"usage":%s,"guardrailCoverage":{"textCharacters":{"guarded":%d,"total":%d}}}}]}`,
			usage, badWord, usage, len(c.text), len(c.text))
	}))
	t.Cleanup(f.Close)
	return f
}

func (f *fakeBedrock) taken() []guardrailCall {
	f.mu.Lock()
	defer f.mu.Unlock()
	c := f.calls
	f.calls = nil
	return c
}

// cleanWords is how many clean words come before badWord in a late answer.
const cleanWords = 40

// answerWords is the answer a generator gives: "Hello world", or, for a
// prompt with "say it late", cleanWords clean words and then badWord.
func answerWords(prompt string) []string {
	if !strings.Contains(prompt, "say it late") {
		return []string{"Hello", " world"}
	}
	var w []string
	for i := 0; i < cleanWords; i++ {
		w = append(w, fmt.Sprintf("clean%02d ", i))
	}
	return append(w, badWord, " and more", " words")
}

// chatGenerator is an OpenAI Chat Completions upstream.
func chatGenerator(s *scripted, w http.ResponseWriter, body []byte) {
	words := answerWords(gjson.GetBytes(body, "messages.#.content").String())
	head := `{"id":"chatcmpl-g","object":"chat.completion.chunk","created":1,"model":"gen-1","choices":`
	if !gjson.GetBytes(body, "stream").Bool() {
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprintf(w, `{"id":"chatcmpl-g","object":"chat.completion","created":1,"model":"gen-1","choices":[{"index":0,"message":{"role":"assistant","content":%q},"finish_reason":"stop"}],"usage":{"prompt_tokens":9,"completion_tokens":3,"total_tokens":12}}`, strings.Join(words, ""))
		return
	}
	w.Header().Set("Content-Type", "text/event-stream")
	fmt.Fprintf(w, "data: %s[{\"index\":0,\"delta\":{\"role\":\"assistant\",\"content\":\"\"},\"finish_reason\":null}]}\n\n", head)
	for _, x := range words {
		fmt.Fprintf(w, "data: %s[{\"index\":0,\"delta\":{\"content\":%q},\"finish_reason\":null}]}\n\n", head, x)
	}
	fmt.Fprintf(w, "data: %s[{\"index\":0,\"delta\":{},\"finish_reason\":\"stop\"}]}\n\n", head)
	fmt.Fprintf(w, "data: %s[],\"usage\":{\"prompt_tokens\":9,\"completion_tokens\":3,\"total_tokens\":12}}\n\n", head)
	io.WriteString(w, "data: [DONE]\n\n")
}

// messagesGenerator is an Anthropic Messages upstream.
func messagesGenerator(s *scripted, w http.ResponseWriter, body []byte) {
	words := answerWords(string(body))
	if !gjson.GetBytes(body, "stream").Bool() {
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprintf(w, `{"id":"msg_g","type":"message","role":"assistant","model":"claude-g","content":[{"type":"text","text":%q}],"stop_reason":"end_turn","stop_sequence":null,"usage":{"input_tokens":9,"output_tokens":3}}`, strings.Join(words, ""))
		return
	}
	w.Header().Set("Content-Type", "text/event-stream")
	ev := func(name, data string) { fmt.Fprintf(w, "event: %s\ndata: %s\n\n", name, data) }
	ev("message_start", `{"type":"message_start","message":{"id":"msg_g","type":"message","role":"assistant","model":"claude-g","content":[],"stop_reason":null,"stop_sequence":null,"usage":{"input_tokens":9,"output_tokens":1}}}`)
	ev("content_block_start", `{"type":"content_block_start","index":0,"content_block":{"type":"text","text":""}}`)
	for _, x := range words {
		ev("content_block_delta", fmt.Sprintf(`{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":%q}}`, x))
	}
	ev("content_block_stop", `{"type":"content_block_stop","index":0}`)
	ev("message_delta", `{"type":"message_delta","delta":{"stop_reason":"end_turn","stop_sequence":null},"usage":{"output_tokens":3}}`)
	ev("message_stop", `{"type":"message_stop"}`)
}

// grWorld is a gateway whose routes are moderated by a Bedrock guardrail
// reached through the real SDK client.
type grWorld struct {
	*httptest.Server
	bedrock  *fakeBedrock
	oai, ant *scripted
	logs     *testkit.SyncBuffer
	mu       sync.Mutex
	recs     []exchange.Record
}

func newGRWorld(t *testing.T) *grWorld {
	t.Setenv("AWS_ACCESS_KEY_ID", "AKIDGUARDRAILTEST")
	t.Setenv("AWS_SECRET_ACCESS_KEY", "guardrail-test-secret")
	t.Setenv("AWS_REGION", "us-east-1")
	t.Setenv("AWS_EC2_METADATA_DISABLED", "true")
	t.Setenv("AWS_CONFIG_FILE", "/nonexistent")
	t.Setenv("AWS_SHARED_CREDENTIALS_FILE", "/nonexistent")
	t.Setenv("LLMGW_TEST_ANT_KEY", "sk-ant-gen")
	w := &grWorld{logs: &testkit.SyncBuffer{}, bedrock: newFakeBedrock(t),
		oai: newScripted(t, "", chatGenerator), ant: newScripted(t, "", messagesGenerator)}
	slow := newFakeBedrock(t)
	slow.mode.Store("slow")
	flaky := newFakeBedrock(t)
	flaky.mode.Store("flaky-output")
	gr := func(endpoint, timeout string) string {
		return `{id: abc123def456, version: "3", endpoint: "` + endpoint + `", timeout: ` + timeout + `}`
	}
	cfg, err := config.Parse([]byte(`
defaults: {backoff_base: 1ms, backoff_max: 2ms, attempts: 1}
breaker: {consecutive_failures: 100000, min_requests: 100000}
providers:
  oai: {kind: openai, base_url: "` + w.oai.URL + `/v1"}
  ant: {kind: anthropic, base_url: "` + w.ant.URL + `", keys: [{env: LLMGW_TEST_ANT_KEY}]}
routes:
  oai: {moderation: aws, targets: [{provider: oai, model: g}]}
  ant: {moderation: aws, targets: [{provider: ant, model: claude-g, max_tokens: 100}]}
  in-only: {moderation: aws-in, targets: [{provider: oai, model: g}]}
  dead-closed: {moderation: dead-closed, targets: [{provider: oai, model: g}]}
  dead-open: {moderation: dead-open, targets: [{provider: oai, model: g}]}
  slow-closed: {moderation: slow-closed, targets: [{provider: oai, model: g}]}
  slow-open: {moderation: slow-open, targets: [{provider: oai, model: g}]}
  flaky-closed: {moderation: flaky-closed, targets: [{provider: oai, model: g}]}
  flaky-open: {moderation: flaky-open, targets: [{provider: oai, model: g}]}
prices:
  oai/g: {input: 0, output: 0}
  ant/claude-g: {input: 0, output: 0}
moderation:
  guardrail_prices: {topic: 0.5, content: 0.25}
  policies:
    aws: {mode: fail_closed, output: true, output_window: 60, guardrail: ` + gr(w.bedrock.URL, "2s") + `}
    aws-in: {mode: fail_closed, guardrail: ` + gr(w.bedrock.URL, "2s") + `}
    dead-closed: {mode: fail_closed, guardrail: ` + gr("http://127.0.0.1:1", "500ms") + `}
    dead-open: {mode: fail_open, guardrail: ` + gr("http://127.0.0.1:1", "500ms") + `}
    slow-closed: {mode: fail_closed, guardrail: ` + gr(slow.URL, "100ms") + `}
    slow-open: {mode: fail_open, guardrail: ` + gr(slow.URL, "100ms") + `}
    flaky-closed: {mode: fail_closed, output: true, output_window: 60, guardrail: ` + gr(flaky.URL, "2s") + `}
    flaky-open: {mode: fail_open, output: true, output_window: 60, guardrail: ` + gr(flaky.URL, "2s") + `}
`))
	if err != nil {
		t.Fatal(err)
	}
	log := slog.New(slog.NewJSONHandler(w.logs, nil))
	h, err := server.New(context.Background(), cfg, server.Options{
		Logger: log,
		Stages: server.Stages{Moderation: &moderation.Moderator{Logger: log}},
		Reporting: server.Reporting{Cost: usage.Cost, Record: func(_ context.Context, r *exchange.Record) {
			w.mu.Lock()
			w.recs = append(w.recs, *r)
			w.mu.Unlock()
		}},
	})
	if err != nil {
		t.Fatal(err)
	}
	w.Server = httptest.NewServer(h)
	t.Cleanup(w.Close)
	return w
}

// ingressBody is a request of api (chat, messages, responses) for route.
func ingressBody(api, route, prompt string, stream bool) (path, body string) {
	p, _ := json.Marshal(prompt + " " + sentinel)
	switch api {
	case "messages":
		return "/v1/messages", fmt.Sprintf(`{"model":%q,"max_tokens":100,"stream":%v,"messages":[{"role":"user","content":%s}]}`, route, stream, p)
	case "responses":
		return "/v1/responses", fmt.Sprintf(`{"model":%q,"stream":%v,"input":%s}`, route, stream, p)
	}
	return "/v1/chat/completions", fmt.Sprintf(`{"model":%q,"stream":%v,"messages":[{"role":"user","content":%s}]}`, route, stream, p)
}

func (w *grWorld) send(t *testing.T, api, route, prompt string, stream bool) (int, string, exchange.Record) {
	t.Helper()
	path, body := ingressBody(api, route, prompt, stream)
	w.mu.Lock()
	n := len(w.recs)
	w.mu.Unlock()
	req, _ := http.NewRequest(http.MethodPost, w.URL+path, strings.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	for deadline := time.Now().Add(5 * time.Second); time.Now().Before(deadline); time.Sleep(time.Millisecond) {
		w.mu.Lock()
		if len(w.recs) > n {
			rec := w.recs[len(w.recs)-1]
			w.mu.Unlock()
			return resp.StatusCode, string(b), rec
		}
		w.mu.Unlock()
	}
	t.Fatalf("no usage record for %s %s", api, route)
	return 0, "", exchange.Record{}
}

// guardrailAttempts returns the record's guardrail calls of a stage.
func guardrailAttempts(rec exchange.Record, stage string) []exchange.Attempt {
	var out []exchange.Attempt
	for _, a := range rec.Attempts {
		if a.Stage == stage && strings.HasPrefix(a.Target, "bedrock-guardrail/") {
			out = append(out, a)
		}
	}
	return out
}

// paths are the ingress and target pairs every guardrail test covers:
// passthrough (same API upstream) and translated, streamed and not.
var paths = []struct{ api, route string }{
	{"chat", "oai"}, {"chat", "ant"}, {"messages", "ant"}, {"messages", "oai"}, {"responses", "oai"}, {"responses", "ant"},
}

// The guardrail checks the input (source INPUT) before any model call,
// through the real SDK client (SigV4-signed, the service's path and JSON):
// an intervention is a 400 content_policy_violation in the client API's
// own error shape, with no upstream call; the decision, its reason, the
// text units and their price are on the usage record.
func TestGuardrailInputOnEveryIngress(t *testing.T) {
	w := newGRWorld(t)
	for _, p := range paths {
		for _, stream := range []bool{false, true} {
			name := fmt.Sprintf("%s->%s stream=%v", p.api, p.route, stream)
			w.oai.hits.Store(0)
			w.ant.hits.Store(0)
			status, body, rec := w.send(t, p.api, p.route, "please "+badWord, stream)
			if status != 400 || !strings.Contains(body, "content_policy_violation") || w.oai.hits.Load()+w.ant.hits.Load() != 0 {
				t.Fatalf("%s: %d %s (upstream hits %d)", name, status, body, w.oai.hits.Load()+w.ant.hits.Load())
			}
			if p.api == "messages" && gjson.Get(body, "type").String() != "error" || p.api != "messages" && !gjson.Get(body, "error.message").Exists() {
				t.Errorf("%s: not the API's error shape: %s", name, body)
			}
			calls := w.bedrock.taken()
			if len(calls) != 1 || calls[0].source != "INPUT" || calls[0].path != "/guardrail/abc123def456/version/3/apply" ||
				!calls[0].signed || !strings.Contains(calls[0].text, "please "+badWord) {
				t.Fatalf("%s: guardrail calls %+v", name, calls)
			}
			as := guardrailAttempts(rec, exchange.StageModerationInput)
			if len(as) != 1 || as[0].Decision != "block" || as[0].Reason != "content:VIOLENCE,topic:Forbidden words,word:custom" || as[0].TextUnits != 4 {
				t.Fatalf("%s: record attempts %+v", name, rec.Attempts)
			}
			// 1 unit each of topic (0.5), content (0.25), word (0),
			// sensitive information (0.10 default): per 1,000 units.
			if want := (0.5 + 0.25 + 0.10) / 1000; rec.CostUSD < want*0.999 || rec.CostUSD > want*1.001 || rec.Outcome != "content_policy" {
				t.Errorf("%s: cost %v outcome %s", name, rec.CostUSD, rec.Outcome)
			}
			status, body, _ = w.send(t, p.api, p.route, "hello there", stream)
			if status != 200 || !strings.Contains(body, "Hello") {
				t.Fatalf("%s: allowed request: %d %s", name, status, body)
			}
			calls = w.bedrock.taken()
			if len(calls) != 2 || calls[0].source != "INPUT" || calls[1].source != "OUTPUT" || calls[1].text != "Hello world" {
				t.Fatalf("%s: guardrail calls of an allowed request %+v", name, calls)
			}
		}
	}
	if strings.Contains(w.logs.String(), sentinel) || strings.Contains(w.logs.String(), badWord) {
		t.Errorf("a log line holds the text: %s", w.logs.String())
	}
	if !strings.Contains(w.logs.String(), `"layer":"guardrail","outcome":"block","category":"content:VIOLENCE,topic:Forbidden words,word:custom"`) {
		t.Errorf("the decision is not logged: %s", w.logs.String())
	}
}

// The answer is checked in windows (output_window 60, plus the 100
// characters before each): the clean windows are released as they pass,
// and the window with badWord ends the stream with the client API's own
// in-stream error - badWord never reaches the client. Not streamed, the
// refusal is a plain error response.
func TestGuardrailOutputWindowsEndTheStream(t *testing.T) {
	w := newGRWorld(t)
	for _, p := range paths {
		name := p.api + "->" + p.route
		status, body, rec := w.send(t, p.api, p.route, "say it late", true)
		if status != 200 || strings.Contains(body, badWord) || !strings.Contains(body, "clean05") {
			t.Fatalf("%s: the clean part must stream and badWord must not: %d %s", name, status, body)
		}
		switch p.api {
		case "chat":
			if !strings.Contains(body, `data: {"error":`) || strings.Contains(body, "[DONE]") {
				t.Errorf("%s: no in-stream error: %s", name, body)
			}
		case "messages":
			if !strings.Contains(body, "event: error") || strings.Contains(body, "message_stop") {
				t.Errorf("%s: no in-stream error: %s", name, body)
			}
		case "responses":
			if !strings.Contains(body, "response.failed") && !strings.Contains(body, "event: error") {
				t.Errorf("%s: no in-stream error: %s", name, body)
			}
		}
		if !strings.Contains(body, "content_policy_violation") {
			t.Errorf("%s: the error is not typed: %s", name, body)
		}
		calls := w.bedrock.taken()
		if len(calls) < 4 || calls[len(calls)-1].source != "OUTPUT" || !strings.Contains(calls[len(calls)-1].text, badWord) {
			t.Fatalf("%s: %d calls, last %+v", name, len(calls), calls[len(calls)-1])
		}
		for i, c := range calls[1:] {
			if n := len([]rune(c.text)); n > 60+100+len(badWord)+20 {
				t.Errorf("%s: window %d holds %d characters", name, i, n)
			}
		}
		out := guardrailAttempts(rec, exchange.StageModerationOutput)
		if len(out) != 2 || out[0].Decision != "allow" || out[0].Calls != len(calls)-2 || out[1].Decision != "block" || rec.Outcome != "content_policy" {
			t.Errorf("%s: output attempts (one per outcome) %+v, outcome %s", name, out, rec.Outcome)
		}
		status, body, _ = w.send(t, p.api, p.route, "say it late", false)
		if status != 400 || strings.Contains(body, badWord) || strings.Contains(body, "clean05") || !strings.Contains(body, "content_policy_violation") {
			t.Errorf("%s not streamed: %d %s", name, status, body)
		}
		w.bedrock.taken()
	}
}

// A guardrail that cannot answer - a dead endpoint, or one slower than
// the layer's timeout - blocks under fail_closed (502
// moderation_unavailable, nothing generated) and lets the request through
// under fail_open, after at most the timeout.
func TestGuardrailFailOpenAndFailClosed(t *testing.T) {
	w := newGRWorld(t)
	for _, c := range []struct {
		route  string
		status int
		reason string
	}{
		{"dead-closed", 502, "ApplyGuardrail failed: transport error"},
		{"dead-open", 200, "ApplyGuardrail failed: transport error"},
		{"slow-closed", 502, "timeout after 100ms"},
		{"slow-open", 200, "timeout after 100ms"},
	} {
		w.oai.hits.Store(0)
		start := time.Now()
		status, body, rec := w.send(t, "chat", c.route, "hello", false)
		took := time.Since(start)
		gen := w.oai.hits.Load()
		if status != c.status || (status == 502) != (gen == 0) {
			t.Fatalf("%s: %d %s, generator calls %d", c.route, status, body, gen)
		}
		if status == 502 && gjson.Get(body, "error.code").String() != "moderation_unavailable" {
			t.Errorf("%s: %s", c.route, body)
		}
		as := guardrailAttempts(rec, exchange.StageModerationInput)
		want := "error_blocked"
		if c.status == 200 {
			want = "error_allowed"
		}
		if len(as) != 1 || as[0].Decision != want || as[0].Reason != c.reason || as[0].Category == "" {
			t.Errorf("%s: attempts %+v", c.route, rec.Attempts)
		}
		if strings.HasPrefix(c.route, "slow") && took > 900*time.Millisecond {
			t.Errorf("%s: took %v: the 100ms timeout did not bound the call", c.route, took)
		}
	}
}

// A route with an input-only guardrail policy does not hold the answer.
func TestGuardrailInputOnlyLeavesTheAnswer(t *testing.T) {
	w := newGRWorld(t)
	if status, body, _ := w.send(t, "chat", "in-only", "say it late", true); status != 200 || !strings.Contains(body, badWord) || !strings.Contains(body, "[DONE]") {
		t.Fatalf("%d %s", status, body)
	}
	if calls := w.bedrock.taken(); len(calls) != 1 || calls[0].source != "INPUT" {
		t.Fatalf("calls %+v", calls)
	}
}

// A guardrail that fails on a window mid-answer: under fail_closed the
// stream ends there with moderation_unavailable in the client's format
// (nothing of that window sent); under fail_open the window is released
// unchecked and the answer completes.
func TestGuardrailOutputErrorMidStream(t *testing.T) {
	w := newGRWorld(t)
	status, body, rec := w.send(t, "chat", "flaky-closed", "say it late", true)
	if status != 200 || !strings.Contains(body, "clean05") || strings.Contains(body, badWord) || strings.Contains(body, "[DONE]") ||
		!strings.Contains(body, `"code":"moderation_unavailable"`) {
		t.Fatalf("fail_closed: %d %s", status, body)
	}
	out := guardrailAttempts(rec, exchange.StageModerationOutput)
	if n := len(out); n != 2 || out[1].Decision != "error_blocked" || out[1].Reason != "ApplyGuardrail failed: ServiceUnavailableException" || out[1].Status != 503 {
		t.Fatalf("fail_closed attempts %+v", out)
	}
	status, body, rec = w.send(t, "chat", "flaky-open", "say it late", true)
	if status != 200 || !strings.Contains(body, badWord) || !strings.Contains(body, "[DONE]") || rec.Outcome != "ok" {
		t.Fatalf("fail_open: %d %s", status, body)
	}
}
