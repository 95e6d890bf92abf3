package server_test

import (
	"net/http"
	"os"
	"os/exec"
	"runtime/debug"
	"strings"
	"testing"

	"github.com/llmgw/llmgw/pkg/internal/testkit"
)

// streamStackLimit is the stack a passthrough stream's handler goroutine
// must fit in. Goroutine stacks grow by doubling and keep their size while
// the stream is open: one frame past 16 KiB anywhere on the way (the
// upstream call, the head read, the relay) makes every open stream hold
// 32 KiB of stack instead of 16 (docs/benchmarks.md, memory per open
// stream).
const streamStackLimit = 16 << 10

// TestStreamStackFits16KiB: a streamed Chat Completions, Messages and
// Responses passthrough request, each on a fresh connection, runs within a
// 16 KiB goroutine stack. The check runs in a child process (a goroutine
// over debug.SetMaxStack's limit kills the process, with the stack that
// overflowed), without adaptive stack starts (a new goroutine would start
// with the average size seen so far and never need to grow), and not under
// the race detector, whose instrumentation changes frame sizes
// (scripts/test.sh runs it without -race).
func TestStreamStackFits16KiB(t *testing.T) {
	if testkit.RaceEnabled {
		t.Skip("frame sizes differ under -race; scripts/test.sh runs this test without it")
	}
	if os.Getenv("LLMGW_STACK_PROBE") == "1" {
		probeStreamStacks(t)
		return
	}
	cmd := exec.Command(os.Args[0], "-test.run=^TestStreamStackFits16KiB$", "-test.count=1", "-test.v")
	cmd.Env = append(os.Environ(), "LLMGW_STACK_PROBE=1", "GODEBUG=adaptivestackstart=0")
	out, err := cmd.CombinedOutput()
	if err != nil || !strings.Contains(string(out), "--- PASS: TestStreamStackFits16KiB") {
		s := string(out)
		if i := strings.Index(s, "goroutine stack exceeds"); i >= 0 {
			s = s[max(0, i-200):min(len(s), i+6000)] // the stack that overflowed, deepest frame first
		}
		t.Fatalf("a stream's handler needs more than %d bytes of stack (%v):\n%s", streamStackLimit, err, s)
	}
}

// probeStreamStacks runs in the child: each API's stream on a new
// connection (a new handler goroutine, starting small) under the limit,
// after one request without it (a process's first request runs one-time
// set-up, such as encoding/json's type caches, deeper than any other).
func probeStreamStacks(t *testing.T) {
	claude := newUpstream(t, func(w http.ResponseWriter, _ *http.Request, _ []byte, _ int) {
		anthropicText(w, []string{"hello ", "world"}, 0)
	})
	chat := newUpstream(t, okHandler)
	native := newUpstream(t, nativeHandler(nativeFrames))
	for _, c := range []struct{ name, config, path, body, want string }{
		{"chat", oneRoute("", chat.URL), "/v1/chat/completions", streamBody, "[DONE]"},
		{"messages", anthropicRoute(claude.URL, ""), "/v1/messages",
			`{"model":"m","max_tokens":100,"stream":true,"messages":[{"role":"user","content":"hi"}]}`, "message_stop"},
		{"responses", responsesRoute([2]string{"native", native.URL}), "/v1/responses", `{"model":"m","stream":true,"input":"hi"}`, "response.completed"},
	} {
		g := newGateway(t, c.config)
		readAll(t, postTo(t, g.URL+c.path, c.body, "anthropic-version", "2023-06-01").Body)
		http.DefaultClient.CloseIdleConnections()
		debug.SetMaxStack(streamStackLimit)
		out := readAll(t, postTo(t, g.URL+c.path, c.body, "anthropic-version", "2023-06-01").Body)
		debug.SetMaxStack(1 << 30)
		if !strings.Contains(out, c.want) {
			t.Fatalf("%s: the stream did not complete: %.300s", c.name, out)
		}
	}
}
