package resilience

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/llmgw/llmgw/pkg/exchange"
	"github.com/llmgw/llmgw/pkg/internal/testkit"

	"github.com/rs/zerolog"

	"github.com/llmgw/llmgw/pkg/config"
	"github.com/llmgw/llmgw/pkg/server"
)

// TestMain isolates the AWS SDK from the machine once for the whole
// package (fake static credentials, no shared files, no instance metadata),
// so bedrock tests need no t.Setenv and may run in parallel, and silences
// Toxiproxy's logger.
func TestMain(m *testing.M) {
	for k, v := range map[string]string{
		"AWS_ACCESS_KEY_ID":                "AKIDRESILIENCEFAKE",
		"AWS_SECRET_ACCESS_KEY":            "fake-secret-access-key",
		"AWS_SESSION_TOKEN":                "",
		"AWS_PROFILE":                      "",
		"AWS_REGION":                       "us-east-1",
		"AWS_DEFAULT_REGION":               "",
		"AWS_CONFIG_FILE":                  "/nonexistent/aws-config",
		"AWS_SHARED_CREDENTIALS_FILE":      "/nonexistent/aws-credentials",
		"AWS_EC2_METADATA_DISABLED":        "true",
		"AWS_ENDPOINT_URL":                 "",
		"AWS_ENDPOINT_URL_BEDROCK_RUNTIME": "",
		"AWS_ENDPOINT_URL_DYNAMODB":        "",
		"AWS_CA_BUNDLE":                    "",
		"AWS_BEARER_TOKEN_BEDROCK":         "",
		"HTTP_PROXY":                       "",
		"HTTPS_PROXY":                      "",
		"http_proxy":                       "",
		"https_proxy":                      "",
	} {
		os.Setenv(k, v)
	}
	zerolog.SetGlobalLevel(zerolog.Disabled)
	os.Exit(m.Run())
}

// syncBuffer is a goroutine-safe buffer (log sinks, process output).
type syncBuffer = testkit.SyncBuffer

// gateway is the real gateway handler under test, served on loopback. It
// collects its usage records (server.Options.Record) and its log lines.
type gateway struct {
	*httptest.Server
	h      *server.Handler
	logs   *syncBuffer
	served atomic.Int64 // requests that reached the handler
	mu     sync.Mutex
	recs   []exchange.Record
}

// newGateway serves a config given as YAML. Waits between retries are
// skipped (the tests are about faults, not backoff).
func newGateway(t testing.TB, yaml string, opts ...func(*server.Options)) *gateway {
	t.Helper()
	cfg, err := config.Parse([]byte(yaml))
	if err != nil {
		t.Fatalf("config: %v\n%s", err, yaml)
	}
	g := &gateway{logs: &syncBuffer{}}
	o := server.Options{
		Logger: slog.New(slog.NewJSONHandler(g.logs, nil)),
		Upstream: server.Upstream{
			Sleep: func(ctx context.Context, _ time.Duration) error { return ctx.Err() },
		},
		Reporting: server.Reporting{
			Record: func(_ context.Context, r *exchange.Record) {
				g.mu.Lock()
				g.recs = append(g.recs, *r)
				g.mu.Unlock()
			},
		},
	}
	for _, f := range opts {
		f(&o)
	}
	h, err := server.New(context.Background(), cfg, o)
	if err != nil {
		t.Fatalf("server.New: %v", err)
	}
	g.h = h
	g.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/healthz" {
			g.served.Add(1)
		}
		h.ServeHTTP(w, r)
	}))
	t.Cleanup(g.Close)
	return g
}

func (g *gateway) records() []exchange.Record {
	g.mu.Lock()
	defer g.mu.Unlock()
	return append([]exchange.Record(nil), g.recs...)
}

// waitRecords waits (bounded) until n records exist and returns them; a
// record is written after the response's last byte, so a client may finish
// first. More than n is a failure too.
func (g *gateway) waitRecords(t testing.TB, n int) []exchange.Record {
	t.Helper()
	waitFor(t, 10*time.Second, func() bool { return len(g.records()) >= n }, func() string {
		return fmt.Sprintf("%d usage records, want %d", len(g.records()), n)
	})
	time.Sleep(20 * time.Millisecond) // a duplicate would show up now
	recs := g.records()
	if len(recs) != n {
		t.Fatalf("%d usage records, want exactly %d", len(recs), n)
	}
	return recs
}

