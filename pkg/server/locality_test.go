package server_test

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"

	"github.com/llmgw/llmgw/pkg/locality"
	"github.com/llmgw/llmgw/pkg/server"
	"github.com/llmgw/llmgw/pkg/store/embedded"
	"github.com/llmgw/llmgw/pkg/store/storetest"
)

// Prompt-cache locality (docs/prompt-caching.md): a conversation of a
// cache_locality route starts from the target and key that last served it
// while that target's breaker is closed and that key usable, where the
// chain's own order would move it.

// switchableOK answers 503 while down is set, else well.
func switchableOK(t *testing.T, down *atomic.Bool) *upstream {
	return newUpstream(t, func(w http.ResponseWriter, r *http.Request, body []byte, n int) {
		if down.Load() {
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(http.StatusServiceUnavailable)
			fmt.Fprint(w, `{"error":{"message":"The server is overloaded","type":"server_error","param":null,"code":null}}`)
			return
		}
		okStream(w, r, body)
	})
}

// conversation returns turn n of a conversation: the same system prompt
// and first message every time, a longer history each turn.
func conversation(system, first string, n int) []openai.ChatCompletionMessageParamUnion {
	msgs := []openai.ChatCompletionMessageParamUnion{openai.SystemMessage(system), openai.UserMessage(first)}
	for i := 1; i < n; i++ {
		msgs = append(msgs, openai.AssistantMessage(fmt.Sprintf("answer %d", i)), openai.UserMessage(fmt.Sprintf("question %d", i+1)))
	}
	return msgs
}

func TestCacheLocalityKeepsAConversationOnItsTargetUntilItsBreakerOpens(t *testing.T) {
	var aDown, bDown atomic.Bool
	a, b := switchableOK(t, &aDown), switchableOK(t, &bDown)
	clock := storetest.ClockOf(t)
	cfg := fmt.Sprintf(`defaults: {attempts: 1}
breaker: {consecutive_failures: 1, min_requests: 100, cooldown: 1m, max_cooldown: 1m}
providers:
  pa: {kind: openai, base_url: "%s/v1"}
  pb: {kind: openai, base_url: "%s/v1"}
routes:
  sticky:
    cache_locality: {ttl: 1h}
    targets: [{provider: pa, model: up-model}, {provider: pb, model: up-model}]
  plain:
    targets: [{provider: pa, model: up-model}, {provider: pb, model: up-model}]
`, a.URL, b.URL)
	g := newGateway(t, cfg, func(o *server.Options) { o.Now = clock.Now })
	c := g.sdk()
	asked := 0
	ask := func(route string, msgs []openai.ChatCompletionMessageParamUnion) string {
		t.Helper()
		var resp *http.Response
		if _, err := c.Chat.Completions.New(context.Background(), openai.ChatCompletionNewParams{Model: route, Messages: msgs},
			option.WithResponseInto(&resp)); err != nil {
			t.Fatalf("%s: %v", route, err)
		}
		// The place is written after the answer, before the record: the
		// next turn follows the answer.
		asked++
		g.waitRecs(t, asked)
		return resp.Header.Get("x-gateway-provider")
	}

	// Target a is down: both conversations, on both routes, are served by b.
	aDown.Store(true)
	for _, route := range []string{"sticky", "plain"} {
		if p := ask(route, conversation("You are terse.", "Tell me about Rust.", 1)); p != "pb" {
			t.Fatalf("%s turn 1 served by %q while pa is down", route, p)
		}
	}
	if p := ask("sticky", conversation("You are chatty.", "Tell me about Go.", 1)); p != "pb" {
		t.Fatalf("second conversation turn 1 served by %q", p)
	}
	// a recovers (its breaker's cooldown passes). The chain's own order
	// moves the plain route's conversation back to a; the sticky route's
	// conversation stays on b, turn after turn.
	aDown.Store(false)
	clock.Advance(2 * time.Minute)
	if p := ask("plain", conversation("You are terse.", "Tell me about Rust.", 2)); p != "pa" {
		t.Fatalf("plain route turn 2 served by %q, want pa (the chain's order)", p)
	}
	for turn := 2; turn <= 3; turn++ {
		if p := ask("sticky", conversation("You are terse.", "Tell me about Rust.", turn)); p != "pb" {
			t.Fatalf("sticky turn %d served by %q, want pb (where its cache is)", turn, p)
		}
	}
	// Another conversation (another first message) is not held by the
	// first one's place: it takes the chain's order.
	if p := ask("sticky", conversation("You are terse.", "Tell me about C.", 1)); p != "pa" {
		t.Fatalf("a new conversation served by %q, want pa", p)
	}

	// b fails a turn of the first conversation: its breaker opens, a
	// serves, and the conversation moves there.
	bDown.Store(true)
	if p := ask("sticky", conversation("You are terse.", "Tell me about Rust.", 4)); p != "pa" {
		t.Fatalf("turn 4 served by %q after pb failed", p)
	}
	bDown.Store(false)
	// The second conversation's place is b, whose breaker is open: it
	// starts from the chain's order (a) without even trying b.
	n := asked
	if p := ask("sticky", conversation("You are chatty.", "Tell me about Go.", 2)); p != "pa" {
		t.Fatalf("second conversation turn 2 served by %q while pb's breaker is open", p)
	}
	rec := g.waitRecs(t, n+1)[n]
	if len(rec.Attempts) != 1 || rec.FallbackDepth != 0 {
		t.Errorf("the open target was tried first: attempts %+v depth %d", rec.Attempts, rec.FallbackDepth)
	}
	// And the first conversation stays on a now.
	if p := ask("sticky", conversation("You are terse.", "Tell me about Rust.", 5)); p != "pa" {
		t.Fatalf("turn 5 served by %q, want pa", p)
	}
}

