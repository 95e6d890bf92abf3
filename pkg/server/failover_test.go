package server_test

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"runtime"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

func statusHandler(status int, body string, hdr ...string) func(http.ResponseWriter, *http.Request, []byte, int) {
	return func(w http.ResponseWriter, r *http.Request, _ []byte, _ int) {
		for i := 0; i+1 < len(hdr); i += 2 {
			w.Header().Set(hdr[i], hdr[i+1])
		}
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(status)
		io.WriteString(w, body)
	}
}

// deadURL is an address that refuses connections.
func deadURL(t *testing.T) string {
	s := httptest.NewServer(http.NotFoundHandler())
	u := s.URL
	s.Close()
	return u
}

func TestFailoverBeforeFirstTokenIsInvisible(t *testing.T) {
	const errBody = `{"error":{"message":"boom","type":"server_error","param":null,"code":null}}`
	cases := map[string]func(http.ResponseWriter, *http.Request, []byte, int){
		"overloaded body in 200": statusHandler(200, `{"error":{"message":"Overloaded","type":"overloaded_error"}}`),
		"sse error first frame": func(w http.ResponseWriter, r *http.Request, _ []byte, _ int) {
			w.Header().Set("Content-Type", "text/event-stream")
			io.WriteString(w, `data: {"error":{"message":"Overloaded","type":"overloaded_error"}}`+"\n\n")
		},
		"empty success": func(w http.ResponseWriter, r *http.Request, body []byte, _ int) {
			if !strings.Contains(string(body), `"stream":true`) {
				w.Header().Set("Content-Type", "application/json")
				io.WriteString(w, `{"id":"chatcmpl-x","object":"chat.completion","created":1741570283,"model":"gpt-4.1","choices":[{"index":0,"message":{"role":"assistant","content":"","refusal":null},"logprobs":null,"finish_reason":"stop"}],"usage":{"prompt_tokens":12,"completion_tokens":0,"total_tokens":12}}`)
				return
			}
			w.Header().Set("Content-Type", "text/event-stream")
			io.WriteString(w, roleChunk(true)+finishChunk("stop", true)+usageChunk(5, 0, 0)+"data: [DONE]\n\n")
		},
		"reset before first byte": func(w http.ResponseWriter, r *http.Request, _ []byte, _ int) {
			conn, _, _ := http.NewResponseController(w).Hijack()
			conn.Close()
		},
	}
	for _, st := range []int{408, 409, 425, 429, 500, 502, 503, 504, 529} {
		cases[fmt.Sprintf("status %d", st)] = statusHandler(st, errBody)
	}
	for name, bad := range cases {
		for _, stream := range []bool{false, true} {
			t.Run(fmt.Sprintf("%s stream=%v", name, stream), func(t *testing.T) {
				primary := newUpstream(t, bad)
				secondary := newUpstream(t, okHandler)
				g := newGateway(t, oneRoute("", primary.URL, secondary.URL))
				body := chatBody
				if stream {
					body = streamBody
				}
				resp := g.post(t, body)
				out := readAll(t, resp.Body)
				if resp.StatusCode != 200 {
					t.Fatalf("status %d: %s", resp.StatusCode, out)
				}
				if strings.Contains(out, "error") || strings.Contains(out, "boom") || strings.Contains(out, "Overloaded") {
					t.Errorf("client saw the failed attempt: %s", out)
				}
				if stream && !strings.HasSuffix(out, "data: [DONE]\n\n") {
					t.Errorf("stream not finished: %q", out)
				}
				if !strings.Contains(out, "Hello") {
					t.Errorf("secondary's reply missing: %s", out)
				}
				if got := resp.Header.Get("x-gateway-provider"); got != "p1" {
					t.Errorf("x-gateway-provider = %q", got)
				}
				if got := resp.Header.Get("x-gateway-fallback-depth"); got != "1" {
					t.Errorf("x-gateway-fallback-depth = %q", got)
				}
				if got, want := resp.Header.Get("x-gateway-attempts"), fmt.Sprint(primary.hits.Load()+1); got != want {
					t.Errorf("x-gateway-attempts = %q, want %s", got, want)
				}
				if primary.hits.Load() != 2 {
					t.Errorf("primary tried %d times, want 2 (attempts default)", primary.hits.Load())
				}
			})
		}
	}
}

