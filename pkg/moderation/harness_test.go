package moderation_test

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

	"github.com/tidwall/gjson"

	"github.com/llmgw/llmgw/pkg/config"
	"github.com/llmgw/llmgw/pkg/exchange"
	"github.com/llmgw/llmgw/pkg/internal/testkit"
	"github.com/llmgw/llmgw/pkg/moderation"
	"github.com/llmgw/llmgw/pkg/server"
	"github.com/llmgw/llmgw/pkg/usage"
)

// sentinel is in every prompt: it must never appear in a log line.
const sentinel = "SENTINEL-PROMPT-7731"

// badWord in a text makes the judge (in "content" mode) block it; a
// prompt asking for it makes the generator answer with it.
const badWord = "BADWORD"

// scripted is a test upstream whose behaviour is switched by mode.
type scripted struct {
	*httptest.Server
	mode  atomic.Value // string
	hits  atomic.Int32
	mu    sync.Mutex
	auths []string
	texts []string
}

func (s *scripted) set(m string) { s.mode.Store(m) }
func (s *scripted) get() string  { m, _ := s.mode.Load().(string); return m }

func newScripted(t *testing.T, mode string, h func(s *scripted, w http.ResponseWriter, body []byte)) *scripted {
	s := &scripted{}
	s.set(mode)
	s.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		s.hits.Add(1)
		body, _ := io.ReadAll(r.Body)
		s.mu.Lock()
		s.auths = append(s.auths, r.Header.Get("Authorization"))
		s.mu.Unlock()
		h(s, w, body)
	}))
	t.Cleanup(s.Close)
	return s
}

// endpointHandler is an OpenAI moderation endpoint: allow, flag (violence),
// minors (sexual/minors), 500, timeout (answers after 1 s), malformed.
func endpointHandler(s *scripted, w http.ResponseWriter, body []byte) {
	s.mu.Lock()
	s.texts = append(s.texts, gjson.GetBytes(body, "input").String())
	s.mu.Unlock()
	result := func(flagged bool, cat string) {
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprintf(w, `{"id":"modr-1","model":"omni-moderation-latest","results":[{"flagged":%v,"categories":{"violence":%v,"sexual/minors":%v,"harassment":false},"category_scores":{"violence":0.9}}]}`,
			flagged, cat == "violence", cat == "sexual/minors")
	}
	switch s.get() {
	case "allow":
		result(false, "")
	case "flag":
		result(true, "violence")
	case "minors":
		result(true, "sexual/minors")
	case "500":
		w.WriteHeader(500)
		io.WriteString(w, `{"error":{"message":"internal"}}`)
	case "timeout":
		time.Sleep(time.Second)
		result(false, "")
	case "malformed":
		io.WriteString(w, `{"results":"nope"}`)
	}
}

// judgeHandler is the check route's upstream: allow, block, fenced (an
// allow verdict in a ```json fence), 500, timeout, malformed (prose),
// badverdict ({"verdict":"maybe"}), content (blocks text with badWord).
func judgeHandler(s *scripted, w http.ResponseWriter, body []byte) {
	text := gjson.GetBytes(body, "messages.1.content").String()
	s.mu.Lock()
	s.texts = append(s.texts, text)
	s.mu.Unlock()
	reply := func(content string) {
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprintf(w, `{"id":"chatcmpl-j","object":"chat.completion","created":1,"model":"judge-1","choices":[{"index":0,"message":{"role":"assistant","content":%q},"finish_reason":"stop"}],"usage":{"prompt_tokens":50,"completion_tokens":10,"total_tokens":60}}`, content)
	}
	switch s.get() {
	case "allow":
		reply(`{"verdict":"allow","category":""}`)
	case "block":
		reply(`{"verdict":"block","category":"violence"}`)
	case "fenced":
		reply("```json\n{\"verdict\": \"allow\", \"category\": null, \"reason\": \"fine\"}\n```")
	case "500":
		w.WriteHeader(500)
		io.WriteString(w, `{"error":{"message":"internal"}}`)
	case "timeout":
		time.Sleep(time.Second)
		reply(`{"verdict":"allow"}`)
	case "malformed":
		reply("Sure! That looks fine to me.")
	case "badverdict":
		reply(`{"verdict":"maybe"}`)
	case "content":
		if strings.Contains(text, badWord) {
			reply(`{"verdict":"block","category":"profanity"}`)
		} else {
			reply(`{"verdict":"allow","category":""}`)
		}
	}
}