func TestCacheLocalityKeepsTheKeyAndFollowsPromptCacheKey(t *testing.T) {
	t.Setenv("LOC_KEY_1", "sk-locality-key-one-0001")
	t.Setenv("LOC_KEY_2", "sk-locality-key-two-0002")
	var throttleKey1 atomic.Bool
	up := newUpstream(t, func(w http.ResponseWriter, r *http.Request, body []byte, _ int) {
		if throttleKey1.Load() && strings.HasSuffix(r.Header.Get("Authorization"), "one-0001") {
			w.Header().Set("Content-Type", "application/json")
			w.Header().Set("retry-after-ms", "500")
			w.WriteHeader(http.StatusTooManyRequests)
			fmt.Fprint(w, `{"error":{"message":"Rate limit reached","type":"requests","param":null,"code":"rate_limit_exceeded"}}`)
			return
		}
		okStream(w, r, body)
	})
	clock := storetest.ClockOf(t)
	g := newGateway(t, fmt.Sprintf(`providers:
  p: {kind: openai, base_url: "%s/v1", keys: [{env: LOC_KEY_1}, {env: LOC_KEY_2, priority: 1}]}
routes:
  sticky: {cache_locality: {}, targets: [{provider: p, model: up-model}]}
  plain: {targets: [{provider: p, model: up-model}]}
`, up.URL), func(o *server.Options) { o.Now = clock.Now })
	c := g.sdk()
	asked := 0
	ask := func(route, first, cacheKey string) string {
		t.Helper()
		p := openai.ChatCompletionNewParams{Model: route, Messages: []openai.ChatCompletionMessageParamUnion{openai.UserMessage(first)}}
		if cacheKey != "" {
			p.PromptCacheKey = openai.String(cacheKey)
		}
		if _, err := c.Chat.Completions.New(context.Background(), p); err != nil {
			t.Fatal(err)
		}
		asked++
		g.waitRecs(t, asked)
		auth := up.header(int(up.hits.Load()) - 1).Get("Authorization")
		return auth[len(auth)-4:]
	}
	// Key 1 is throttled: the conversations are served with key 2.
	throttleKey1.Store(true)
	ask("sticky", "Tell me about Rust.", "")
	ask("sticky", "first question", "user-42-session-7")
	ask("plain", "Tell me about Rust.", "")
	throttleKey1.Store(false)
	clock.Advance(time.Second) // key 1 is usable again
	if k := ask("plain", "Tell me about Rust.", ""); k != "0001" {
		t.Fatalf("plain route served with key %s, want the first key", k)
	}
	if k := ask("sticky", "Tell me about Rust.", ""); k != "0002" {
		t.Fatalf("sticky conversation served with key %s, want the key that holds its cache", k)
	}
	// prompt_cache_key names the conversation whatever its messages.
	if k := ask("sticky", "an entirely different question", "user-42-session-7"); k != "0002" {
		t.Fatalf("prompt_cache_key conversation served with key %s, want 0002", k)
	}
	if k := ask("sticky", "first question", "another-session"); k != "0001" {
		t.Fatalf("another prompt_cache_key served with key %s, want 0001", k)
	}
}

// On Lambda many instances serve one conversation: the place is in the
// shared table, so an instance that never saw the conversation starts it
// where another instance left it.
func TestCacheLocalityIsSharedByInstances(t *testing.T) {
	var aDown atomic.Bool
	a, b := switchableOK(t, &aDown), switchableOK(t, new(atomic.Bool))
	cfg := fmt.Sprintf(`defaults: {attempts: 1}
providers:
  pa: {kind: openai, base_url: "%s/v1"}
  pb: {kind: openai, base_url: "%s/v1"}
routes:
  sticky: {cache_locality: {}, targets: [{provider: pa, model: up-model}, {provider: pb, model: up-model}]}
`, a.URL, b.URL)
	table := embedded.OpenMemory()
	shared := func(o *server.Options) { o.Upstream.Places = locality.New(table, locality.Options{}) }
	one, two := newGateway(t, cfg, shared), newGateway(t, cfg, shared)
	ask := func(g *gateway, n int) string {
		t.Helper()
		var resp *http.Response
		c := g.sdk()
		if _, err := c.Chat.Completions.New(context.Background(), openai.ChatCompletionNewParams{Model: "sticky",
			Messages: conversation("You are terse.", "Tell me about Rust.", n)}, option.WithResponseInto(&resp)); err != nil {
			t.Fatal(err)
		}
		g.waitRecs(t, 1)
		return resp.Header.Get("x-gateway-provider")
	}
	aDown.Store(true)
	if p := ask(one, 1); p != "pb" {
		t.Fatalf("turn 1 served by %q", p)
	}
	aDown.Store(false)
	if p := ask(two, 2); p != "pb" {
		t.Fatalf("turn 2 on another instance served by %q, want pb", p)
	}
}