// client is an HTTP client of its own per test, so idle connections and
// their goroutines belong to the test.
func newClient(t testing.TB) *http.Client {
	tr := &http.Transport{MaxIdleConnsPerHost: 64, DisableCompression: true}
	t.Cleanup(tr.CloseIdleConnections)
	return &http.Client{Transport: tr, Timeout: 60 * time.Second}
}

// post sends a chat completion request and reads the whole answer.
func (g *gateway) post(t testing.TB, c *http.Client, body string, hdr ...string) result {
	t.Helper()
	r, err := g.tryPost(c, body, hdr...)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// tryPost is post for goroutines other than the test's.
func (g *gateway) tryPost(c *http.Client, body string, hdr ...string) (result, error) {
	req, err := newRequest(g.URL, strings.NewReader(body), hdr...)
	if err != nil {
		return result{}, err
	}
	resp, err := c.Do(req)
	if err != nil {
		return result{}, fmt.Errorf("post: %w", err)
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(resp.Body)
	if err != nil {
		return result{}, fmt.Errorf("read: %w (got %q)", err, raw)
	}
	return parseResult(resp, raw), nil
}

// health returns the /healthz snapshot of one target.
func (g *gateway) health(t testing.TB, target string) targetHealth {
	t.Helper()
	resp, err := http.Get(g.URL + "/healthz")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var h struct {
		Targets []targetHealth `json:"targets"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&h); err != nil {
		t.Fatal(err)
	}
	for _, th := range h.Targets {
		if th.ID == target {
			return th
		}
	}
	t.Fatalf("healthz has no target %s", target)
	return targetHealth{}
}

type targetHealth struct {
	ID      string `json:"id"`
	Breaker struct {
		State       string `json:"state"`
		Requests    int    `json:"window_requests"`
		Failures    int    `json:"window_failures"`
		Consecutive int    `json:"consecutive_failures"`
	} `json:"breaker"`
}

// errEnvelope is the gateway's error body / error event.
type errEnvelope struct {
	Error struct {
		Message    string  `json:"message"`
		Type       string  `json:"type"`
		Code       string  `json:"code"`
		Param      string  `json:"param"`
		Category   string  `json:"category"`
		Retryable  bool    `json:"retryable"`
		RetryAfter float64 `json:"retry_after_seconds"`
		Provider   string  `json:"provider"`
		RequestID  string  `json:"request_id"`
		Usage      *struct {
			PromptTokens     int `json:"prompt_tokens"`
			CompletionTokens int `json:"completion_tokens"`
		} `json:"usage"`
	} `json:"error"`
}

// result is one response as the client saw it. For SSE it is split into
// frames; for JSON Body holds it whole.
type result struct {
	Status int
	Header http.Header
	Body   string
	SSE    bool
	Frames []string // data payloads, in order
	Done   bool     // a [DONE] frame was seen
	Errors []errEnvelope
	// ErrorIndex is the frame index of the first error frame (-1: none).
	ErrorIndex int
	DoneIndex  int
	Text       string // delta.content of every chunk, joined
	Finish     []string
}

func parseResult(resp *http.Response, raw []byte) result {
	r := result{Status: resp.StatusCode, Header: resp.Header, Body: string(raw), ErrorIndex: -1, DoneIndex: -1}
	if !strings.HasPrefix(resp.Header.Get("Content-Type"), "text/event-stream") {
		return r
	}
	r.SSE = true
	for _, block := range strings.Split(string(raw), "\n\n") {
		if block == "" {
			continue
		}
		for _, line := range strings.Split(block, "\n") {
			data, ok := strings.CutPrefix(line, "data: ")
			if !ok {
				continue
			}
			i := len(r.Frames)
			r.Frames = append(r.Frames, data)
			if data == "[DONE]" {
				r.Done = true
				if r.DoneIndex < 0 {
					r.DoneIndex = i
				}
				continue
			}
			if strings.HasPrefix(data, `{"error":`) {
				var e errEnvelope
				json.Unmarshal([]byte(data), &e)
				r.Errors = append(r.Errors, e)
				if r.ErrorIndex < 0 {
					r.ErrorIndex = i
				}
				continue
			}
			var c struct {
				Choices []struct {
					Delta struct {
						Content *string `json:"content"`
					} `json:"delta"`
					FinishReason *string `json:"finish_reason"`
				} `json:"choices"`
			}
			json.Unmarshal([]byte(data), &c)
			for _, ch := range c.Choices {
				if ch.Delta.Content != nil {
					r.Text += *ch.Delta.Content
				}
				if ch.FinishReason != nil {
					r.Finish = append(r.Finish, *ch.FinishReason)
				}
			}
		}
	}
	return r
}

// checkTerminal asserts the one rule every stream obeys: it ends with
// [DONE] xor exactly one error frame, and that frame (or [DONE]) is last.
func checkTerminal(t testing.TB, r result) {
	t.Helper()
	if msg := terminalProblem(r); msg != "" {
		t.Fatalf("stream breaks the terminal rule: %s (status %d):\n%s", msg, r.Status, r.Body)
	}
}

// waitFor polls cond until it holds or the bound passes.
func waitFor(t testing.TB, bound time.Duration, cond func() bool, msg func() string) {
	t.Helper()
	deadline := time.Now().Add(bound)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatal(msg())
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// words returns n distinct words that join into a text the test can
// compare ("w0 w1 w2 ...").
func words(n int) []string {
	out := make([]string, n)
	for i := range out {
		if i == 0 {
			out[i] = "w0"
		} else {
			out[i] = fmt.Sprintf(" w%d", i)
		}
	}
	return out
}

const (
	chatBody   = `{"model":"m","messages":[{"role":"user","content":"hi"}]}`
	streamBody = `{"model":"m","stream":true,"messages":[{"role":"user","content":"hi"}]}`
)

// fastPolicy keeps configs from waiting on real backoff.
const fastPolicy = `
defaults:
  backoff_base: 1ms
  backoff_max: 2ms
`

// open sends a chat completion request and returns the response unread,
// for a client that reads a stream frame by frame.
func (g *gateway) open(t testing.TB, c *http.Client, ctx context.Context, body string) *http.Response {
	t.Helper()
	req, _ := http.NewRequestWithContext(ctx, http.MethodPost, g.URL+"/v1/chat/completions", strings.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	resp, err := c.Do(req)
	if err != nil {
		t.Fatalf("post: %v", err)
	}
	return resp
}

// frameReader reads an SSE response one frame at a time and keeps every
// byte read, for parseResult at the end.
type frameReader struct {
	resp *http.Response
	br   *bufio.Reader
	raw  bytes.Buffer
}

func newFrameReader(resp *http.Response) *frameReader {
	return &frameReader{resp: resp, br: bufio.NewReader(resp.Body)}
}

// next returns the data of the next frame; io.EOF at the end.
func (f *frameReader) next() (string, error) {
	var data string
	for {
		line, err := f.br.ReadString('\n')
		f.raw.WriteString(line)
		if err != nil {
			if data != "" {
				return data, nil
			}
			return "", err
		}
		line = strings.TrimSuffix(line, "\n")
		if line == "" {
			if data != "" {
				return data, nil
			}
			continue
		}
		if d, ok := strings.CutPrefix(line, "data: "); ok {
			data = d
		}
	}
}

// rest reads to the end and returns the whole response as parsed.
func (f *frameReader) rest() result {
	for {
		if _, err := f.next(); err != nil {
			break
		}
	}
	f.resp.Body.Close()
	return parseResult(f.resp, f.raw.Bytes())
}

// contentOf returns delta.content of a chunk ("" if none).
func contentOf(data string) string {
	var c struct {
		Choices []struct {
			Delta struct {
				Content string `json:"content"`
			} `json:"delta"`
		} `json:"choices"`
	}
	json.Unmarshal([]byte(data), &c)
	if len(c.Choices) == 0 {
		return ""
	}
	return c.Choices[0].Delta.Content
}

// newRequest builds a chat completion request with headers (name, value
// pairs).
func newRequest(base string, body io.Reader, hdr ...string) (*http.Request, error) {
	req, err := http.NewRequest(http.MethodPost, base+"/v1/chat/completions", body)
	if err != nil {
		return nil, err
	}
	req.Header.Set("Content-Type", "application/json")
	for i := 0; i+1 < len(hdr); i += 2 {
		req.Header.Set(hdr[i], hdr[i+1])
	}
	return req, nil
}