func TestFailoverOnRefusedConnection(t *testing.T) {
	secondary := newUpstream(t, okHandler)
	g := newGateway(t, oneRoute("", deadURL(t), secondary.URL))
	resp := g.post(t, streamBody)
	out := readAll(t, resp.Body)
	if resp.StatusCode != 200 || !strings.Contains(out, "Hello") || resp.Header.Get("x-gateway-provider") != "p1" {
		t.Fatalf("status %d provider %q: %s", resp.StatusCode, resp.Header.Get("x-gateway-provider"), out)
	}
	rec := g.waitRecs(t, 1)[0]
	if len(rec.Attempts) != 3 || rec.Attempts[0].Category != "unavailable" || rec.Attempts[0].Phase != "first_byte" {
		t.Errorf("attempts = %+v", rec.Attempts)
	}
}

func TestFirstTokenTimeoutFailsOver(t *testing.T) {
	released := make(chan struct{})
	var cancelled atomic.Int32
	primary := newUpstream(t, func(w http.ResponseWriter, r *http.Request, _ []byte, _ int) {
		w.Header().Set("Content-Type", "text/event-stream")
		io.WriteString(w, roleChunk(true)) // headers and a role chunk, then nothing
		w.(http.Flusher).Flush()
		select {
		case <-r.Context().Done():
			cancelled.Add(1)
		case <-released:
		}
	})
	defer close(released)
	secondary := newUpstream(t, okHandler)
	g := newGateway(t, oneRoute("    first_token_timeout: 150ms\n    attempts: 1\n", primary.URL, secondary.URL))
	start := time.Now()
	resp := g.post(t, streamBody)
	out := readAll(t, resp.Body)
	if resp.StatusCode != 200 || resp.Header.Get("x-gateway-provider") != "p1" || !strings.Contains(out, "Hello") {
		t.Fatalf("status %d: %s", resp.StatusCode, out)
	}
	if strings.Count(out, `"role":"assistant"`) != 1 {
		t.Errorf("the stalled attempt's role chunk leaked to the client: %s", out)
	}
	if el := time.Since(start); el < 150*time.Millisecond {
		t.Errorf("answered in %v: the timeout cannot have fired", el)
	}
	rec := g.waitRecs(t, 1)[0]
	if rec.Attempts[0].Category != "timeout" || rec.Attempts[0].Phase != "first_token" {
		t.Errorf("attempt = %+v", rec.Attempts[0])
	}
	waitFor(t, func() bool { return cancelled.Load() == 1 }, "stalled upstream call was not cancelled")
}

func waitFor(t *testing.T, cond func() bool, msg string) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatal(msg)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

func TestNonRetryableErrorReturnedAtOnceWithoutBreakerPenalty(t *testing.T) {
	const key = "sk-proj-SENTINELKEY1234567890"
	t.Setenv("P0_KEY", key)
	primary := newUpstream(t, statusHandler(400, `{"error":{"message":"Invalid 'max_tokens': too large. Your key sk-proj-SENTINELKEY1234567890 was used.","type":"invalid_request_error","param":"max_tokens","code":"integer_above_max_value"}}`))
	secondary := newUpstream(t, okHandler)
	cfg := fastPolicy + fmt.Sprintf(`
breaker: {consecutive_failures: 2, min_requests: 2}
providers:
  p0: {kind: openai, base_url: %q, keys: [{env: P0_KEY}]}
  p1: {kind: openai, base_url: %q}
routes:
  m: {targets: [{provider: p0, model: a}, {provider: p1, model: b}]}
`, primary.URL+"/v1", secondary.URL+"/v1")
	g := newGateway(t, cfg)
	for i := 0; i < 5; i++ {
		resp := g.post(t, chatBody)
		out := readAll(t, resp.Body)
		if resp.StatusCode != 400 || resp.Header.Get("x-gateway-error-category") != "invalid_request" {
			t.Fatalf("status %d category %q: %s", resp.StatusCode, resp.Header.Get("x-gateway-error-category"), out)
		}
		if strings.Contains(out, "SENTINELKEY") {
			t.Fatalf("upstream key relayed to client: %s", out)
		}
		if !strings.Contains(out, "too large") {
			t.Errorf("caller's own mistake lost its detail: %s", out)
		}
	}
	if primary.hits.Load() != 5 || secondary.hits.Load() != 0 {
		t.Errorf("primary %d secondary %d: a caller error was retried or fell back", primary.hits.Load(), secondary.hits.Load())
	}
	health := readAll(t, must(http.Get(g.URL+"/healthz")).Body)
	if !strings.Contains(health, `"window_failures":0`) || strings.Contains(health, `"open"`) {
		t.Errorf("caller 4xx counted against the breaker: %s", health)
	}
	g.waitRecs(t, 5) // every request's log line is written before its record
	if strings.Contains(g.logs.String(), "SENTINELKEY") {
		t.Error("key in logs")
	}
}

