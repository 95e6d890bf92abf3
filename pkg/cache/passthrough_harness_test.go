package cache_test

import (
	"context"
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

	anthropic "github.com/anthropics/anthropic-sdk-go/v2"
	aoption "github.com/anthropics/anthropic-sdk-go/v2/option"
	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"
	"github.com/tidwall/gjson"

	"github.com/llmgw/llmgw/pkg/cache"
	"github.com/llmgw/llmgw/pkg/config"
	"github.com/llmgw/llmgw/pkg/exchange"
	"github.com/llmgw/llmgw/pkg/pacing"
	"github.com/llmgw/llmgw/pkg/server"
	"github.com/llmgw/llmgw/pkg/store/embedded"
)

// The harness of the native passthrough tests (passthrough_test.go): an
// Anthropic and an OpenAI Responses upstream speaking their real wire
// formats, the gateway over them with the cache and a manually clocked
// pacer, and the official SDKs pointed at it.

const anthKeyEnv = "LLMGW_TEST_CACHE_ANTHROPIC_KEY"

// sse writes frames (each "event: name\ndata: json"), flushed.
func sse(w http.ResponseWriter, frames ...string) {
	for _, f := range frames {
		io.WriteString(w, f+"\n\n")
	}
	w.(http.Flusher).Flush()
}

func anthFrame(typ, data string) string { return "event: " + typ + "\ndata: " + data }

// anthropicStream is an Anthropic answer with a signed thinking block, a
// text block of texts and a tool_use block, ending for tool_use; hold (if
// set) is awaited before the end.
func anthropicStream(w http.ResponseWriter, texts []string, hold <-chan struct{}) {
	w.Header().Set("Content-Type", "text/event-stream; charset=utf-8")
	sse(w, anthFrame("message_start", `{"type":"message_start","message":{"id":"msg_01XFDUDYJgAACzvnptvVoYEL","type":"message","role":"assistant","model":"claude-sonnet-4-5-20250929","content":[],"stop_reason":null,"stop_sequence":null,"usage":{"input_tokens":25,"cache_creation_input_tokens":0,"cache_read_input_tokens":100,"output_tokens":1}}}`),
		anthFrame("content_block_start", `{"type":"content_block_start","index":0,"content_block":{"type":"thinking","thinking":"","signature":""}}`),
		anthFrame("content_block_delta", `{"type":"content_block_delta","index":0,"delta":{"type":"thinking_delta","thinking":"Let me think."}}`),
		anthFrame("content_block_delta", `{"type":"content_block_delta","index":0,"delta":{"type":"signature_delta","signature":"EqQBCgIYAhIM1gbcDa9GJwZA2b3hGgxBdjrkzLoky3dl1pkiMOYds"}}`),
		anthFrame("content_block_stop", `{"type":"content_block_stop","index":0}`),
		anthFrame("ping", `{"type": "ping"}`),
		anthFrame("content_block_start", `{"type":"content_block_start","index":1,"content_block":{"type":"text","text":""}}`))
	for _, t := range texts {
		sse(w, anthFrame("content_block_delta", fmt.Sprintf(`{"type":"content_block_delta","index":1,"delta":{"type":"text_delta","text":%q}}`, t)))
	}
	if hold != nil {
		<-hold
	}
	sse(w, anthFrame("content_block_stop", `{"type":"content_block_stop","index":1}`),
		anthFrame("content_block_start", `{"type":"content_block_start","index":2,"content_block":{"type":"tool_use","id":"toolu_01T1x1fJ34qAmk2tNTrN7Up6","name":"get_weather","input":{}}}`),
		anthFrame("content_block_delta", `{"type":"content_block_delta","index":2,"delta":{"type":"input_json_delta","partial_json":"{\"location\": \"Paris\"}"}}`),
		anthFrame("content_block_stop", `{"type":"content_block_stop","index":2}`),
		anthFrame("message_delta", `{"type":"message_delta","delta":{"stop_reason":"tool_use","stop_sequence":null},"usage":{"output_tokens":89}}`),
		anthFrame("message_stop", `{"type":"message_stop"}`))
}

const anthropicBody = `{"id":"msg_013Zva2CMHLNnXjNJJKqJ2EF","type":"message","role":"assistant","model":"claude-sonnet-4-5-20250929","content":[{"type":"thinking","thinking":"Hmm.","signature":"EqQBsig"},{"type":"text","text":"Whole answer."},{"type":"tool_use","id":"toolu_01A","name":"get_weather","input":{"location":"Oslo"}}],"stop_reason":"tool_use","stop_sequence":null,"usage":{"input_tokens":2095,"cache_creation_input_tokens":0,"cache_read_input_tokens":1800,"output_tokens":503}}`

