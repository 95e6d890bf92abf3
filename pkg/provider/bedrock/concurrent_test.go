package bedrock_test

import (
	"context"
	"strings"
	"sync"
	"testing"

	"github.com/llmgw/llmgw/pkg/exchange"
	"github.com/llmgw/llmgw/pkg/provider"
)

// Streams of one adapter (one SDK client) read at once each keep their own
// event-stream decoder: the SDK's client shares one codec between its
// streams unless the call brings its own (ownStreamCodec), and under -race
// the shared one is reported here. Each stream also gets exactly its own
// frames.
func TestConcurrentStreamsOfOneClientShareNoDecoder(t *testing.T) {
	const n = 8
	run := func(t *testing.T, a provider.Provider, call func() *provider.Call, check func(evs []exchange.Event) string) {
		var wg sync.WaitGroup
		errs := make(chan string, n)
		for range n {
			wg.Add(1)
			go func() {
				defer wg.Done()
				s, err := a.Send(context.Background(), call())
				if err != nil {
					errs <- err.Error()
					return
				}
				defer s.Close()
				_, evs, err := drainRaw(s)
				if err != nil {
					errs <- err.Error()
					return
				}
				if msg := check(evs); msg != "" {
					errs <- msg
				}
			}()
		}
		wg.Wait()
		close(errs)
		for e := range errs {
			t.Error(e)
		}
	}
	t.Run("InvokeModelWithResponseStream", func(t *testing.T) {
		f := newFake(t, reply{events: claudeChunks()})
		a := newAdapter(t, f)
		run(t, a, func() *provider.Call {
			return messagesCall(t, claudeCodeBody, "", "us.anthropic.claude-sonnet-4-5-20250929-v1:0")
		}, func(evs []exchange.Event) string {
			if len(evs) != len(claudeChunks()) {
				return "frames: got " + itoa(len(evs)) + ", want " + itoa(len(claudeChunks()))
			}
			return ""
		})
	})
	t.Run("ConverseStream", func(t *testing.T) {
		f := newFake(t, reply{events: concat(textEvents("Hel", "lo ", "there"), stopEvents("end_turn", 3, 3))})
		a := newAdapter(t, f)
		run(t, a, func() *provider.Call {
			return newCall(t, `{"model":"m","stream":true,"messages":[{"role":"user","content":"hi"}]}`)
		}, func(evs []exchange.Event) string {
			var text strings.Builder
			for _, ev := range evs {
				text.WriteString(ev.Text)
			}
			if text.String() != "Hello there" {
				return "text " + text.String()
			}
			return ""
		})
	})
}