func must[T any](v T, err error) T {
	if err != nil {
		panic(err)
	}
	return v
}

func TestRetryAfterHonouredUpToCap(t *testing.T) {
	t.Run("short retry-after is waited out on the same target", func(t *testing.T) {
		primary := newUpstream(t, func(w http.ResponseWriter, r *http.Request, body []byte, n int) {
			if n == 1 {
				statusHandler(503, `{"error":{"message":"busy","type":"server_error"}}`, "Retry-After", "1")(w, r, body, n)
				return
			}
			okStream(w, r, body)
		})
		g := newGateway(t, oneRoute("", primary.URL))
		resp := g.post(t, chatBody)
		readAll(t, resp.Body)
		if resp.StatusCode != 200 || primary.hits.Load() != 2 {
			t.Fatalf("status %d hits %d", resp.StatusCode, primary.hits.Load())
		}
		if w := g.waits(); len(w) != 1 || w[0] != time.Second {
			t.Errorf("waits = %v, want [1s]", w)
		}
	})
	t.Run("long retry-after moves on at once", func(t *testing.T) {
		primary := newUpstream(t, statusHandler(503, `{"error":{"message":"busy"}}`, "Retry-After", "30"))
		secondary := newUpstream(t, okHandler)
		g := newGateway(t, oneRoute("", primary.URL, secondary.URL))
		resp := g.post(t, chatBody)
		readAll(t, resp.Body)
		if resp.StatusCode != 200 || primary.hits.Load() != 1 || secondary.hits.Load() != 1 {
			t.Fatalf("status %d primary %d secondary %d", resp.StatusCode, primary.hits.Load(), secondary.hits.Load())
		}
		if w := g.waits(); len(w) != 0 {
			t.Errorf("waited %v", w)
		}
	})
	t.Run("all fail: the client gets the category and a retry-after", func(t *testing.T) {
		primary := newUpstream(t, statusHandler(429, `{"error":{"message":"slow down","type":"rate_limit_error"}}`, "Retry-After", "20"))
		g := newGateway(t, oneRoute("", primary.URL))
		resp := g.post(t, chatBody)
		out := readAll(t, resp.Body)
		if resp.StatusCode != 429 || resp.Header.Get("Retry-After") != "20" || resp.Header.Get("x-gateway-error-category") != "rate_limited" {
			t.Fatalf("status %d retry-after %q: %s", resp.StatusCode, resp.Header.Get("Retry-After"), out)
		}
		var env struct {
			Error struct {
				Type       string  `json:"type"`
				Retryable  bool    `json:"retryable"`
				RetryAfter float64 `json:"retry_after_seconds"`
				Provider   string  `json:"provider"`
			} `json:"error"`
		}
		json.Unmarshal([]byte(out), &env)
		if env.Error.Type != "rate_limited" || !env.Error.Retryable || env.Error.RetryAfter != 20 || env.Error.Provider != "p0" {
			t.Errorf("envelope = %s", out)
		}
	})
}

