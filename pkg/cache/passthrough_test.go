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
	"github.com/openai/openai-go/v3/responses"
	"github.com/tidwall/gjson"

	"github.com/llmgw/llmgw/pkg/cache"
	"github.com/llmgw/llmgw/pkg/config"
	"github.com/llmgw/llmgw/pkg/exchange"
	"github.com/llmgw/llmgw/pkg/pacing"
	"github.com/llmgw/llmgw/pkg/server"
	"github.com/llmgw/llmgw/pkg/store/embedded"
)

// The response cache and pacing on the two native passthrough paths: the
// Messages API to an Anthropic upstream (Claude Code's main path) and the
// Responses API to an OpenAI upstream that speaks it (Codex's), driven by
// the official SDKs.

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

// content is what a client makes of a Message: its blocks in order.
func content(m *anthropic.Message) string {
	var b strings.Builder
	for _, c := range m.Content {
		switch c.Type {
		case "thinking":
			fmt.Fprintf(&b, "thinking %q signed %q; ", c.Thinking, c.Signature)
		case "text":
			fmt.Fprintf(&b, "text %q; ", c.Text)
		case "tool_use":
			fmt.Fprintf(&b, "tool_use %s %s; ", c.Name, c.Input)
		default:
			fmt.Fprintf(&b, "%s; ", c.Type)
		}
	}
	fmt.Fprintf(&b, "stop %s", m.StopReason)
	return b.String()
}

// TestMessagesPassthroughIsCached: Claude Code's path. The second
// identical request, streamed or not, is answered from the cache (the
// upstream sees one call each) and the SDK makes the same message of it:
// signed thinking, text, tool call, stop reason.
func TestMessagesPassthroughIsCached(t *testing.T) {
	up := newNativeUpstreams(t)
	g := newNativeGateway(t, up, &manualClock{t: time.Unix(1e9, 0)})
	client := g.anthropic()
	var n int32
	for _, stream := range []bool{true, false} {
		var got [2]string
		var verdict [2]string
		for i := range got {
			var raw *http.Response
			var m anthropic.Message
			if stream {
				s := client.Messages.NewStreaming(context.Background(), messageParams("weather?"), aoption.WithResponseInto(&raw))
				for s.Next() {
					if err := m.Accumulate(s.Current()); err != nil {
						t.Fatal(err)
					}
				}
				if err := s.Err(); err != nil {
					t.Fatalf("stream %d: %v", i, err)
				}
			} else {
				mp, err := client.Messages.New(context.Background(), messageParams("weather, whole?"), aoption.WithResponseInto(&raw))
				if err != nil {
					t.Fatalf("body %d: %v", i, err)
				}
				m = *mp
			}
			n++
			g.settled(t, n)
			got[i], verdict[i] = content(&m), raw.Header.Get(cache.Header)
		}
		want := int32(1)
		if !stream {
			want = 2
		}
		if c := up.anthN.Load(); c != want {
			t.Errorf("stream %v: the upstream was called %d times in all, want %d", stream, c, want)
		}
		if verdict != [2]string{"miss", "hit"} || got[0] != got[1] || !strings.Contains(got[0], "tool_use get_weather") || !strings.Contains(got[0], "signed") {
			t.Errorf("stream %v: verdicts %v\nlive   %s\ncached %s", stream, verdict, got[0], got[1])
		}
	}
}

// TestResponsesPassthroughIsCached: Codex's path. The second identical
// Responses request, streamed or not, is answered from the cache and the
// SDK reads the same output: text, function call, reasoning summary.
func TestResponsesPassthroughIsCached(t *testing.T) {
	up := newNativeUpstreams(t)
	g := newNativeGateway(t, up, &manualClock{t: time.Unix(1e9, 0)})
	client := g.openai()
	params := func(prompt string) responses.ResponseNewParams {
		return responses.ResponseNewParams{Model: "codex", Input: responses.ResponseNewParamsInputUnion{OfString: openai.String(prompt)}}
	}
	describe := func(r *responses.Response) string {
		var b strings.Builder
		for _, it := range r.Output {
			switch it.Type {
			case "message":
				fmt.Fprintf(&b, "message %q; ", it.Content[0].Text)
			case "function_call":
				prefix, _, _ := strings.Cut(it.CallID, "_") // a replay makes new call ids, with the original's prefix
				fmt.Fprintf(&b, "call %s %s_ %s; ", it.Name, prefix, it.Arguments.OfString)
			case "reasoning":
				fmt.Fprintf(&b, "reasoning %q; ", it.Summary[0].Text)
			default:
				fmt.Fprintf(&b, "%s; ", it.Type)
			}
		}
		fmt.Fprintf(&b, "status %s, output tokens %d", r.Status, r.Usage.OutputTokens)
		return b.String()
	}
	var n int32
	for _, stream := range []bool{true, false} {
		var got, verdict [2]string
		for i := range got {
			var raw *http.Response
			var r *responses.Response
			if stream {
				s := client.Responses.NewStreaming(context.Background(), params("weather?"), option.WithResponseInto(&raw))
				for s.Next() {
					if ev := s.Current(); ev.Type == "response.completed" {
						c := ev.AsResponseCompleted().Response
						r = &c
					}
				}
				if err := s.Err(); err != nil || r == nil {
					t.Fatalf("stream %d: %v, completed %v", i, err, r != nil)
				}
			} else {
				var err error
				if r, err = client.Responses.New(context.Background(), params("weather, whole?"), option.WithResponseInto(&raw)); err != nil {
					t.Fatalf("body %d: %v", i, err)
				}
			}
			n++
			g.settled(t, n)
			got[i], verdict[i] = describe(r), raw.Header.Get(cache.Header)
		}
		want := int32(1)
		if !stream {
			want = 2
		}
		if c := up.oaiN.Load(); c != want {
			t.Errorf("stream %v: the upstream was called %d times in all, want %d", stream, c, want)
		}
		if verdict != [2]string{"miss", "hit"} || got[0] != got[1] || !strings.Contains(got[0], "status completed") {
			t.Errorf("stream %v: verdicts %v\nlive   %s\ncached %s", stream, verdict, got[0], got[1])
		}
	}
}

