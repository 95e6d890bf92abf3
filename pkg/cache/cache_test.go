package cache_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"
	"github.com/tidwall/gjson"

	"github.com/llmgw/llmgw/pkg/store/storetest"
)

// The response cache through the HTTP front, on both store backends.
func TestResponseCache(t *testing.T) {
	storetest.RunBackends(t, []storetest.Scenario{
		{Name: "hits across streaming and non-streaming", Fn: hitsAcrossStreamingAndNot},
		{Name: "scope: per team, shared, opt-in and opt-out", Fn: scopes},
		{Name: "only complete successful answers", Fn: onlyCompleteAnswers},
		{Name: "bypass and no-store", Fn: bypass},
		{Name: "entries expire after the ttl", Fn: expiry},
		{Name: "replay timing: original gaps, instant, paced", Fn: replayTiming},
		{Name: "a failing or slow store is a miss", Fn: storeDown},
	})
}

func hitsAcrossStreamingAndNot(t *testing.T, e *storetest.Env) {
	g := newGateway(t, e.Store, e.Now, "")
	want := strings.Join(words, "")

	// Written by a non-streaming miss, read by a streaming hit.
	miss := g.ask(t, "a", "m", "q1", false)
	if miss.status != 200 || miss.cache != "miss" || miss.content() != want {
		t.Fatalf("miss: %d %q %s", miss.status, miss.cache, miss.body)
	}
	hit := g.ask(t, "a", "m", "q1", true)
	if hit.cache != "hit" || hit.content() != want || g.up.hits.Load() != 1 {
		t.Fatalf("streaming hit: %q %q, upstream calls %d\n%s", hit.cache, hit.content(), g.up.hits.Load(), hit.body)
	}
	if !strings.Contains(hit.body, "data: [DONE]\n") || !strings.Contains(hit.body, `"usage":{"prompt_tokens":11,"completion_tokens":4`) {
		t.Fatalf("the replayed stream lacks its end or its usage:\n%s", hit.body)
	}
	id := gjson.Get(hit.frames[0].data, "id").String()
	if id == "" || id == "chatcmpl-upstream1" || gjson.Get(hit.frames[0].data, "created").Int() < time.Now().Unix()-60 {
		t.Fatalf("ids and timestamps not rebuilt: %s", hit.frames[0].data)
	}

	// Written by a streaming miss, read by a non-streaming hit and by the
	// official SDK's stream (a cached stream reads like a live one).
	if r := g.ask(t, "a", "m", "q2", true); r.cache != "miss" || r.content() != want {
		t.Fatalf("streaming miss: %q %q", r.cache, r.content())
	}
	body := g.ask(t, "a", "m", "q2", false)
	if body.cache != "hit" || body.content() != want || gjson.Get(body.body, "usage.completion_tokens").Int() != 4 ||
		gjson.Get(body.body, "choices.0.finish_reason").String() != "stop" || gjson.Get(body.body, "object").String() != "chat.completion" {
		t.Fatalf("non-streaming hit: %q %s", body.cache, body.body)
	}
	sdk := openai.NewClient(option.WithBaseURL(g.URL+"/v1"), option.WithAPIKey("k"), option.WithMaxRetries(0), option.WithHeader("x-team", "a"))
	st := sdk.Chat.Completions.NewStreaming(context.Background(), openai.ChatCompletionNewParams{Model: "m", Temperature: openai.Float(0.5),
		Messages: []openai.ChatCompletionMessageParamUnion{openai.UserMessage("q2")}})
	var acc openai.ChatCompletionAccumulator
	for st.Next() {
		acc.AddChunk(st.Current())
	}
	if st.Err() != nil || len(acc.Choices) != 1 || acc.Choices[0].Message.Content != want || acc.Choices[0].FinishReason != "stop" {
		t.Fatalf("SDK over a cached stream: %v %+v", st.Err(), acc.Choices)
	}
	if n := g.up.hits.Load(); n != 2 {
		t.Fatalf("%d upstream calls for 2 distinct requests", n)
	}

	// Records: a miss costs what it cost; a hit costs nothing, spends no
	// tokens, and notes what it saved.
	m, h := g.last(t, 1), g.last(t, 2)
	if m.ResponseCache != "miss" || m.CostUSD <= 0 || h.ResponseCache != "hit" || h.CostUSD != 0 ||
		h.InputTokens != 0 || h.OutputTokens != 0 || h.SavedCostUSD != m.CostUSD || h.Target != "" || h.Outcome != "ok" {
		t.Fatalf("miss %+v\nhit %+v", m, h)
	}
}

func scopes(t *testing.T, e *storetest.Env) {
	g := newGateway(t, e.Store, e.Now, "")
	type step struct {
		team, route, want string
	}
	for i, s := range []step{
		{"a", "m", "miss"}, {"a", "m", "hit"},
		{"b", "m", "miss"},                              // entries are per team
		{"a", "shared", "miss"}, {"b", "shared", "hit"}, // unless the route shares them
		{"a", "plain", ""}, {"on", "plain", "miss"}, {"on", "plain", "hit"}, // a team may opt in
		{"off", "m", ""}, {"off", "m", ""}, // or out
		{"on", "never", ""},                 // an uncacheable route never is
		{"", "m", "miss"}, {"", "m", "hit"}, // anonymous callers have their own scope
	} {
		if r := g.ask(t, s.team, s.route, "scope", true); r.cache != s.want || r.status != 200 {
			t.Fatalf("step %d %+v: x-gateway-cache %q, status %d", i, s, r.cache, r.status)
		}
	}
	if n := g.up.hits.Load(); n != 9 {
		t.Fatalf("%d upstream calls, want 9", n)
	}
}