func TestBackoffBetweenRetriesIsJittered(t *testing.T) {
	primary := newUpstream(t, statusHandler(500, `{"error":{"message":"x"}}`))
	g := newGateway(t, `
defaults: {backoff_base: 100ms, backoff_max: 1s, attempts: 4}
breaker: {consecutive_failures: 100, min_requests: 100}
providers:
  p0: {kind: openai, base_url: "`+primary.URL+`/v1"}
routes:
  m: {targets: [{provider: p0, model: a}]}
`)
	resp := g.post(t, chatBody)
	readAll(t, resp.Body)
	w := g.waits()
	if resp.StatusCode != 502 || len(w) != 3 {
		t.Fatalf("status %d waits %v", resp.StatusCode, w)
	}
	for i, d := range w {
		if ceil := 100 * time.Millisecond << i; d < 0 || d > ceil {
			t.Errorf("wait %d = %v, outside [0, %v]", i, d, ceil)
		}
	}
}

func TestRetryBudgetCapsRetries(t *testing.T) {
	primary := newUpstream(t, statusHandler(500, `{"error":{"message":"x"}}`))
	secondary := newUpstream(t, okHandler)
	g := newGateway(t, fastPolicy+`
breaker: {consecutive_failures: 1000, min_requests: 1000}
providers:
  p0: {kind: openai, base_url: "`+primary.URL+`/v1"}
  p1: {kind: openai, base_url: "`+secondary.URL+`/v1"}
routes:
  m:
    attempts: 3
    retry_budget: 0.1
    min_retries_per_minute: 2
    targets: [{provider: p0, model: a}, {provider: p1, model: b}]
`)
	const n = 100
	for i := 0; i < n; i++ {
		readAll(t, g.post(t, chatBody).Body)
	}
	retries := int(primary.hits.Load()) - n
	if retries > 10 || retries < 2 {
		t.Errorf("%d retries for %d requests: want at most 10%% (and the floor of 2)", retries, n)
	}
	if secondary.hits.Load() != n {
		t.Errorf("secondary served %d of %d", secondary.hits.Load(), n)
	}
}

func TestMaxFallbacksAndFallbackOn(t *testing.T) {
	bad := func(t *testing.T) *upstream { return newUpstream(t, statusHandler(503, `{"error":{"message":"x"}}`)) }
	t.Run("max_fallbacks", func(t *testing.T) {
		a, b, c := bad(t), bad(t), newUpstream(t, okHandler)
		g := newGateway(t, oneRoute("    max_fallbacks: 1\n", a.URL, b.URL, c.URL))
		resp := g.post(t, chatBody)
		readAll(t, resp.Body)
		if resp.StatusCode != 503 || c.hits.Load() != 0 || b.hits.Load() == 0 {
			t.Errorf("status %d, hits %d %d %d", resp.StatusCode, a.hits.Load(), b.hits.Load(), c.hits.Load())
		}
	})
	t.Run("fallback_on", func(t *testing.T) {
		a := newUpstream(t, statusHandler(429, `{"error":{"message":"x"}}`))
		b := newUpstream(t, okHandler)
		g := newGateway(t, oneRoute("    fallback_on: [overloaded]\n", a.URL, b.URL))
		resp := g.post(t, chatBody)
		readAll(t, resp.Body)
		if resp.StatusCode != 429 || b.hits.Load() != 0 {
			t.Errorf("status %d, secondary hits %d: rate_limited must not fall back", resp.StatusCode, b.hits.Load())
		}
	})
}