// generatorHandler answers "Hello world", or a sentence with badWord when
// the prompt asks for it; streamed or not.
func generatorHandler(s *scripted, w http.ResponseWriter, body []byte) {
	words := []string{"Hello", " world"}
	if strings.Contains(gjson.GetBytes(body, "messages.0.content").String(), "say it") {
		words = []string{"this is ", badWord, " text"}
	}
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

// world is a gateway with moderation, its three upstreams and its logs.
type world struct {
	*httptest.Server
	gen, endpoint, judge *scripted
	logs                 *testkit.SyncBuffer
	mu                   sync.Mutex
	recs                 []exchange.Record
}

const modKey = "sk-moderation-key-123"

func newWorld(t *testing.T) *world {
	return newWorldWith(t, "{consecutive_failures: 100000, min_requests: 100000}")
}

// newWorldWith is newWorld with the breaker settings given (YAML).
func newWorldWith(t *testing.T, breaker string) *world {
	t.Setenv("LLMGW_TEST_MODERATION_KEY", modKey)
	w := &world{logs: &testkit.SyncBuffer{},
		gen: newScripted(t, "", generatorHandler), endpoint: newScripted(t, "allow", endpointHandler), judge: newScripted(t, "allow", judgeHandler)}
	layers := `endpoint: {provider: mod, timeout: 200ms}, check: {route: judge, prompt: "Block violence.", timeout: 300ms}`
	cfg, err := config.Parse([]byte(`
defaults: {backoff_base: 1ms, backoff_max: 2ms, attempts: 1}
breaker: ` + breaker + `
providers:
  gen: {kind: openai, base_url: "` + w.gen.URL + `/v1"}
  mod: {kind: openai, base_url: "` + w.endpoint.URL + `/v1", keys: [{env: LLMGW_TEST_MODERATION_KEY}]}
  judge: {kind: openai, base_url: "` + w.judge.URL + `/v1"}
  dead: {kind: openai, base_url: "http://127.0.0.1:1/v1"}
routes:
  refused: {moderation: refused, targets: [{provider: gen, model: g}]}
  closed: {moderation: closed, targets: [{provider: gen, model: g}]}
  open: {moderation: open, targets: [{provider: gen, model: g}]}
  narrow: {moderation: narrow, targets: [{provider: gen, model: g}]}
  out: {moderation: out, targets: [{provider: gen, model: g}]}
  outsmall: {moderation: outsmall, targets: [{provider: gen, model: g}]}
  outsmallopen: {moderation: outsmallopen, targets: [{provider: gen, model: g}]}
  plain: {targets: [{provider: gen, model: g}]}
  judge: {targets: [{provider: judge, model: j}]}
teams:
  kids: {moderation: closed}
prices:
  judge/j: {input: 1, output: 1}
  gen/g: {input: 0, output: 0}
moderation:
  policies:
    closed: {mode: fail_closed, ` + layers + `}
    open: {mode: fail_open, ` + layers + `}
    refused: {endpoint: {provider: dead, timeout: 200ms}}
    narrow: {endpoint: {provider: mod, timeout: 200ms, categories: [sexual/minors]}}
    out: {mode: fail_closed, output: true, ` + layers + `}
    outsmall: {mode: fail_closed, output: true, max_output_bytes: 5, ` + layers + `}
    outsmallopen: {mode: fail_open, output: true, max_output_bytes: 5, ` + layers + `}
`))
	if err != nil {
		t.Fatal(err)
	}
	log := slog.New(slog.NewJSONHandler(w.logs, nil))
	h, err := server.New(context.Background(), cfg, server.Options{
		Logger: log,
		Front: server.Front{
			Authenticate: func(r *http.Request) (*exchange.Caller, error) {
				return &exchange.Caller{Team: r.Header.Get("x-team")}, nil
			},
		},
		Stages: server.Stages{
			Moderation: &moderation.Moderator{Logger: log},
		},
		Reporting: server.Reporting{
			Cost: usage.Cost,
			Record: func(_ context.Context, r *exchange.Record) {
				w.mu.Lock()
				w.recs = append(w.recs, *r)
				w.mu.Unlock()
			},
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	w.Server = httptest.NewServer(h)
	t.Cleanup(w.Close)
	return w
}

// reply is what the client got.
type reply struct {
	status int
	body   string
	took   time.Duration
}

func (rp reply) code() string { return gjson.Get(rp.body, "error.code").String() }

// ask sends prompt (with the sentinel) to route; team may be "".
func (w *world) ask(t *testing.T, route, team, prompt string, stream bool) reply {
	t.Helper()
	body := fmt.Sprintf(`{"model":%q,"stream":%v,"messages":[{"role":"user","content":%q}]}`, route, stream, prompt+" "+sentinel)
	req, _ := http.NewRequest(http.MethodPost, w.URL+"/v1/chat/completions", strings.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("x-team", team)
	n := len(w.records())
	start := time.Now()
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	took := time.Since(start)
	for deadline := time.Now().Add(5 * time.Second); len(w.records()) == n && time.Now().Before(deadline); time.Sleep(time.Millisecond) {
	}
	return reply{status: resp.StatusCode, body: string(b), took: took}
}

func (w *world) records() []exchange.Record {
	w.mu.Lock()
	defer w.mu.Unlock()
	return append([]exchange.Record(nil), w.recs...)
}

func (w *world) last() exchange.Record {
	r := w.records()
	return r[len(r)-1]
}

// calls resets and returns the upstreams' hit counts.
func (w *world) calls() (gen, endpoint, judge int32) {
	return w.gen.hits.Swap(0), w.endpoint.hits.Swap(0), w.judge.hits.Swap(0)
}
