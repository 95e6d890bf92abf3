package cache_test

import (
	"testing"

	"github.com/llmgw/llmgw/pkg/cache"
	"github.com/llmgw/llmgw/pkg/config"
	"github.com/llmgw/llmgw/pkg/exchange"
)

// TestLoneSurrogatesNeverShareAKey is the review's attack: prompts that
// differ only in a lone surrogate escape decoded to the same text (U+FFFD)
// and shared one cache entry. A body holding one is not cacheable; a
// well-formed pair and a literal U+FFFD are cacheable and keep their keys
// apart.
func TestLoneSurrogatesNeverShareAKey(t *testing.T) {
	fp := func(content string) (string, bool) {
		return cache.Fingerprint(&exchange.Request{API: exchange.Chat, Route: "m", Steps: []config.Step{{ID: "up/x"}},
			Body: []byte(`{"model":"m","messages":[{"role":"user","content":"` + content + `"}]}`)})
	}
	for _, lone := range []string{`say \ud800`, `say \udbff`, `say \udc00`, `\ud83d\u0041`} {
		if k, ok := fp(lone); ok {
			t.Errorf("%s: cacheable (key %s), want not", lone, k[:8])
		}
	}
	pair, ok1 := fp(`say \ud83d\ude00`)
	repl, ok2 := fp(`say \ufffd`)
	if !ok1 || !ok2 || pair == repl {
		t.Errorf("a pair and U+FFFD: %v %v, keys equal %v", ok1, ok2, pair == repl)
	}
}