// pacedTexts are 12 text deltas of 20 characters (240 in all, accents
// and escapes included: characters, not bytes, are what is paced).
func pacedTexts() []string {
	out := make([]string, 12)
	for i := range out {
		out[i] = fmt.Sprintf("%02d café \"quoted\"\n.. ", i) // 20 characters, 21 bytes, 3 JSON escapes
	}
	return out
}

// released checks one paced stream as the client read it: for each text
// delta, the pacer's clock when the client had it and the characters so
// far. Against the steady profile's token bucket, the text had by clock
// time t is at most the burst, plus the rate times t, plus one frame (a
// frame is released whole and may put the bucket in debt); and the text
// after the burst took (its characters) / rate of the clock, within a
// frame's worth.
func released(t *testing.T, what string, at []time.Time, chars []int, start time.Time, want int) {
	t.Helper()
	prof := pacing.Steady
	const frame = 20
	total := chars[len(chars)-1]
	if total != want {
		t.Fatalf("%s: %d characters of text, want %d", what, total, want)
	}
	for i := range at {
		el := at[i].Sub(start).Seconds()
		if limit := prof.Burst + prof.CharsPerSecond*el + frame; float64(chars[i]) > limit {
			t.Errorf("%s: %d characters out %.3fs into the stream on the pacer's clock; steady allows %.0f", what, chars[i], el, limit)
		}
	}
	span := at[len(at)-1].Sub(start).Seconds()
	rate := (float64(total) - prof.Burst) / span
	t.Logf("%s: %d characters in %.3fs of the pacer's clock: %.0f char/s after the burst (steady: %.0f)", what, total, span, rate, prof.CharsPerSecond)
	if lo, hi := (float64(total)-prof.Burst-frame)/prof.CharsPerSecond, (float64(total)-prof.Burst+frame)/prof.CharsPerSecond; span < lo || span > hi {
		t.Errorf("%s: released over %.3fs of the pacer's clock, steady takes %.3f-%.3fs", what, span, lo, hi)
	}
}

// TestPacingWeighsPassthroughText: a steady profile releases the text of
// Messages and Responses passthrough frames at its documented 160
// characters per second, measured on the pacer's own clock (which only
// moves when the pacer waits). The upstream sends its whole text at once
// and finishes only once the client has read it all, so the end bound
// never hurries the release.
func TestPacingWeighsPassthroughText(t *testing.T) {
	up := newNativeUpstreams(t)
	up.paced = pacedTexts()
	clk := &manualClock{t: time.Unix(1e9, 0)}
	g := newNativeGateway(t, up, clk)
	paced := aoption.WithHeader(pacing.Header, "steady")
	const thinking = len("Let me think.") // the answer's reasoning, before its text
	// A client that stops reading would hold the test forever: a bound.
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()

	t.Run("messages", func(t *testing.T) {
		start := clk.Now()
		up.arm()
		client := g.anthropic()
		s := client.Messages.NewStreaming(ctx, messageParams("paced"), paced, aoption.WithHeader(cache.Header, "bypass"))
		var at []time.Time
		var chars []int
		n := 0
		var m anthropic.Message
		for s.Next() {
			ev := s.Current()
			m.Accumulate(ev)
			if d := ev.AsContentBlockDelta(); ev.Type == "content_block_delta" && (d.Delta.Type == "text_delta" || d.Delta.Type == "thinking_delta") {
				n += len([]rune(d.Delta.Text)) + len([]rune(d.Delta.Thinking)) // reasoning is paced as text is
				at, chars = append(at, clk.Now()), append(chars, n)
				if n == thinking+12*20 {
					up.open()
				}
			}
		}
		if err := s.Err(); err != nil {
			t.Fatal(err)
		}
		released(t, "messages", at, chars, start, thinking+12*20)
		if want := strings.Join(up.paced, ""); m.Content[1].Text != want {
			t.Errorf("text %q, want %q", m.Content[1].Text, want)
		}
	})

	t.Run("responses", func(t *testing.T) {
		up.arm()
		start := clk.Now()
		client := g.openai()
		s := client.Responses.NewStreaming(ctx, responses.ResponseNewParams{Model: "codex",
			Input: responses.ResponseNewParamsInputUnion{OfString: openai.String("paced")}},
			option.WithHeader(pacing.Header, "steady"), option.WithHeader(cache.Header, "bypass"))
		var at []time.Time
		var chars []int
		n := 0
		var text strings.Builder
		for s.Next() {
			if ev := s.Current(); ev.Type == "response.output_text.delta" {
				text.WriteString(ev.Delta)
				n += len([]rune(ev.Delta))
				at, chars = append(at, clk.Now()), append(chars, n)
				if n == 12*20 {
					up.open()
				}
			}
		}
		if err := s.Err(); err != nil {
			t.Fatal(err)
		}
		released(t, "responses", at, chars, start, 12*20)
		if want := strings.Join(up.paced, ""); text.String() != want {
			t.Errorf("text %q, want %q", text.String(), want)
		}
	})
}