// responsesStream is an OpenAI Responses answer: a message of texts and a
// function call; hold (if set) is awaited before the end.
func responsesStream(w http.ResponseWriter, texts []string, hold <-chan struct{}) {
	w.Header().Set("Content-Type", "text/event-stream; charset=utf-8")
	seq := 0
	ev := func(data string) string {
		data = strings.Replace(data, `{"type":"`, fmt.Sprintf(`{"sequence_number":%d,"type":"`, seq), 1)
		seq++
		return "event: " + gjson.Get(data, "type").Str + "\ndata: " + data
	}
	sse(w, ev(`{"type":"response.created","response":{"id":"resp_up1","object":"response","created_at":1741290958,"status":"in_progress","model":"gpt-5-2025-08-07","output":[]}}`),
		ev(`{"type":"response.in_progress","response":{"id":"resp_up1","object":"response","created_at":1741290958,"status":"in_progress","model":"gpt-5-2025-08-07","output":[]}}`),
		ev(`{"type":"response.output_item.added","output_index":0,"item":{"id":"msg_up1","type":"message","status":"in_progress","content":[],"role":"assistant"}}`),
		ev(`{"type":"response.content_part.added","item_id":"msg_up1","output_index":0,"content_index":0,"part":{"type":"output_text","annotations":[],"text":""}}`))
	all := strings.Join(texts, "")
	for _, t := range texts {
		sse(w, ev(fmt.Sprintf(`{"type":"response.output_text.delta","item_id":"msg_up1","output_index":0,"content_index":0,"delta":%q,"logprobs":[],"obfuscation":"Zx9"}`, t)))
	}
	if hold != nil {
		<-hold
	}
	msg := fmt.Sprintf(`{"id":"msg_up1","type":"message","status":"completed","content":[{"type":"output_text","annotations":[],"logprobs":[],"text":%q}],"role":"assistant"}`, all)
	call := `{"id":"fc_up1","type":"function_call","status":"completed","arguments":"{\"city\":\"Paris\"}","call_id":"call_up1","name":"get_weather"}`
	sse(w, ev(fmt.Sprintf(`{"type":"response.output_text.done","item_id":"msg_up1","output_index":0,"content_index":0,"text":%q,"logprobs":[]}`, all)),
		ev(fmt.Sprintf(`{"type":"response.content_part.done","item_id":"msg_up1","output_index":0,"content_index":0,"part":{"type":"output_text","annotations":[],"text":%q}}`, all)),
		ev(`{"type":"response.output_item.done","output_index":0,"item":`+msg+`}`),
		ev(`{"type":"response.output_item.added","output_index":1,"item":{"id":"fc_up1","type":"function_call","status":"in_progress","arguments":"","call_id":"call_up1","name":"get_weather"}}`),
		ev(`{"type":"response.function_call_arguments.delta","item_id":"fc_up1","output_index":1,"delta":"{\"city\":\"Paris\"}"}`),
		ev(`{"type":"response.function_call_arguments.done","item_id":"fc_up1","output_index":1,"arguments":"{\"city\":\"Paris\"}"}`),
		ev(`{"type":"response.output_item.done","output_index":1,"item":`+call+`}`),
		ev(`{"type":"response.completed","response":{"id":"resp_up1","object":"response","created_at":1741290958,"status":"completed","model":"gpt-5-2025-08-07","output":[`+msg+`,`+call+`],"usage":{"input_tokens":31,"input_tokens_details":{"cached_tokens":8},"output_tokens":5,"output_tokens_details":{"reasoning_tokens":2},"total_tokens":36}}}`))
}

const responsesBody = `{"id":"resp_up2","object":"response","created_at":1741290958,"status":"completed","model":"gpt-5-2025-08-07","output":[{"id":"rs_1","type":"reasoning","summary":[{"type":"summary_text","text":"Thought briefly."}]},{"id":"msg_up2","type":"message","status":"completed","content":[{"type":"output_text","annotations":[],"text":"Native whole"}],"role":"assistant"}],"usage":{"input_tokens":12,"input_tokens_details":{"cached_tokens":0},"output_tokens":3,"output_tokens_details":{"reasoning_tokens":0},"total_tokens":15}}`

// nativeUpstreams are an Anthropic and an OpenAI Responses upstream
// speaking their real wire formats; the prompt "paced" streams texts of
// paced and holds the end until release is closed.
type nativeUpstreams struct {
	anth, oai   *httptest.Server
	anthN, oaiN atomic.Int32
	paced       []string

	mu      sync.Mutex
	release chan struct{} // the hold of the next paced answer
	opened  bool
}