func TestMidStreamFailuresEndWithOneErrorEventAndNoDone(t *testing.T) {
	cases := map[string]struct {
		extra    string
		handler  func(http.ResponseWriter, *http.Request, []byte, int)
		category string
	}{
		"upstream ends without [DONE]": {handler: func(w http.ResponseWriter, r *http.Request, _ []byte, _ int) {
			w.Header().Set("Content-Type", "text/event-stream")
			io.WriteString(w, roleChunk(true)+contentChunk("partial", true))
		}, category: "interrupted"},
		"[DONE] without finish_reason": {handler: func(w http.ResponseWriter, r *http.Request, _ []byte, _ int) {
			w.Header().Set("Content-Type", "text/event-stream")
			io.WriteString(w, roleChunk(true)+contentChunk("partial", true)+"data: [DONE]\n\n")
		}, category: "interrupted"},
		"in-band error after content": {handler: func(w http.ResponseWriter, r *http.Request, _ []byte, _ int) {
			w.Header().Set("Content-Type", "text/event-stream")
			io.WriteString(w, roleChunk(true)+contentChunk("partial", true)+`data: {"error":{"message":"Overloaded","type":"overloaded_error"}}`+"\n\n")
		}, category: "interrupted"},
		"idle gap": {extra: "    idle_timeout: 150ms\n", handler: func(w http.ResponseWriter, r *http.Request, _ []byte, _ int) {
			w.Header().Set("Content-Type", "text/event-stream")
			io.WriteString(w, roleChunk(true)+contentChunk("partial", true))
			w.(http.Flusher).Flush()
			<-r.Context().Done()
		}, category: "timeout"},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			up := newUpstream(t, tc.handler)
			second := newUpstream(t, okHandler)
			g := newGateway(t, oneRoute(tc.extra, up.URL, second.URL))
			resp := g.post(t, streamBody)
			out := readAll(t, resp.Body)
			if strings.Contains(out, "[DONE]") {
				t.Errorf("a failed stream ended with [DONE]: %s", out)
			}
			frames := strings.Split(strings.TrimSuffix(out, "\n\n"), "\n\n")
			last := frames[len(frames)-1]
			if strings.Count(out, `"error"`) != 1 || !strings.HasPrefix(last, `data: {"error":`) {
				t.Fatalf("want exactly one final error frame, got: %s", out)
			}
			var env struct {
				Error struct {
					Category  string `json:"category"`
					Retryable bool   `json:"retryable"`
					Provider  string `json:"provider"`
					Usage     struct {
						CompletionTokens int `json:"completion_tokens"`
					} `json:"usage"`
				} `json:"error"`
			}
			if err := json.Unmarshal([]byte(strings.TrimPrefix(last, "data: ")), &env); err != nil {
				t.Fatal(err)
			}
			if env.Error.Category != tc.category || env.Error.Provider != "p0" || !env.Error.Retryable || env.Error.Usage.CompletionTokens == 0 {
				t.Errorf("error event = %s", last)
			}
			if strings.Contains(out, `"finish_reason":"`) {
				t.Errorf("gateway invented a finish_reason: %s", out)
			}
			if second.hits.Load() != 0 {
				t.Error("switched provider after the first token")
			}
			if rec := g.waitRecs(t, 1)[0]; rec.Outcome != tc.category || rec.OutputTokens == 0 {
				t.Errorf("record = %+v", rec)
			}
		})
	}
}

func TestRequestDeadlineEndsStreamWithTimeoutEvent(t *testing.T) {
	up := newUpstream(t, func(w http.ResponseWriter, r *http.Request, _ []byte, _ int) {
		w.Header().Set("Content-Type", "text/event-stream")
		io.WriteString(w, roleChunk(true))
		for i := 0; i < 50; i++ {
			io.WriteString(w, contentChunk("tick", true))
			w.(http.Flusher).Flush()
			select {
			case <-r.Context().Done():
				return
			case <-time.After(50 * time.Millisecond):
			}
		}
	})
	g := newGateway(t, "server: {request_timeout: 400ms}\n"+oneRoute("", up.URL))
	resp := g.post(t, streamBody)
	out := readAll(t, resp.Body)
	if !strings.Contains(out, `"category":"timeout"`) || strings.Contains(out, "[DONE]") {
		t.Fatalf("want a timeout error event: %s", out)
	}
}

