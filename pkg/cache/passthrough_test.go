package cache_test

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	anthropic "github.com/anthropics/anthropic-sdk-go/v2"
	aoption "github.com/anthropics/anthropic-sdk-go/v2/option"
	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"
	"github.com/openai/openai-go/v3/responses"

	"github.com/llmgw/llmgw/pkg/cache"
	"github.com/llmgw/llmgw/pkg/pacing"
)

// The response cache and pacing on the two native passthrough paths: the
// Messages API to an Anthropic upstream (Claude Code's main path) and the
// Responses API to an OpenAI upstream that speaks it (Codex's), driven by
// the official SDKs.

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
