package agents

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws/protocol/eventstream"

	"github.com/llmgw/llmgw/pkg/config"
	"github.com/llmgw/llmgw/pkg/exchange"
	"github.com/llmgw/llmgw/pkg/server"
	"github.com/llmgw/llmgw/pkg/teams"
)

// The fake Bedrock runtime and the Claude Code runners of
// claude_bedrock_test.go.

// claudeBedrockModel is the Bedrock model id Claude Code is run with (a
// cross-region inference profile) and the gateway's route of that name.
const claudeBedrockModel = "us.anthropic.claude-sonnet-4-5-20250929-v1:0"

// bedrockFake is a fake Bedrock runtime that answers Claude Code's
// requests with a script and records them.
type bedrockFake struct {
	*httptest.Server
	mu   sync.Mutex
	reqs []claudeSeen
}

func (f *bedrockFake) seen() []claudeSeen {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]claudeSeen(nil), f.reqs...)
}

// paths are the operations the fake was called with (the path's last
// element: invoke, invoke-with-response-stream, converse, ...).
func (f *bedrockFake) ops() []string {
	var out []string
	for _, r := range f.seen() {
		out = append(out, r.path[strings.LastIndexByte(r.path, '/')+1:])
	}
	return out
}

// newBedrockFake answers every InvokeModel(WithResponseStream) call with
// answer(w, body, stream), writing the Anthropic answer as claudeReply
// does; the fake turns it into Bedrock's wire form. throttled answers
// every call with a ThrottlingException instead.
func newBedrockFake(t *testing.T, throttled bool, answer func(w http.ResponseWriter, body []byte, stream bool)) *bedrockFake {
	f := &bedrockFake{}
	f.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		f.mu.Lock()
		f.reqs = append(f.reqs, claudeSeen{r.URL.EscapedPath(), r.Header.Clone(), body})
		f.mu.Unlock()
		w.Header().Set("x-amzn-RequestId", "5b0c1d2e-fake-bedrock-request")
		path := r.URL.Path
		switch {
		case r.Method == http.MethodGet: // Claude Code lists the inference profiles
			w.Header().Set("Content-Type", "application/json")
			io.WriteString(w, `{"inferenceProfileSummaries":[]}`)
		case throttled:
			w.Header().Set("Content-Type", "application/json")
			w.Header().Set("X-Amzn-ErrorType", "ThrottlingException:http://internal.amazon.com/coral/com.amazon.bedrock/")
			w.WriteHeader(http.StatusTooManyRequests)
			io.WriteString(w, `{"message":"Too many requests, please wait before trying again."}`)
		case strings.HasSuffix(path, "/count-tokens"):
			w.Header().Set("Content-Type", "application/json")
			io.WriteString(w, `{"inputTokens":100}`)
		case strings.HasSuffix(path, "/invoke"):
			answer(w, body, false)
		case strings.HasSuffix(path, "/invoke-with-response-stream"):
			rec := httptest.NewRecorder()
			answer(rec, body, true)
			writeChunks(w, rec.Body.String())
		default: // Converse must never be reached for Messages
			w.Header().Set("Content-Type", "application/json")
			w.Header().Set("X-Amzn-ErrorType", "ValidationException")
			w.WriteHeader(http.StatusBadRequest)
			io.WriteString(w, `{"message":"this fake serves InvokeModel only"}`)
		}
	}))
	t.Cleanup(f.Close)
	return f
}