func newNativeUpstreams(t *testing.T) *nativeUpstreams {
	u := &nativeUpstreams{}
	u.arm()
	t.Cleanup(u.open)
	texts := func(body []byte) ([]string, <-chan struct{}) {
		if strings.Contains(string(body), "paced") {
			u.mu.Lock()
			defer u.mu.Unlock()
			return u.paced, u.release
		}
		return []string{"Hello", " from", " upstream"}, nil
	}
	u.anth = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		u.anthN.Add(1)
		body, _ := io.ReadAll(r.Body)
		if r.URL.Path != "/v1/messages" {
			w.WriteHeader(404)
			return
		}
		if gjson.GetBytes(body, "stream").Bool() {
			ts, hold := texts(body)
			anthropicStream(w, ts, hold)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, anthropicBody)
	}))
	u.oai = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		u.oaiN.Add(1)
		body, _ := io.ReadAll(r.Body)
		if r.URL.Path != "/v1/responses" {
			w.WriteHeader(404)
			return
		}
		if gjson.GetBytes(body, "stream").Bool() {
			ts, hold := texts(body)
			responsesStream(w, ts, hold)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, responsesBody)
	}))
	t.Cleanup(u.anth.Close)
	t.Cleanup(u.oai.Close)
	return u
}

// arm makes the next paced answer hold its end until open.
func (u *nativeUpstreams) arm() {
	u.mu.Lock()
	u.release, u.opened = make(chan struct{}), false
	u.mu.Unlock()
}

// open lets the held paced answer finish.
func (u *nativeUpstreams) open() {
	u.mu.Lock()
	if !u.opened {
		close(u.release)
		u.opened = true
	}
	u.mu.Unlock()
}

// manualClock is the pacer's clock: time passes only when the pacer waits
// (After moves it on by the wait, at once), so the text released per
// second of it is exactly what the profile lets out, however loaded the
// machine.
type manualClock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *manualClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

func (c *manualClock) After(d time.Duration) <-chan time.Time {
	c.mu.Lock()
	c.t = c.t.Add(d)
	ch := make(chan time.Time, 1)
	ch <- c.t
	c.mu.Unlock()
	return ch
}

// nativeGateway is the gateway over route claude (Anthropic: Messages
// passthrough) and route codex (OpenAI with apis [chat, responses]:
// Responses passthrough), both cached, with the pacer on clk.
type nativeGateway struct {
	*httptest.Server
	recs atomic.Int32
}

func newNativeGateway(t *testing.T, up *nativeUpstreams, clk *manualClock) *nativeGateway {
	t.Helper()
	t.Setenv(anthKeyEnv, "sk-ant-api03-upstream-secret")
	cfg, err := config.Parse([]byte(`
defaults: {backoff_base: 1ms, backoff_max: 2ms, attempts: 1}
providers:
  anth: {kind: anthropic, base_url: "` + up.anth.URL + `", keys: [{env: ` + anthKeyEnv + `}]}
  oai: {kind: openai, base_url: "` + up.oai.URL + `/v1", apis: [chat, responses]}
routes:
  claude: {cache: {enabled: true}, targets: [{provider: anth, model: claude-sonnet-4-5, max_tokens: 1024}]}
  codex: {cache: {enabled: true}, targets: [{provider: oai, model: gpt-5}]}
`))
	if err != nil {
		t.Fatal(err)
	}
	st := embedded.OpenMemory()
	t.Cleanup(func() { st.Close() })
	g := &nativeGateway{}
	h, err := server.New(context.Background(), cfg, server.Options{
		Logger:    slog.New(slog.DiscardHandler),
		Now:       time.Now,
		Stages:    server.Stages{Cache: cache.New(st, cache.Options{}), Pacing: pacing.Pacer{Now: clk.Now, After: clk.After}},
		Reporting: server.Reporting{Record: func(context.Context, *exchange.Record) { g.recs.Add(1) }},
	})
	if err != nil {
		t.Fatal(err)
	}
	g.Server = httptest.NewServer(h)
	t.Cleanup(g.Close)
	return g
}

// settled waits for the record of the n-th request: the cache entry is
// written before it, after the client has its answer.
func (g *nativeGateway) settled(t *testing.T, n int32) {
	t.Helper()
	for deadline := time.Now().Add(5 * time.Second); g.recs.Load() < n; time.Sleep(2 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("no record for request %d", n)
		}
	}
}

func (g *nativeGateway) anthropic() anthropic.Client {
	return anthropic.NewClient(aoption.WithBaseURL(g.URL+"/"), aoption.WithAPIKey("sk-ant-client"), aoption.WithMaxRetries(0))
}

func (g *nativeGateway) openai() openai.Client {
	return openai.NewClient(option.WithBaseURL(g.URL+"/v1"), option.WithAPIKey("sk-client"), option.WithMaxRetries(0))
}

func messageParams(prompt string) anthropic.MessageNewParams {
	return anthropic.MessageNewParams{Model: "claude", MaxTokens: 512,
		Messages: []anthropic.MessageParam{anthropic.NewUserMessage(anthropic.NewTextBlock(prompt))}}
}
