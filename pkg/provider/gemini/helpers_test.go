package gemini

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"sync"
	"testing"

	"github.com/llmgw/llmgw/pkg/config"
	"github.com/llmgw/llmgw/pkg/exchange"
	"github.com/llmgw/llmgw/pkg/ingress/chat"
	"github.com/llmgw/llmgw/pkg/provider"
	"github.com/llmgw/llmgw/pkg/wire/chatwire"
)

const testKey = "AIzaSyTestKey0123456789abcdefghijklmno"

// seen is one request the fake Gemini API received.
type seen struct {
	path, query string
	header      http.Header
	body        []byte
}

// fakeAPI is a loopback Gemini API: it records every request and answers
// with the handler.
type fakeAPI struct {
	*httptest.Server
	mu   sync.Mutex
	reqs []seen
}

func newFakeAPI(t *testing.T, h http.HandlerFunc) *fakeAPI {
	t.Helper()
	f := &fakeAPI{}
	f.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		f.mu.Lock()
		f.reqs = append(f.reqs, seen{path: r.URL.Path, query: r.URL.RawQuery, header: r.Header.Clone(), body: b})
		f.mu.Unlock()
		h(w, r)
	}))
	t.Cleanup(f.Close)
	return f
}

func (f *fakeAPI) requests() []seen {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]seen(nil), f.reqs...)
}

// serveSSE answers with an SSE body, flushing after every frame.
func serveSSE(body []byte) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		for _, fr := range strings.SplitAfter(string(body), "\r\n\r\n") {
			io.WriteString(w, fr)
			w.(http.Flusher).Flush()
		}
	}
}

// serveJSON answers with a status and a JSON body.
func serveJSON(status int, body string) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json; charset=UTF-8")
		w.WriteHeader(status)
		io.WriteString(w, body)
	}
}

func fixture(t *testing.T, name string) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", name))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func newTestAdapter(t *testing.T, f *fakeAPI) *Adapter {
	t.Helper()
	a, err := New("g", &config.Provider{Kind: "gemini", BaseURL: f.URL + "/v1beta"}, f.Client())
	if err != nil {
		t.Fatal(err)
	}
	return a
}

// newCall parses a chat body into an attempt at model gemini-test, as the
// chat ingress decodes it (its Prompt and what that cannot carry).
func newCall(t *testing.T, body string) *provider.Call {
	t.Helper()
	r, err := chatwire.Parse([]byte(body), chatwire.Limits{})
	if err != nil {
		t.Fatalf("parse %s: %v", body, err)
	}
	prompt, lost, err := chat.ToPrompt(r, []byte(body))
	if err != nil {
		t.Fatalf("prompt of %s: %v", body, err)
	}
	rq := &exchange.Request{API: exchange.Chat, Prompt: prompt, Untranslated: lost, Body: []byte(body), Stream: r.Stream, WantsUsage: r.WantsUsage()}
	return &provider.Call{Req: rq, Step: config.Step{ID: "g/gemini-test", Provider: "g", Model: "gemini-test", MaxTokens: 4096},
		Key: exchange.Key{Secret: testKey}}
}

// send is the attempt as the provider registry makes it: what the Prompt
// could not carry is refused before the adapter runs.
func send(a *Adapter, call *provider.Call) (provider.Stream, error) {
	if err := provider.RefuseUntranslated(call.Req, call.Step.ID, false); err != nil {
		return nil, err
	}
	return a.Send(context.Background(), call)
}

// collect reads a stream to its end: every event (cloned) and the error
// that ended it.
func collect(t *testing.T, s provider.Stream) ([]exchange.Event, error) {
	t.Helper()
	var evs []exchange.Event
	for {
		ev, err := s.Next()
		if err != nil {
			return evs, err
		}
		evs = append(evs, ev.Clone())
		if len(evs) > 1000 {
			t.Fatal("runaway stream")
		}
	}
}

// chatChunks encodes events as the chat.completion.chunk data a client
// that asked for usage receives.
func chatChunks(t *testing.T, evs []exchange.Event) []string {
	t.Helper()
	enc := chat.Ingress{}.NewEncoder(&exchange.Request{Stream: true, WantsUsage: true})
	var out []string
	for i := range evs {
		b := enc.Event(nil, &evs[i])
		if len(b) == 0 {
			continue
		}
		d := bytes.TrimSuffix(bytes.TrimPrefix(b, []byte("data: ")), []byte("\n\n"))
		out = append(out, string(d))
	}
	return out
}

// jsonEqual reports whether two JSON documents hold the same value.
func jsonEqual(t *testing.T, got, want []byte) bool {
	t.Helper()
	var g, w any
	if err := json.Unmarshal(got, &g); err != nil {
		t.Fatalf("got is not JSON: %v\n%s", err, got)
	}
	if err := json.Unmarshal(want, &w); err != nil {
		t.Fatalf("want is not JSON: %v\n%s", err, want)
	}
	return reflect.DeepEqual(g, w)
}

// compact returns JSON without insignificant space, for messages.
func compact(b []byte) string {
	var c bytes.Buffer
	if json.Compact(&c, b) != nil {
		return string(b)
	}
	return c.String()
}

// wire sends a chat request through the adapter to a fake that answers
// "ok", and returns the generateContent body that went on the wire.
func wire(t *testing.T, body string) []byte {
	t.Helper()
	f := newFakeAPI(t, serveJSON(200, okResponse))
	if _, err := send(newTestAdapter(t, f), newCall(t, body)); err != nil {
		t.Fatalf("Send: %v", err)
	}
	reqs := f.requests()
	if len(reqs) != 1 {
		t.Fatalf("%d requests, want 1", len(reqs))
	}
	return reqs[0].body
}

// okResponse is a whole generateContent answer.
const okResponse = `{"candidates":[{"content":{"parts":[{"text":"ok"}],"role":"model"},"finishReason":"STOP","index":0}],
"usageMetadata":{"promptTokenCount":3,"candidatesTokenCount":1,"totalTokenCount":4},"modelVersion":"gemini-2.5-flash","responseId":"r1"}`