// writeChunks sends an Anthropic SSE stream as InvokeModelWithResponseStream
// does: one chunk event per data line ({"bytes": base64 of the event}),
// the last one carrying Bedrock's invocation metrics.
func writeChunks(w http.ResponseWriter, sse string) {
	w.Header().Set("Content-Type", "application/vnd.amazon.eventstream")
	w.WriteHeader(http.StatusOK)
	var datas []string
	for _, line := range strings.Split(sse, "\n") {
		if d, ok := strings.CutPrefix(line, "data: "); ok {
			datas = append(datas, d)
		}
	}
	enc := eventstream.NewEncoder()
	for i, d := range datas {
		if i == len(datas)-1 && strings.Contains(d, `"message_stop"`) {
			d = strings.TrimSuffix(d, "}") + `,"amazon-bedrock-invocationMetrics":{"inputTokenCount":120,"outputTokenCount":12,"invocationLatency":640,"firstByteLatency":210}}`
		}
		var m eventstream.Message
		m.Headers.Set(":message-type", eventstream.StringValue("event"))
		m.Headers.Set(":event-type", eventstream.StringValue("chunk"))
		m.Headers.Set(":content-type", eventstream.StringValue("application/json"))
		m.Payload = []byte(`{"bytes":"` + base64.StdEncoding.EncodeToString([]byte(d)) + `"}`)
		if enc.Encode(w, m) != nil {
			return
		}
		w.(http.Flusher).Flush()
	}
}

// runClaudeBedrock runs `claude -p prompt --model model` in its own Bedrock
// mode against the fake Bedrock at bedrockURL, with a Bedrock API key, in
// dir with home as HOME.
func runClaudeBedrock(t *testing.T, bin, bedrockURL, dir, home, model, prompt string) (string, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, "-p", prompt, "--model", model)
	cmd.Dir = dir
	cmd.Env = []string{"PATH=" + os.Getenv("PATH"), "HOME=" + home, "TERM=dumb", "NO_COLOR=1",
		"CLAUDE_CODE_USE_BEDROCK=1", "ANTHROPIC_BEDROCK_BASE_URL=" + bedrockURL, "AWS_BEARER_TOKEN_BEDROCK=bedrock-api-key-fake",
		"AWS_REGION=us-east-1", "ANTHROPIC_SMALL_FAST_MODEL=" + model, "ANTHROPIC_DEFAULT_HAIKU_MODEL=" + model,
		"CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC=1", "DISABLE_AUTOUPDATER=1", "DISABLE_TELEMETRY=1",
		"DISABLE_ERROR_REPORTING=1", "CLAUDE_CODE_MAX_RETRIES=0"}
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	if stderr.Len() > 0 {
		t.Logf("claude stderr:\n%s", stderr.String())
	}
	return stdout.String(), err
}

// runClaudeHome is runClaude with a given HOME (so two runs share Claude
// Code's device id and paths).
func runClaudeHome(t *testing.T, bin, gatewayURL, dir, home, route, prompt string, extra ...string) (string, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, append([]string{"-p", prompt, "--model", route}, extra...)...)
	cmd.Dir = dir
	cmd.Env = []string{"PATH=" + os.Getenv("PATH"), "HOME=" + home, "TERM=dumb", "NO_COLOR=1",
		"ANTHROPIC_BASE_URL=" + gatewayURL, "ANTHROPIC_AUTH_TOKEN=" + claudeTeamKey,
		"ANTHROPIC_SMALL_FAST_MODEL=" + route, "ANTHROPIC_DEFAULT_HAIKU_MODEL=" + route,
		"CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC=1", "DISABLE_AUTOUPDATER=1", "DISABLE_TELEMETRY=1",
		"DISABLE_ERROR_REPORTING=1", "CLAUDE_CODE_MAX_RETRIES=0"}
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	if stderr.Len() > 0 {
		t.Logf("claude stderr:\n%s", stderr.String())
	}
	return stdout.String(), err
}

