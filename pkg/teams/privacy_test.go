package teams_test

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/llmgw/llmgw/pkg/usage/usagetest"
)

const (
	promptSentinel     = "PROMPTxSENTINELx7f3a9"
	completionSentinel = "COMPLETIONxSENTINELx51c2"
)

// sentinelUpstream replies with the completion sentinel; a prompt with
// ECHO gets a 400 that quotes it (providers do that); a prompt with CUT
// gets a stream that dies after its first words.
func sentinelUpstream(w http.ResponseWriter, _ *http.Request, body []byte) {
	s := string(body)
	switch {
	case strings.Contains(s, "ECHO"):
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(400)
		fmt.Fprintf(w, `{"error":{"message":"Invalid prompt: %s","type":"invalid_request_error","param":"messages","code":null}}`, promptSentinel)
	case strings.Contains(s, "CUT"):
		w.Header().Set("Content-Type", "text/event-stream")
		w.WriteHeader(200)
		io.WriteString(w, chunk(`[{"index":0,"delta":{"role":"assistant","content":""},"finish_reason":null}]`))
		io.WriteString(w, chunk(`[{"index":0,"delta":{"content":"`+completionSentinel+`"},"finish_reason":null}]`))
		w.(http.Flusher).Flush()
		panic(http.ErrAbortHandler) // the connection dies mid-stream
	default:
		reply(w, body, []string{"Sure: ", completionSentinel, " done"})
	}
}

// TestNoPromptOrCompletionTextStoredOrLogged sends a sentinel in prompts
// (and gets one back in completions) through the real handler, in every
// shape of request and outcome, then scans every item written to the store
// and every log line.
func TestNoPromptOrCompletionTextStoredOrLogged(t *testing.T) {
	usagetest.Run(t, []usagetest.Case{{Name: "Sentinels", Fn: func(t *testing.T, open usagetest.Opener) {
		g := newGW(t, gwOptions{open: open, upstream: sentinelUpstream,
			limits: "limits: {requests_per_minute: 1000, tokens_per_minute: 1000000, cost_per_day_usd: 100, max_input_tokens: 2000}\n    tags: {checkout: {cost_per_day_usd: 10}}"})
		msg := func(extra string) string {
			return `{"role":"user","content":"` + promptSentinel + " " + extra + `"}`
		}
		cases := []struct {
			name, body string
			status     int
			seesReply  bool
		}{
			{"non-streaming", `{"model":"m","messages":[` + msg("") + `]}`, 200, true},
			{"streaming with usage", `{"model":"m","stream":true,"stream_options":{"include_usage":true},"messages":[` + msg("") + `]}`, 200, true},
			{"tool call arguments", `{"model":"m","messages":[{"role":"assistant","content":null,"tool_calls":[{"id":"c1","type":"function","function":{"name":"f","arguments":"{\"q\":\"` + promptSentinel + `\"}"}}]},{"role":"tool","tool_call_id":"c1","content":"` + promptSentinel + `"}]}`, 200, true},
			{"upstream 400 quoting the prompt", `{"model":"m","messages":[` + msg("ECHO") + `]}`, 400, false},
			{"stream cut mid-way", `{"model":"m","stream":true,"messages":[` + msg("CUT") + `]}`, 200, true},
			{"over the input ceiling", `{"model":"m","messages":[` + msg(strings.Repeat("z", 9000)) + `]}`, 400, false},
		}
		for _, c := range cases {
			resp, body := g.call(t, g.keys["search"], c.body, "x-gateway-tag", "checkout")
			if resp.StatusCode != c.status {
				t.Fatalf("%s: %d %s", c.name, resp.StatusCode, body)
			}
			if c.seesReply && !strings.Contains(body, completionSentinel) {
				t.Fatalf("%s: the completion did not reach the client: %s", c.name, body)
			}
		}
		recs := g.records(t, "search")
		if len(recs) != len(cases) {
			t.Fatalf("%d records for %d requests", len(recs), len(cases))
		}
		for _, r := range recs {
			if r.Tag != "checkout" || r.Team != "search" {
				t.Fatalf("record %+v", r)
			}
		}
		assertAbsent(t, g, "prompt sentinel", promptSentinel)
		assertAbsent(t, g, "completion sentinel", completionSentinel)
		assertAbsent(t, g, "search's key", g.keys["search"])
	}}})
}

// TestClientDisconnectMidStreamIsRecorded: a client that goes away after
// the first tokens still gets its usage record, with the tokens counted so
// far, and its reservation is settled.
func TestClientDisconnectMidStreamIsRecorded(t *testing.T) {
	usagetest.Run(t, []usagetest.Case{{Name: "Disconnect", Fn: func(t *testing.T, open usagetest.Opener) {
		released := make(chan struct{})
		g := newGW(t, gwOptions{open: open, limits: "limits: {tokens_per_minute: 1000000}",
			upstream: func(w http.ResponseWriter, r *http.Request, body []byte) {
				w.Header().Set("Content-Type", "text/event-stream")
				w.WriteHeader(200)
				io.WriteString(w, chunk(`[{"index":0,"delta":{"role":"assistant","content":""},"finish_reason":null}]`))
				for i := 0; i < 5; i++ {
					io.WriteString(w, chunk(`[{"index":0,"delta":{"content":"word number `+fmt.Sprint(i)+` "},"finish_reason":null}]`))
				}
				w.(http.Flusher).Flush()
				select { // hold the stream open until the gateway cancels it
				case <-r.Context().Done():
				case <-time.After(20 * time.Second):
				}
				close(released)
			}})
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		req, _ := http.NewRequestWithContext(ctx, http.MethodPost, g.URL+"/v1/chat/completions",
			strings.NewReader(`{"model":"m","stream":true,"messages":[{"role":"user","content":"tell me a long story"}]}`))
		req.Header.Set("Authorization", "Bearer "+g.keys["search"])
		req.Header.Set("Content-Type", "application/json")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		sc := bufio.NewScanner(resp.Body)
		for sc.Scan() {
			if strings.Contains(sc.Text(), "word number 4") {
				break
			}
		}
		cancel() // the client goes away mid-stream
		resp.Body.Close()
		select {
		case <-released:
		case <-time.After(15 * time.Second):
			t.Fatal("the upstream call was not cancelled")
		}
		deadline := time.Now().Add(10 * time.Second)
		for {
			recs := g.records(t, "search")
			if len(recs) == 1 {
				r := recs[0]
				if r.Outcome != "client_cancelled" || r.OutputTokens <= 0 || !r.Stream {
					t.Fatalf("record of the cancelled stream: %+v", r)
				}
				t.Logf("cancelled stream recorded with %d output tokens (estimated=%v)", r.OutputTokens, r.Estimated)
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("%d records after the disconnect, want 1", len(recs))
			}
			time.Sleep(10 * time.Millisecond)
		}
	}}})
}
