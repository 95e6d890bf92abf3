package cache_test

import (
	"net/http"
	"testing"

	"github.com/llmgw/llmgw/pkg/cache"
	"github.com/llmgw/llmgw/pkg/config"
	"github.com/llmgw/llmgw/pkg/exchange"
	"github.com/llmgw/llmgw/pkg/store"
)

func TestFingerprintCoversWhatDeterminesTheAnswer(t *testing.T) {
	base := func() *exchange.Request {
		return &exchange.Request{API: exchange.Chat, Route: "m", Steps: []config.Step{{ID: "up/gpt-4.1"}},
			Body: []byte(`{"model":"m","messages":[{"role":"user","content":"hi"}],"temperature":1}`)}
	}
	fp := func(r *exchange.Request) string {
		s, ok := cache.Fingerprint(r)
		if !ok {
			t.Fatalf("not cacheable: %s", r.Body)
		}
		return s
	}
	want := fp(base())
	same := map[string]string{
		"stream":            `{"model":"m","stream":true,"stream_options":{"include_usage":true},"messages":[{"role":"user","content":"hi"}],"temperature":1}`,
		"order, whitespace": "{ \"temperature\" : 1.0,\n \"messages\":[{\"content\":\"hi\",\"role\":\"user\"}], \"model\":\"m\"}",
		"gateway metadata":  `{"model":"m","messages":[{"role":"user","content":"hi"}],"temperature":1e0,"metadata":{"pacing":"slow","tag":"checkout"}}`,
		"model (the route)": `{"model":"M","messages":[{"role":"user","content":"hi"}],"temperature":1}`,
	}
	for name, body := range same {
		r := base()
		r.Body = []byte(body)
		if got := fp(r); got != want {
			t.Errorf("%s changed the key", name)
		}
	}
	differ := map[string]func(r *exchange.Request){
		"prompt": func(r *exchange.Request) {
			r.Body = []byte(`{"model":"m","messages":[{"role":"user","content":"hi!"}],"temperature":1}`)
		},
		"parameter": func(r *exchange.Request) {
			r.Body = []byte(`{"model":"m","messages":[{"role":"user","content":"hi"}],"temperature":0.9}`)
		},
		"tools": func(r *exchange.Request) {
			r.Body = []byte(`{"model":"m","messages":[{"role":"user","content":"hi"}],"temperature":1,"tools":[]}`)
		},
		"vendor field": func(r *exchange.Request) {
			r.Body = []byte(`{"model":"m","messages":[{"role":"user","content":"hi"}],"temperature":1,"top_k":3}`)
		},
		"other metadata": func(r *exchange.Request) {
			r.Body = []byte(`{"model":"m","messages":[{"role":"user","content":"hi"}],"temperature":1,"metadata":{"x":"y"}}`)
		},
		"ingress API": func(r *exchange.Request) { r.API = exchange.Messages },
		"route":       func(r *exchange.Request) { r.Route = "n" },
		"chain":       func(r *exchange.Request) { r.Steps = append(r.Steps, config.Step{ID: "other/x"}) },
		"output cap":  func(r *exchange.Request) { r.OutputCap = 100 },
		"API headers": func(r *exchange.Request) { r.Header = http.Header{"Anthropic-Beta": {"x"}} },
	}
	for name, f := range differ {
		r := base()
		f(r)
		if fp(r) == want {
			t.Errorf("%s did not change the key", name)
		}
	}
	if _, ok := cache.Fingerprint(&exchange.Request{Body: []byte(`[1]`)}); ok {
		t.Error("a body that is not an object is cacheable")
	}
}

func TestEntryLimitFitsAnItem(t *testing.T) {
	key := store.CacheKey("a-team-name-of-64-characters-aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa", "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef")
	if config.MaxCacheEntryBytes+len(key.PK)+len(key.SK)+200 > store.MaxItemBytes {
		t.Fatalf("an entry of %d bytes does not fit a %d byte item", config.MaxCacheEntryBytes, store.MaxItemBytes)
	}
}