// bedrockGateway is claudeGateway with AWS credentials for the bedrock
// providers' signing, and a record of what the gateway itself received.
func bedrockGateway(t *testing.T, providers, routes string) (string, func() []exchange.Record, func() []claudeSeen) {
	t.Helper()
	for k, v := range map[string]string{"AWS_ACCESS_KEY_ID": "AKIDAGENTCHECK", "AWS_SECRET_ACCESS_KEY": "agent-check-secret",
		"AWS_SESSION_TOKEN": "", "AWS_PROFILE": "", "AWS_CONFIG_FILE": "/nonexistent", "AWS_SHARED_CREDENTIALS_FILE": "/nonexistent",
		"AWS_EC2_METADATA_DISABLED": "true", "AWS_BEARER_TOKEN_BEDROCK": "", "AWS_ENDPOINT_URL": "", "AWS_ENDPOINT_URL_BEDROCK_RUNTIME": ""} {
		t.Setenv(k, v)
	}
	t.Setenv("LLMGW_AGENT_UPSTREAM_KEY", "sk-ant-api03-agent-upstream-key")
	yaml := "defaults: {attempts: 1, backoff_base: 1ms, backoff_max: 2ms}\nproviders:\n" + providers + "routes:\n" + routes +
		"teams:\n  agents:\n    keys: [{id: claude, sha256: \"" + teams.HashKey(claudeTeamKey) + "\"}]\n"
	cfg, err := config.Parse([]byte(yaml))
	if err != nil {
		t.Fatalf("config: %v\n%s", err, yaml)
	}
	log := slog.New(slog.NewJSONHandler(io.Discard, nil))
	var mu sync.Mutex
	var recs []exchange.Record
	var in []claudeSeen
	h, err := server.New(context.Background(), cfg, server.Options{
		Logger: log,
		Front:  server.Front{Authenticate: teams.NewAuthenticator(func() *config.Config { return cfg }, log).Authenticate},
		Reporting: server.Reporting{
			Record: func(_ context.Context, r *exchange.Record) { mu.Lock(); recs = append(recs, *r); mu.Unlock() },
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		mu.Lock()
		in = append(in, claudeSeen{r.URL.Path, r.Header.Clone(), body})
		mu.Unlock()
		r.Body = io.NopCloser(bytes.NewReader(body))
		h.ServeHTTP(w, r)
	}))
	t.Cleanup(srv.Close)
	return srv.URL, func() []exchange.Record { mu.Lock(); defer mu.Unlock(); return append([]exchange.Record(nil), recs...) },
		func() []claudeSeen { mu.Lock(); defer mu.Unlock(); return append([]claudeSeen(nil), in...) }
}

// turnWith returns the last recorded request whose body holds marker and
// that went to op (a path suffix), nil if none did.
func turnWith(reqs []claudeSeen, op, marker string) *claudeSeen {
	for i := len(reqs) - 1; i >= 0; i-- {
		if strings.HasSuffix(reqs[i].path, op) && bytes.Contains(reqs[i].body, []byte(marker)) {
			return &reqs[i]
		}
	}
	return nil
}

// members returns a JSON object's top-level keys in order and their raw
// values.
func members(t *testing.T, body []byte) ([]string, map[string]string) {
	t.Helper()
	dec := json.NewDecoder(bytes.NewReader(body))
	if tok, err := dec.Token(); err != nil || tok != json.Delim('{') {
		t.Fatalf("not an object: %s", clip(string(body)))
	}
	var keys []string
	vals := map[string]string{}
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			t.Fatal(err)
		}
		var raw json.RawMessage
		if err := dec.Decode(&raw); err != nil {
			t.Fatal(err)
		}
		k := tok.(string)
		keys = append(keys, k)
		vals[k] = string(raw)
	}
	return keys, vals
}

// withoutSession blanks the session id inside metadata.user_id.
func withoutSession(metadata string) string {
	var m struct {
		UserID string `json:"user_id"`
	}
	if json.Unmarshal([]byte(metadata), &m) != nil {
		return metadata
	}
	var u map[string]any
	if json.Unmarshal([]byte(m.UserID), &u) != nil {
		return metadata
	}
	delete(u, "session_id")
	b, _ := json.Marshal(u)
	return string(b)
}

func clip(s string) string {
	if len(s) > 400 {
		return s[:400] + "..."
	}
	return s
}
