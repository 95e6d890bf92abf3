package cache_test

import (
	"bufio"
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

	"github.com/llmgw/llmgw/pkg/cache"
	"github.com/llmgw/llmgw/pkg/config"
	"github.com/llmgw/llmgw/pkg/exchange"
	"github.com/llmgw/llmgw/pkg/pacing"
	"github.com/llmgw/llmgw/pkg/server"
	"github.com/llmgw/llmgw/pkg/usage"
)

// words is the upstream's usual answer, streamed one word per chunk.
var words = []string{"The ", "answer ", "is ", "42."}

// fakeOpenAI is an OpenAI-compatible upstream whose answer depends on the
// prompt: "cut" breaks off mid-stream, "length" finishes for length, "fail"
// answers 500, "logprobs" carries log probabilities, "big" is a long,
// incompressible answer, "slow" leaves 150 ms between chunks, "burst" is
// one 600-character chunk.
type fakeOpenAI struct {
	*httptest.Server
	hits atomic.Int32
}

func newFakeOpenAI(t *testing.T) *fakeOpenAI {
	f := &fakeOpenAI{}
	f.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		f.hits.Add(1)
		body, _ := io.ReadAll(r.Body)
		prompt := gjson.GetBytes(body, "messages.0.content").String()
		ws, finish, gap, logprobs := words, "stop", time.Duration(0), "null"
		switch prompt {
		case "fail":
			w.WriteHeader(500)
			io.WriteString(w, `{"error":{"message":"boom","type":"server_error"}}`)
			return
		case "length":
			finish = "length"
		case "logprobs":
			logprobs = `{"content":[{"token":"The","logprob":-0.1,"bytes":[84,104,101],"top_logprobs":[]}]}`
		case "big":
			ws = nil
			for i := 0; i < 3000; i++ {
				ws = append(ws, fmt.Sprintf("%08x ", uint32(i)*2654435761))
			}
		case "slow":
			gap = 150 * time.Millisecond
		case "burst":
			ws = []string{strings.Repeat("burst ", 100)}
		}
		const head = `{"id":"chatcmpl-upstream1","object":"chat.completion.chunk","created":1741569952,"model":"gpt-4.1-2025-04-14","system_fingerprint":"fp_1","choices":`
		if !gjson.GetBytes(body, "stream").Bool() {
			w.Header().Set("Content-Type", "application/json")
			text, _ := json.Marshal(strings.Join(ws, ""))
			fmt.Fprintf(w, `{"id":"chatcmpl-upstream1","object":"chat.completion","created":1741570283,"model":"gpt-4.1-2025-04-14","choices":[{"index":0,"message":{"role":"assistant","content":%s,"refusal":null,"annotations":[]},"logprobs":%s,"finish_reason":%q}],"usage":{"prompt_tokens":11,"completion_tokens":%d,"total_tokens":%d}}`,
				text, logprobs, finish, len(ws), 11+len(ws))
			return
		}
		w.Header().Set("Content-Type", "text/event-stream")
		fl := w.(http.Flusher)
		fmt.Fprintf(w, "data: %s[{\"index\":0,\"delta\":{\"role\":\"assistant\",\"content\":\"\"},\"logprobs\":null,\"finish_reason\":null}],\"usage\":null}\n\n", head)
		for i, s := range ws {
			if prompt == "cut" && i == 2 {
				fl.Flush()
				panic(http.ErrAbortHandler) // the connection breaks
			}
			if i > 0 && gap > 0 {
				fl.Flush()
				time.Sleep(gap)
			}
			b, _ := json.Marshal(s)
			fmt.Fprintf(w, "data: %s[{\"index\":0,\"delta\":{\"content\":%s},\"logprobs\":%s,\"finish_reason\":null}],\"usage\":null}\n\n", head, b, logprobs)
		}
		fmt.Fprintf(w, "data: %s[{\"index\":0,\"delta\":{},\"logprobs\":null,\"finish_reason\":%q}],\"usage\":null}\n\n", head, finish)
		fmt.Fprintf(w, "data: %s[],\"usage\":{\"prompt_tokens\":11,\"completion_tokens\":%d,\"total_tokens\":%d}}\n\n", head, len(ws), 11+len(ws))
		io.WriteString(w, "data: [DONE]\n\n")
	}))
	t.Cleanup(f.Close)
	return f
}

