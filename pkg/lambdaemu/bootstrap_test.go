package lambdaemu_test

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/llmgw/llmgw/pkg/exchange"
	"github.com/llmgw/llmgw/pkg/internal/testkit"

	"github.com/llmgw/llmgw/pkg/deployment"
	"github.com/llmgw/llmgw/pkg/lambdaemu"
	"github.com/llmgw/llmgw/pkg/ssmconfig/ssmtest"
	"github.com/llmgw/llmgw/pkg/store"
	"github.com/llmgw/llmgw/pkg/store/dynamo"
	"github.com/llmgw/llmgw/pkg/store/storetest"
	"github.com/llmgw/llmgw/pkg/usage"
)

var bootstrap string

// TestMain builds the real Lambda binary once, exactly as the deploy
// script does but for the host's architecture.
func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "llmgw-bootstrap")
	if err != nil {
		panic(err)
	}
	bootstrap = filepath.Join(dir, "bootstrap")
	root := repoRoot()
	cmd := exec.Command("go", "build", "-tags", "lambda.norpc", "-trimpath", "-o", bootstrap, "./functions/gateway")
	cmd.Dir = root
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
	if out, err := cmd.CombinedOutput(); err != nil {
		fmt.Fprintf(os.Stderr, "building bootstrap: %v\n%s", err, out)
		os.Exit(1)
	}
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

func repoRoot() string {
	dir, _ := os.Getwd()
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return dir
		}
		dir = filepath.Dir(dir)
	}
}

// lockedBuffer is a goroutine-safe buffer (log sinks, process output).
type lockedBuffer = testkit.SyncBuffer

type function struct {
	rt             *lambdaemu.Runtime
	stdout, stderr *lockedBuffer
	cmd            *exec.Cmd
	done           chan struct{} // closed when the process has exited
	exitErr        error         // set before done is closed
}

// stop kills the function's process (one instance going away).
func (f *function) stop() {
	f.cmd.Process.Kill()
	<-f.done
}

// start runs the bootstrap binary against a fresh emulated Runtime API.
func start(t *testing.T, env ...string) *function {
	t.Helper()
	rt, err := lambdaemu.Start()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { rt.Close() })
	f := &function{rt: rt, stdout: &lockedBuffer{}, stderr: &lockedBuffer{}, done: make(chan struct{})}
	cmd := exec.Command(bootstrap)
	f.cmd = cmd
	cmd.Env = append([]string{"AWS_LAMBDA_RUNTIME_API=" + rt.Addr(), "PATH=" + os.Getenv("PATH"), deployment.EnvStage + "=test",
		"AWS_LAMBDA_FUNCTION_NAME=llmgw-test-gateway", "AWS_REGION=us-east-1"}, env...)
	cmd.Stdout, cmd.Stderr = f.stdout, f.stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() { f.exitErr = cmd.Wait(); close(f.done) }()
	t.Cleanup(f.stop)
	return f
}

// teamsYAML admits the team key the sample events carry
// ("llmgw_example_team_key_not_real"): on Lambda every caller needs a key.
const teamsYAML = `
teams:
  checkout:
    keys: [{id: example, sha256: %s}]
`

func writeConfig(t *testing.T, yaml string) string {
	p := filepath.Join(t.TempDir(), "config.yaml")
	os.WriteFile(p, []byte(yaml+fmt.Sprintf(teamsYAML, exampleKeyHash)), 0o600)
	return p
}

const exampleKeyHash = "f3542a6855d7414ac13345c6e1e6766312f17642aa8332ade985f9765704ea07"