func onlyCompleteAnswers(t *testing.T, e *storetest.Env) {
	g := newGateway(t, e.Store, e.Now, "cache: {max_entry_bytes: 4096}\n")
	for _, c := range []struct {
		prompt string
		stream bool
	}{{"cut", true}, {"length", true}, {"length", false}, {"fail", false}, {"fail", true}, {"logprobs", true}, {"logprobs", false}, {"big", true}, {"big", false}} {
		before := g.up.hits.Load()
		first := g.ask(t, "a", "m", c.prompt, c.stream)
		second := g.ask(t, "a", "m", c.prompt, c.stream)
		if g.up.hits.Load()-before != 2 || second.cache != "miss" {
			t.Errorf("%s (stream %v) was cached: statuses %d/%d, second %q", c.prompt, c.stream, first.status, second.status, second.cache)
		}
	}
	// The logprobs answer is relayed whole even though it is not cached.
	if r := g.ask(t, "a", "m", "logprobs", false); !strings.Contains(r.body, `"logprob":-0.1`) {
		t.Errorf("logprobs dropped: %s", r.body)
	}
}

func bypass(t *testing.T, e *storetest.Env) {
	g := newGateway(t, e.Store, e.Now, "")
	g.ask(t, "a", "m", "fresh", false)
	for _, h := range [][]string{{"Cache-Control", "no-cache"}, {"x-gateway-cache", "bypass"}, {"Cache-Control", "max-age=0, no-store"}} {
		if r := g.ask(t, "a", "m", "fresh", true, h...); r.cache != "bypass" || r.status != 200 {
			t.Fatalf("%v: %q", h, r.cache)
		}
	}
	if n := g.up.hits.Load(); n != 4 {
		t.Fatalf("%d upstream calls, want 4 (one miss, three bypasses)", n)
	}
	if r := g.ask(t, "a", "m", "fresh", true); r.cache != "hit" {
		t.Fatalf("after bypasses: %q", r.cache)
	}
	// no-store neither reads nor writes.
	g.ask(t, "a", "m", "private", false, "Cache-Control", "no-store")
	if r := g.ask(t, "a", "m", "private", false); r.cache != "miss" {
		t.Fatalf("a no-store answer was stored: %q", r.cache)
	}
	if rec := g.last(t, 2); rec.ResponseCache != "bypass" || rec.CostUSD <= 0 {
		t.Fatalf("bypass record %+v", rec)
	}
}

func expiry(t *testing.T, e *storetest.Env) {
	g := newGateway(t, e.Store, e.Now, "cache: {ttl: 10m}\n")
	g.ask(t, "a", "m", "ttl", false)
	e.Advance(9 * time.Minute)
	if r := g.ask(t, "a", "m", "ttl", false); r.cache != "hit" {
		t.Fatalf("within the ttl: %q", r.cache)
	}
	e.Advance(2 * time.Minute)
	if r := g.ask(t, "a", "m", "ttl", false); r.cache != "miss" {
		t.Fatalf("past the ttl: %q", r.cache)
	}
}

func replayTiming(t *testing.T, e *storetest.Env) {
	g := newGateway(t, e.Store, e.Now, "")
	live := g.ask(t, "a", "m", "slow", true) // 150 ms between chunks
	span := func(r reply) time.Duration {
		f := r.contentFrames()
		return f[len(f)-1].at - f[0].at
	}
	orig := span(live)
	replayed := g.ask(t, "a", "m", "slow", true)
	ratio := float64(span(replayed)) / float64(orig)
	t.Logf("live stream spans %s, its replay %s (ratio %.2f)", orig, span(replayed), ratio)
	if replayed.cache != "hit" || ratio < 0.7 || ratio > 1.5 {
		t.Errorf("the replay did not keep the original gaps: %q, ratio %.2f", replayed.cache, ratio)
	}
	instant := g.ask(t, "a", "m", "slow", true, "x-gateway-pacing", "instant")
	if r := float64(span(instant)) / float64(orig); instant.cache != "hit" || r > 0.2 {
		t.Errorf("an instant replay waited: ratio %.2f", r)
	}
	// Pacing applies to replays: one stored 600-character chunk is
	// released in pieces.
	g.ask(t, "a", "m", "burst", false)
	paced := g.ask(t, "a", "m", "burst", true, "x-gateway-pacing", "fast")
	if paced.cache != "hit" || len(paced.contentFrames()) < 10 || paced.content() != strings.Repeat("burst ", 100) {
		t.Errorf("paced replay: %q, %d frames", paced.cache, len(paced.contentFrames()))
	}
}

func storeDown(t *testing.T, e *storetest.Env) {
	f := storetest.NewFaulty(t, e.Store)
	g := newGateway(t, f, e.Now, "cache: {store_timeout: 50ms}\n")
	for _, mode := range []storetest.FaultMode{storetest.Failing, storetest.Blocking} {
		f.Set(mode)
		start := time.Now()
		r := g.ask(t, "a", "m", "down", false)
		if r.status != 200 || r.cache != "miss" || r.content() != strings.Join(words, "") {
			t.Fatalf("mode %d: %d %q", mode, r.status, r.cache)
		}
		if took := time.Since(start); took > 2*time.Second {
			t.Fatalf("mode %d: a slow store held the request for %s", mode, took)
		}
	}
	f.Set(storetest.Healthy)
	g.ask(t, "a", "m", "down", false)
	if r := g.ask(t, "a", "m", "down", false); r.cache != "hit" {
		t.Fatalf("after recovery: %q", r.cache)
	}
}