func TestClientDisconnectCancelsUpstream(t *testing.T) {
	var cancelled atomic.Int32
	up := newUpstream(t, func(w http.ResponseWriter, r *http.Request, _ []byte, _ int) {
		w.Header().Set("Content-Type", "text/event-stream")
		io.WriteString(w, roleChunk(true))
		for {
			io.WriteString(w, contentChunk("tick", true))
			w.(http.Flusher).Flush()
			select {
			case <-r.Context().Done():
				cancelled.Add(1)
				return
			case <-time.After(20 * time.Millisecond):
			}
		}
	})
	g := newGateway(t, oneRoute("", up.URL))
	before := runtime.NumGoroutine()
	const clients = 20
	for i := 0; i < clients; i++ {
		resp := g.post(t, streamBody)
		buf := make([]byte, 300)
		io.ReadAtLeast(resp.Body, buf, 300)
		resp.Body.Close()
	}
	waitFor(t, func() bool { return cancelled.Load() == clients }, "upstream calls were not all cancelled")
	waitFor(t, func() bool { return len(g.recs()) == clients }, "not one record per request")
	for _, r := range g.recs() {
		if r.Outcome != "client_cancelled" || r.OutputTokens == 0 {
			t.Errorf("record = %+v", r)
		}
	}
	http.DefaultClient.CloseIdleConnections()
	waitFor(t, func() bool { return runtime.NumGoroutine() <= before+3 }, fmt.Sprintf("goroutines leaked: %d before, %d after", before, runtime.NumGoroutine()))
}

func TestOpenBreakerSkipsTargetWithoutNetworkCall(t *testing.T) {
	primary := newUpstream(t, statusHandler(503, `{"error":{"message":"x"}}`))
	secondary := newUpstream(t, okHandler)
	g := newGateway(t, fastPolicy+`
breaker: {consecutive_failures: 3, cooldown: 1m, max_cooldown: 5m}
providers:
  p0: {kind: openai, base_url: "`+primary.URL+`/v1"}
  p1: {kind: openai, base_url: "`+secondary.URL+`/v1"}
routes:
  m: {attempts: 1, targets: [{provider: p0, model: a}, {provider: p1, model: b}]}
`)
	for i := 0; i < 3; i++ {
		readAll(t, g.post(t, chatBody).Body)
	}
	if primary.hits.Load() != 3 {
		t.Fatalf("primary hits %d", primary.hits.Load())
	}
	for i := 0; i < 5; i++ {
		resp := g.post(t, chatBody)
		readAll(t, resp.Body)
		if resp.StatusCode != 200 {
			t.Fatalf("status %d", resp.StatusCode)
		}
	}
	if primary.hits.Load() != 3 {
		t.Errorf("open breaker still sent %d calls to the primary", primary.hits.Load()-3)
	}
	rec := g.waitRecs(t, 8)[7]
	if rec.Attempts[0].Skipped != "breaker_open" {
		t.Errorf("attempts = %+v", rec.Attempts)
	}
	health := readAll(t, must(http.Get(g.URL+"/healthz")).Body)
	if !strings.Contains(health, `"state":"open"`) {
		t.Errorf("healthz = %s", health)
	}
}

func TestForcedBreakerFromConfig(t *testing.T) {
	primary := newUpstream(t, okHandler)
	secondary := newUpstream(t, okHandler)
	g := newGateway(t, fastPolicy+`
providers:
  p0: {kind: openai, base_url: "`+primary.URL+`/v1"}
  p1: {kind: openai, base_url: "`+secondary.URL+`/v1"}
routes:
  m: {targets: [{provider: p0, model: a, breaker: open}, {provider: p1, model: b}]}
`)
	resp := g.post(t, chatBody)
	readAll(t, resp.Body)
	if primary.hits.Load() != 0 || resp.Header.Get("x-gateway-provider") != "p1" {
		t.Errorf("forced-open target was called")
	}
}