func event(t *testing.T, name string) []byte {
	b, err := os.ReadFile(filepath.Join(repoRoot(), "events", name))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func invoke(t *testing.T, f *function, ev []byte, budget time.Duration) *lambdaemu.Response {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	go func() { // a process that died answers nothing: fail at once
		select {
		case <-f.done:
			cancel()
		case <-ctx.Done():
		}
	}()
	resp, err := f.rt.Invoke(ctx, ev, time.Now().Add(budget))
	if err != nil {
		t.Fatalf("invoke: %v\nstderr: %s", err, f.stderr.String())
	}
	if resp.Err != nil {
		t.Fatalf("function error: %v\nstderr: %s", resp.Err, f.stderr.String())
	}
	return resp
}

const chunk = `{"id":"chatcmpl-1","object":"chat.completion.chunk","created":1,"model":"gpt-4.1","choices":[{"index":0,"delta":{"content":%q},"logprobs":null,"finish_reason":null}],"usage":null}`

func TestStreamArrivesIncrementallyThroughTheRealBinary(t *testing.T) {
	release := make(chan struct{})
	var once sync.Once
	unblock := func() { once.Do(func() { close(release) }) }
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		fmt.Fprintf(w, "data: "+chunk+"\n\n", "Hello")
		w.(http.Flusher).Flush()
		<-release // the rest only after the client has seen the first chunk
		fmt.Fprintf(w, "data: "+chunk+"\n\n", " world")
		io.WriteString(w, `data: {"id":"chatcmpl-1","object":"chat.completion.chunk","created":1,"model":"gpt-4.1","choices":[{"index":0,"delta":{},"logprobs":null,"finish_reason":"stop"}],"usage":null}`+"\n\n")
		io.WriteString(w, `data: {"id":"chatcmpl-1","object":"chat.completion.chunk","created":1,"model":"gpt-4.1","choices":[],"usage":{"prompt_tokens":9,"completion_tokens":2,"total_tokens":11}}`+"\n\n")
		io.WriteString(w, "data: [DONE]\n\n")
	}))
	defer up.Close()
	defer unblock() // runs before up.Close, even when the test fails early
	down := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.WriteHeader(503)
		io.WriteString(w, `{"error":{"message":"down","type":"server_error"}}`)
	}))
	defer down.Close()
	cfg := writeConfig(t, fmt.Sprintf(`
defaults: {backoff_base: 1ms, backoff_max: 2ms}
providers:
  down: {kind: openai, base_url: "%s/v1"}
  up:   {kind: openai, base_url: "%s/v1"}
routes:
  demo: {targets: [{provider: down, model: a}, {provider: up, model: b}]}
`, down.URL, up.URL))
	f := start(t, deployment.EnvConfigFile+"="+cfg)
	resp := invoke(t, f, event(t, "function-url-chat-stream.json"), time.Minute)
	if resp.Status != 200 || resp.Headers.Get("x-gateway-provider") != "up" || resp.Headers.Get("x-gateway-fallback-depth") != "1" {
		t.Fatalf("prelude: %d %v", resp.Status, resp.Headers)
	}
	if !strings.HasPrefix(resp.Headers.Get("Content-Type"), "text/event-stream") {
		t.Errorf("content type %q", resp.Headers.Get("Content-Type"))
	}
	br := bufio.NewReader(resp.Body)
	first, err := br.ReadString('\n')
	if err != nil || !strings.Contains(first, "Hello") {
		t.Fatalf("first line %q, %v", first, err)
	}
	unblock() // the upstream was still generating when the first chunk arrived
	rest, _ := io.ReadAll(br)
	if !strings.Contains(string(rest), " world") || !strings.HasSuffix(string(rest), "data: [DONE]\n\n") {
		t.Fatalf("rest of stream: %s", rest)
	}
	if !strings.Contains(string(rest), `"prompt_tokens":9`) {
		t.Errorf("usage chunk asked for by the event did not arrive: %s", rest)
	}
	// Metrics (EMF) on stdout; the request log line on stderr, with the Function URL's source IP.
	waitFor(t, func() bool { return strings.Contains(f.stdout.String(), `"CloudWatchMetrics"`) }, "no EMF line: "+f.stdout.String())
	waitFor(t, func() bool { return strings.Contains(f.stderr.String(), `"client_ip":"203.0.113.7"`) }, "no request log line with the client IP: "+f.stderr.String())
	if !strings.Contains(f.stdout.String(), `"Fallbacks":1`) {
		t.Errorf("EMF line: %s", f.stdout.String())
	}
}