// baseConfig has route m (cached per team), shared (cached for every
// team), plain (not cached unless a team says so) and never (uncacheable),
// and teams a, b (following the routes), on (cache everything) and off.
func baseConfig(url, extra string) string {
	return `
defaults: {backoff_base: 1ms, backoff_max: 2ms, attempts: 1}
breaker: {consecutive_failures: 1000, min_requests: 1000}
providers:
  up: {kind: openai, base_url: "` + url + `/v1"}
routes:
  m: {cache: {enabled: true}, targets: [{provider: up, model: gpt-4.1}]}
  shared: {cache: {enabled: true, shared: true}, targets: [{provider: up, model: gpt-4.1}]}
  plain: {targets: [{provider: up, model: gpt-4.1}]}
  never: {cache: {uncacheable: true}, targets: [{provider: up, model: gpt-4.1}]}
teams:
  a: {}
  b: {}
  on: {cache: true}
  off: {cache: false}
prices:
  gpt-4.1: {input: 2, output: 8}
` + extra
}

// gateway is the HTTP front with the response cache over one store.
type gateway struct {
	*httptest.Server
	up   *fakeOpenAI
	mu   sync.Mutex
	recs []exchange.Record
	n    int // requests sent
}

func newGateway(t *testing.T, st cache.Store, now func() time.Time, extra string) *gateway {
	t.Helper()
	g := &gateway{up: newFakeOpenAI(t)}
	cfg, err := config.Parse([]byte(baseConfig(g.up.URL, extra)))
	if err != nil {
		t.Fatal(err)
	}
	h, err := server.New(context.Background(), cfg, server.Options{
		Logger: slog.New(slog.DiscardHandler),
		Now:    time.Now,
		Front: server.Front{
			Authenticate: func(r *http.Request) (*exchange.Caller, error) {
				return &exchange.Caller{Team: r.Header.Get("x-team")}, nil
			},
		},
		Stages: server.Stages{
			Cache:  cache.New(st, cache.Options{Now: now}),
			Pacing: pacing.Pacer{},
		},
		Reporting: server.Reporting{
			Cost: usage.Cost,
			Record: func(_ context.Context, r *exchange.Record) {
				g.mu.Lock()
				g.recs = append(g.recs, *r)
				g.mu.Unlock()
			},
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	g.Server = httptest.NewServer(h)
	t.Cleanup(g.Close)
	return g
}

// last waits for the record of the n-th request (1-based).
func (g *gateway) last(t *testing.T, n int) exchange.Record {
	t.Helper()
	for deadline := time.Now().Add(5 * time.Second); time.Now().Before(deadline); time.Sleep(2 * time.Millisecond) {
		g.mu.Lock()
		if len(g.recs) >= n {
			r := g.recs[n-1]
			g.mu.Unlock()
			return r
		}
		g.mu.Unlock()
	}
	t.Fatalf("no record %d", n)
	return exchange.Record{}
}

// reply is one response as the client saw it.
type reply struct {
	status int
	cache  string // x-gateway-cache
	body   string
	frames []frame // streams only
}

type frame struct {
	data string
	at   time.Duration
}

// ask sends a chat request for prompt on route as team; hdr are extra
// header name/value pairs.
func (g *gateway) ask(t *testing.T, team, route, prompt string, stream bool, hdr ...string) reply {
	t.Helper()
	body := fmt.Sprintf(`{"model":%q,"messages":[{"role":"user","content":%q}],"temperature":0.5`, route, prompt)
	if stream {
		body += `,"stream":true,"stream_options":{"include_usage":true}`
	}
	body += "}"
	req, _ := http.NewRequest(http.MethodPost, g.URL+"/v1/chat/completions", strings.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("x-team", team)
	for i := 0; i+1 < len(hdr); i += 2 {
		req.Header.Set(hdr[i], hdr[i+1])
	}
	start := time.Now()
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	// The entry and the record are written after the client has its
	// answer: the next request waits for them, as a later one would.
	g.n++
	defer g.last(t, g.n)
	rp := reply{status: resp.StatusCode, cache: resp.Header.Get(cache.Header)}
	if !stream {
		b, _ := io.ReadAll(resp.Body)
		rp.body = string(b)
		return rp
	}
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	var all strings.Builder
	for sc.Scan() {
		all.WriteString(sc.Text() + "\n")
		if d, ok := strings.CutPrefix(sc.Text(), "data: "); ok {
			rp.frames = append(rp.frames, frame{data: d, at: time.Since(start)})
		}
	}
	rp.body = all.String()
	return rp
}

// content is the text of a reply: a stream's deltas or a body's message.
func (rp reply) content() string {
	if rp.frames == nil {
		return gjson.Get(rp.body, "choices.0.message.content").String()
	}
	var b strings.Builder
	for _, f := range rp.frames {
		b.WriteString(gjson.Get(f.data, "choices.0.delta.content").String())
	}
	return b.String()
}

// contentFrames are a stream's frames carrying text.
func (rp reply) contentFrames() []frame {
	var out []frame
	for _, f := range rp.frames {
		if gjson.Get(f.data, "choices.0.delta.content").String() != "" {
			out = append(out, f)
		}
	}
	return out
}