func TestUpstreamErrorBodiesNeverRelayedRaw(t *testing.T) {
	const key = "sk-live-SENTINEL-abcdefghijklmnop"
	t.Setenv("K", key)
	up := newUpstream(t, func(w http.ResponseWriter, r *http.Request, _ []byte, _ int) {
		// A provider that echoes the credential it got in its error body.
		statusHandler(500, `{"error":{"message":"internal failure for `+r.Header.Get("Authorization")+`","type":"server_error"}}`)(w, r, nil, 0)
	})
	g := newGateway(t, fastPolicy+`
providers:
  p0: {kind: openai, base_url: "`+up.URL+`/v1", keys: [{env: K}]}
routes:
  m: {targets: [{provider: p0, model: a}]}
`)
	for _, body := range []string{chatBody, streamBody} {
		resp := g.post(t, body)
		out := readAll(t, resp.Body)
		if resp.StatusCode != 502 || strings.Contains(out, "SENTINEL") || strings.Contains(out, "internal failure") {
			t.Errorf("status %d body %s", resp.StatusCode, out)
		}
	}
	g.waitRecs(t, 2) // every request's log line is written before its record
	if strings.Contains(g.logs.String(), "SENTINEL") {
		t.Errorf("key in logs: %s", g.logs.String())
	}
}

func TestProviderCredentialRejectionMovesToNextKeyThenTarget(t *testing.T) {
	t.Setenv("K1", "sk-bad-key-aaaaaaaaaaaa")
	t.Setenv("K2", "sk-good-key-bbbbbbbbbbb")
	up := newUpstream(t, func(w http.ResponseWriter, r *http.Request, body []byte, n int) {
		if r.Header.Get("Authorization") != "Bearer sk-good-key-bbbbbbbbbbb" {
			statusHandler(401, `{"error":{"message":"Incorrect API key provided","type":"invalid_request_error","code":"invalid_api_key"}}`)(w, r, body, n)
			return
		}
		okStream(w, r, body)
	})
	g := newGateway(t, fastPolicy+`
providers:
  p0: {kind: openai, base_url: "`+up.URL+`/v1", keys: [{env: K1}, {env: K2}]}
routes:
  m: {targets: [{provider: p0, model: a}]}
`)
	for i := 0; i < 3; i++ {
		resp := g.post(t, chatBody)
		readAll(t, resp.Body)
		if resp.StatusCode != 200 {
			t.Fatalf("status %d", resp.StatusCode)
		}
	}
	if up.hits.Load() != 4 {
		t.Errorf("hits = %d: the rejected key should be tried once, then set aside", up.hits.Load())
	}
}

func TestOneLogLinePerRequestWithMetadataOnly(t *testing.T) {
	const sentinel = "PROMPT-SENTINEL-7f3a"
	up := newUpstream(t, func(w http.ResponseWriter, r *http.Request, body []byte, n int) {
		streamReply(w, []string{"COMPLETION-SENTINEL"}, true)
	})
	bad := newUpstream(t, statusHandler(503, `{"error":{"message":"x"}}`))
	g := newGateway(t, oneRoute("", bad.URL, up.URL))
	readAll(t, g.post(t, `{"model":"m","stream":true,"messages":[{"role":"user","content":"`+sentinel+`"}]}`).Body)
	g.waitRecs(t, 1)
	logs := g.logs.String()
	if strings.Contains(logs, sentinel) || strings.Contains(logs, "COMPLETION-SENTINEL") {
		t.Fatalf("prompt or completion text logged: %s", logs)
	}
	var lines []map[string]any
	for _, l := range strings.Split(strings.TrimSpace(logs), "\n") {
		var m map[string]any
		if err := json.Unmarshal([]byte(l), &m); err != nil {
			t.Fatalf("not JSON: %s", l)
		}
		if m["msg"] == "request" {
			lines = append(lines, m)
		}
	}
	if len(lines) != 1 {
		t.Fatalf("%d request lines", len(lines))
	}
	l := lines[0]
	for _, k := range []string{"request_id", "route", "attempts", "fallback_depth", "ttft_ms", "latency_ms", "tokens_in", "tokens_out", "outcome", "status"} {
		if _, ok := l[k]; !ok {
			t.Errorf("log line lacks %s: %v", k, l)
		}
	}
	if atts := l["attempts"].([]any); len(atts) != 3 {
		t.Errorf("attempts = %v", atts)
	}
	if l["fallback_depth"].(float64) != 1 || l["outcome"] != "ok" {
		t.Errorf("line = %v", l)
	}
}