func TestMidStreamErrorAndDeadlineThroughTheRealBinary(t *testing.T) {
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		for i := 0; ; i++ {
			fmt.Fprintf(w, "data: "+chunk+"\n\n", fmt.Sprint(" tick", i))
			w.(http.Flusher).Flush()
			if strings.Contains(r.URL.Path, "cut") && i == 2 {
				conn, _, _ := http.NewResponseController(w).Hijack()
				conn.Close()
				return
			}
			select {
			case <-r.Context().Done():
				return
			case <-time.After(100 * time.Millisecond):
			}
		}
	}))
	defer up.Close()
	cfg := writeConfig(t, fmt.Sprintf(`
server: {deadline_margin: 1s}
providers:
  slow: {kind: openai, base_url: "%s/v1"}
  cut:  {kind: openai, base_url: "%s/cut"}
routes:
  demo: {targets: [{provider: slow, model: a}]}
  cutroute: {targets: [{provider: cut, model: a}]}
`, up.URL, up.URL))
	// Shared state and usage go to a DynamoDB-compatible server, as on AWS.
	endpoint := storetest.StartDynalite(t)
	table := storetest.UniqueTableName(t)
	st := dynamo.New(storetest.DynaliteClient(endpoint), table)
	if err := st.EnsureTable(context.Background()); err != nil {
		t.Fatal(err)
	}
	f := start(t, deployment.EnvConfigFile+"="+cfg, deployment.EnvTable+"="+table, "AWS_ENDPOINT_URL_DYNAMODB="+endpoint,
		"AWS_ACCESS_KEY_ID=AKIDTEST", "AWS_SECRET_ACCESS_KEY=secret")

	t.Run("deadline", func(t *testing.T) {
		resp := invoke(t, f, event(t, "function-url-chat-stream.json"), 3*time.Second)
		body, _ := io.ReadAll(resp.Body)
		s := string(body)
		if strings.Contains(s, "[DONE]") || !strings.Contains(s, `"category":"timeout"`) || !strings.Contains(s, "tick") {
			t.Fatalf("stream near the deadline did not end with a timeout event: %s", s)
		}
		// No wall-clock assertion (CI machines are noisy): the timeout event
		// itself proves the gateway ended the stream on its own, before the
		// platform's cut, which would have left no event at all.
		waitFor(t, func() bool { return strings.Contains(f.stdout.String(), `"Errors5xx"`) }, "no usage metrics written for the timed-out stream")
		// The usage record was written before the invocation ended.
		var recs []exchange.Record
		st.Query(context.Background(), store.UsagePK("checkout", time.Now()), "", "", func(it store.Item) bool {
			var r exchange.Record
			if usage.DecodeRecord(it, &r) == nil {
				recs = append(recs, r)
			}
			return true
		})
		if len(recs) != 1 || recs[0].Outcome != "timeout" || recs[0].OutputTokens == 0 || recs[0].Tag != "checkout-assistant" {
			t.Fatalf("usage records in DynamoDB = %+v", recs)
		}
	})
	t.Run("mid-stream cut", func(t *testing.T) {
		var ev map[string]any
		json.Unmarshal(event(t, "function-url-chat-stream.json"), &ev)
		ev["body"] = strings.Replace(ev["body"].(string), `"model":"demo"`, `"model":"cutroute"`, 1)
		b, _ := json.Marshal(ev)
		resp := invoke(t, f, b, time.Minute)
		body, _ := io.ReadAll(resp.Body)
		s := string(body)
		if strings.Contains(s, "[DONE]") || !strings.Contains(s, `"category":"interrupted"`) {
			t.Fatalf("cut stream: %s", s)
		}
	})
}

func TestSampleEventsGetTheRightAnswers(t *testing.T) {
	cfg := writeConfig(t, `
providers:
  steady: {kind: fake, fake: {reply: "Hello from a fake model."}}
routes:
  demo: {targets: [{provider: steady, model: fake-1}]}
`)
	f := start(t, deployment.EnvConfigFile+"="+cfg)
	cases := []struct {
		file     string
		status   int
		contains string
	}{
		{"function-url-chat.json", 200, `"chat.completion"`},
		{"function-url-chat-stream.json", 200, "data: [DONE]"},
		{"function-url-bad-json.json", 400, `"invalid_request"`},
		{"function-url-unknown-route.json", 404, `"model_not_found"`},
	}
	t.Run("no team key", func(t *testing.T) {
		var ev map[string]any
		json.Unmarshal(event(t, "function-url-chat.json"), &ev)
		delete(ev["headers"].(map[string]any), "authorization")
		b, _ := json.Marshal(ev)
		resp := invoke(t, f, b, time.Minute)
		body, _ := io.ReadAll(resp.Body)
		if resp.Status != 401 || !strings.Contains(string(body), `"authentication"`) {
			t.Errorf("status %d body %s", resp.Status, body)
		}
	})
	for _, tc := range cases {
		t.Run(tc.file, func(t *testing.T) {
			resp := invoke(t, f, event(t, tc.file), time.Minute)
			body, _ := io.ReadAll(resp.Body)
			if resp.Status != tc.status || !strings.Contains(string(body), tc.contains) {
				t.Errorf("status %d body %s", resp.Status, body)
			}
			if resp.Headers.Get("x-gateway-tag") != "checkout-assistant" && resp.Status == 200 {
				t.Errorf("tag not echoed: %v", resp.Headers)
			}
		})
	}
}

func TestConfigFromSSMThroughTheRealBinary(t *testing.T) {
	srv := ssmtest.New()
	defer srv.Close()
	srv.Put("/llmgw/test/config/00-base", "String", `
providers:
  steady: {kind: fake, fake: {reply: "from ssm"}}
routes:
  demo: {targets: [{provider: steady, model: fake-1}]}
`)
	srv.Put("/llmgw/test/config/50-teams", "String", fmt.Sprintf(teamsYAML, exampleKeyHash))
	f := start(t, deployment.EnvConfigPath+"="+deployment.ConfigPath("test"), deployment.EnvConfigRefresh+"=1s", "AWS_ENDPOINT_URL_SSM="+srv.URL,
		"AWS_ACCESS_KEY_ID=AKIDTEST", "AWS_SECRET_ACCESS_KEY=secret")
	resp := invoke(t, f, event(t, "function-url-chat.json"), time.Minute)
	body, _ := io.ReadAll(resp.Body)
	if resp.Status != 200 || !strings.Contains(string(body), "from ssm") {
		t.Fatalf("status %d: %s", resp.Status, body)
	}
	// An operator edit: pull the route's provider for another. It applies
	// within one refresh period, without a deploy.
	srv.Put("/llmgw/test/config/50-incident", "String", `
providers:
  backup: {kind: fake, fake: {reply: "from backup"}}
routes:
  demo: {targets: [{provider: backup, model: fake-1}]}
`)
	waitFor(t, func() bool {
		time.Sleep(200 * time.Millisecond)
		resp := invoke(t, f, event(t, "function-url-chat.json"), time.Minute)
		body, _ := io.ReadAll(resp.Body)
		return strings.Contains(string(body), "from backup")
	}, "SSM edit never took effect")
}

func waitFor(t *testing.T, cond func() bool, msg string) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatal(msg)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// TestTraceIDThroughTheRealBinary: on Lambda the trace id is the Function
// URL request's X-Amzn-Trace-Id, else the invocation's X-Ray trace
// (Lambda-Runtime-Trace-Id), returned in x-gateway-trace-id and written on
// the request log line.
func TestTraceIDThroughTheRealBinary(t *testing.T) {
	cfg := writeConfig(t, `
providers:
  steady: {kind: fake, fake: {reply: "Hello."}}
routes:
  demo: {targets: [{provider: steady, model: fake-1}]}
`)
	f := start(t, deployment.EnvConfigFile+"="+cfg)
	f.rt.TraceID = "Root=1-5759e988-bd862e3fe1be46a994272793;Parent=53995c3f42cd8ad8;Sampled=1"
	resp := invoke(t, f, event(t, "function-url-chat.json"), time.Minute)
	io.ReadAll(resp.Body)
	if got := resp.Headers.Get("x-gateway-trace-id"); got != "6745a2c10f3a8c2d4e5b6a7c8d9e0f1a" {
		t.Errorf("with the request's X-Amzn-Trace-Id: trace id %q", got)
	}
	var ev map[string]any
	json.Unmarshal(event(t, "function-url-chat.json"), &ev)
	delete(ev["headers"].(map[string]any), "x-amzn-trace-id")
	b, _ := json.Marshal(ev)
	resp = invoke(t, f, b, time.Minute)
	io.ReadAll(resp.Body)
	if got := resp.Headers.Get("x-gateway-trace-id"); got != "5759e988bd862e3fe1be46a994272793" {
		t.Errorf("with the invocation's X-Ray trace only: trace id %q", got)
	}
	for deadline := time.Now().Add(5 * time.Second); time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
		if strings.Contains(f.stderr.String()+f.stdout.String(), `"trace_id":"5759e988bd862e3fe1be46a994272793"`) {
			return
		}
	}
	t.Errorf("no log line with the trace id:\n%s%s", f.stdout.String(), f.stderr.String())
}
