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
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
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

// Claude Code and Claude on Bedrock: the real CLI, once in its own Bedrock
// mode straight at a fake Bedrock runtime, once first-party through the
// gateway to a Bedrock target, and through a route over Anthropic and
// Bedrock with no translate_without that fails over both ways. The fake
// Bedrock speaks the real wire: InvokeModel's JSON, and
// InvokeModelWithResponseStream's event stream (chunk events carrying
// Anthropic's events, with valid CRCs, from the AWS SDK's encoder).

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

// The body the gateway sends Bedrock for a first-party Claude Code turn is
// the body Claude Code itself sends in its Bedrock mode, member for member
// and in the same order, except what legitimately differs:
//   - the path's model id: Claude Code leaves ':' unescaped, the AWS SDK
//     escapes it (%3A); both name the same model;
//   - metadata.user_id: it holds Claude Code's session id, new each run;
//   - in the messages, Claude Code's own list of deferred tools names
//     WebSearch first-party only (Bedrock has no server web search): that is
//     Claude Code's prompt, not something the gateway may rewrite;
//   - for models whose Bedrock requests Claude Code gives output_config,
//     thinking.display and the thinking-token-count beta (Opus 5.5 in
//     2.1.332), the gateway still leaves them out, as the rule and
//     Claude Code's Bedrock mode for the other models do: those members are
//     listed per model and logged, not compared.
//
// Both runs share HOME and the working directory, so the system prompt
// (which names paths and the device) is the same; the gateway route is
// named like the Bedrock model, so the model id Claude Code writes into
// its prompt is the same too.
func TestClaudeCodeBodyToBedrockMatchesClaudeCodesBedrockMode(t *testing.T) {
	bin, version := claudeBinary(t)
	for _, tc := range []struct {
		model   string
		differs []string // members Claude Code's Bedrock mode keeps for this model and the gateway leaves out or filters
	}{
		{claudeBedrockModel, nil},
		{"us.anthropic.claude-opus-5-5", []string{"output_config", "thinking", "anthropic_beta"}},
	} {
		t.Run(tc.model, func(t *testing.T) { compareBodies(t, bin, version, tc.model, tc.differs) })
	}
}

func compareBodies(t *testing.T, bin, version, model string, differs []string) {
	dir, home := t.TempDir(), t.TempDir()
	reply := func(w http.ResponseWriter, _ []byte, stream bool) { claudeReply(w, stream, "PONG-42", "", "") }
	direct := newBedrockFake(t, false, reply)
	viaGateway := newBedrockFake(t, false, reply)
	const prompt = "BODY-CHECK: answer with the pong word only."
	out, err := runClaudeBedrock(t, bin, direct.URL, dir, home, model, prompt)
	if err != nil || !strings.Contains(out, "PONG-42") {
		t.Fatalf("claude in Bedrock mode: %v\n%s", err, out)
	}
	gw, _, _ := bedrockGateway(t, "  br: {kind: bedrock, region: us-east-1, endpoint: \""+viaGateway.URL+"\"}\n",
		"  \""+model+"\": {targets: [{provider: br, model: \""+model+"\"}]}\n")
	out, err = runClaudeHome(t, bin, gw, dir, home, model, prompt)
	if err != nil || !strings.Contains(out, "PONG-42") {
		t.Fatalf("claude through the gateway: %v\n%s", err, out)
	}
	own := turnWith(direct.seen(), "/invoke-with-response-stream", "BODY-CHECK")
	ours := turnWith(viaGateway.seen(), "/invoke-with-response-stream", "BODY-CHECK")
	if own == nil || ours == nil {
		t.Fatalf("no streamed turn: Claude Code's own %v, the gateway's %v (ops %q, %q)", own != nil, ours != nil, direct.ops(), viaGateway.ops())
	}
	if a, _ := url.PathUnescape(own.path); a != strings.ReplaceAll(ours.path, "%3A", ":") {
		t.Errorf("path: Claude Code %s, the gateway %s", own.path, ours.path)
	}
	ownKeys, ownMembers := members(t, own.body)
	ourKeys, ourMembers := members(t, ours.body)
	var compared []string
	for _, k := range ownKeys {
		if slices.Contains(differs, k) {
			t.Logf("%s (not compared): Claude Code %s, the gateway %s", k, clip(ownMembers[k]), clip(ourMembers[k]))
			continue
		}
		compared = append(compared, k)
		a, b := ownMembers[k], ourMembers[k]
		switch k {
		case "metadata":
			a, b = withoutSession(a), withoutSession(b)
		case "messages":
			b = strings.ReplaceAll(b, `\nWebSearch\n`, `\n`)
		}
		if a != b {
			t.Errorf("%s differs:\n Claude Code %s\n the gateway %s", k, clip(a), clip(b))
		}
	}
	var ourCompared []string
	for _, k := range ourKeys {
		if !slices.Contains(differs, k) {
			ourCompared = append(ourCompared, k)
		}
	}
	if !slices.Equal(compared, ourCompared) {
		t.Errorf("members: Claude Code sends %q, the gateway %q", ownKeys, ourKeys)
	}
	t.Logf("Claude Code %s, %s: its Bedrock-mode body and the gateway's agree on %q", version, model, compared)
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

// Claude Code through a route over Anthropic and Bedrock with no
// translate_without: Anthropic down, Bedrock serves through
// InvokeModelWithResponseStream (never Converse), a tool round trip
// included; Bedrock throttled, Anthropic serves with the client's body and
// betas unchanged; a stream Bedrock cuts reaches Claude Code as an error.
func TestClaudeCodeFailsOverBetweenAnthropicAndBedrock(t *testing.T) {
	bin, version := claudeBinary(t)
	dir := t.TempDir()
	notes := filepath.Join(dir, "notes.txt")
	if err := os.WriteFile(notes, []byte("The magic word is XYZZY-7.\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	readInput, _ := json.Marshal(map[string]string{"file_path": notes})
	script := func(w http.ResponseWriter, body []byte, stream bool) {
		s := string(body)
		switch {
		case strings.Contains(s, `"tool_use_id":"toolu_01AgentCheck"`):
			if !strings.Contains(s, "XYZZY-7") {
				claudeReply(w, stream, "The tool result did not contain the file.", "", "")
				return
			}
			claudeReply(w, stream, "The file says XYZZY-7.", "", "")
		case strings.Contains(s, "READ-CHECK"):
			claudeReply(w, stream, "", "Read", string(readInput))
		case strings.Contains(s, "CUT-CHECK") && stream:
			w.Header().Set("Content-Type", "text/event-stream; charset=utf-8")
			io.WriteString(w, "event: message_start\ndata: {\"type\":\"message_start\",\"message\":{\"id\":\"msg_cut\",\"type\":\"message\",\"role\":\"assistant\",\"model\":\"claude-sonnet-4-5\",\"content\":[],\"stop_reason\":null,\"stop_sequence\":null,\"usage\":{\"input_tokens\":9,\"output_tokens\":1}}}\n\n"+
				"event: content_block_start\ndata: {\"type\":\"content_block_start\",\"index\":0,\"content_block\":{\"type\":\"text\",\"text\":\"\"}}\n\n"+
				"event: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"index\":0,\"delta\":{\"type\":\"text_delta\",\"text\":\"FRAGMENT-ONLY \"}}\n\n")
		case strings.Contains(s, "CUT-CHECK"):
			claudeReply(w, stream, "COMPLETE-ANSWER-9", "", "")
		case strings.Contains(s, "PING-CHECK"):
			claudeReply(w, stream, "PONG-42", "", "")
		default: // Claude Code's own side requests
			claudeReply(w, stream, "ok", "", "")
		}
	}
	liveBedrock := newBedrockFake(t, false, script)
	throttled := newBedrockFake(t, true, script)
	liveAnthropic := newClaudeUpstream(t, script)
	deadAnthropic := newClaudeUpstream(t, func(w http.ResponseWriter, _ []byte, _ bool) {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(529)
		io.WriteString(w, `{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}`)
	})
	gw, records, received := bedrockGateway(t,
		"  anthropic-down: {kind: anthropic, base_url: \""+deadAnthropic.URL+"\", keys: [{env: LLMGW_AGENT_UPSTREAM_KEY}]}\n"+
			"  anthropic: {kind: anthropic, base_url: \""+liveAnthropic.URL+"\", keys: [{env: LLMGW_AGENT_UPSTREAM_KEY}]}\n"+
			"  bedrock: {kind: bedrock, region: us-east-1, endpoint: \""+liveBedrock.URL+"\"}\n"+
			"  bedrock-throttled: {kind: bedrock, region: us-east-1, endpoint: \""+throttled.URL+"\"}\n",
		"  cc-anthropic-down: {targets: [{provider: anthropic-down, model: claude-sonnet-4-5}, {provider: bedrock, model: \""+claudeBedrockModel+"\"}]}\n"+
			"  cc-bedrock-throttled: {targets: [{provider: bedrock-throttled, model: \""+claudeBedrockModel+"\"}, {provider: anthropic, model: claude-sonnet-4-5}]}\n")
	t.Logf("Claude Code %s against %s", version, gw)
	noConverse := func(t *testing.T) {
		for _, op := range liveBedrock.ops() {
			if strings.HasPrefix(op, "converse") {
				t.Errorf("a Messages request reached Converse: %q", liveBedrock.ops())
			}
		}
	}

	t.Run("anthropic down, bedrock serves", func(t *testing.T) {
		out, err := runClaude(t, bin, gw, dir, "cc-anthropic-down", "PING-CHECK: answer with the pong word only.")
		if err != nil || !strings.Contains(out, "PONG-42") {
			t.Fatalf("claude: %v\n%s", err, out)
		}
		if turnWith(liveBedrock.seen(), "/invoke-with-response-stream", "PING-CHECK") == nil || len(deadAnthropic.seen()) == 0 {
			t.Errorf("bedrock calls %q, anthropic-down calls %d", liveBedrock.ops(), len(deadAnthropic.seen()))
		}
		noConverse(t)
		served := false
		for _, r := range records() {
			served = served || (r.Route == "cc-anthropic-down" && r.FallbackDepth == 1 && r.Outcome == "ok" && strings.Contains(strings.Join(r.DroppedFeatures, ","), "context_management"))
		}
		if !served {
			t.Errorf("no record of a request served by bedrock naming what it dropped: %+v", records())
		}
	})
	t.Run("tool round trip on bedrock", func(t *testing.T) {
		out, err := runClaude(t, bin, gw, dir, "cc-anthropic-down", "READ-CHECK: read notes.txt and tell me the magic word.", "--allowedTools", "Read")
		if err != nil || !strings.Contains(out, "The file says XYZZY-7.") {
			t.Fatalf("claude: %v\n%s", err, out)
		}
		if turnWith(liveBedrock.seen(), "/invoke-with-response-stream", `"tool_use_id":"toolu_01AgentCheck"`) == nil {
			t.Errorf("the tool result never reached bedrock: %q", liveBedrock.ops())
		}
		noConverse(t)
	})
	t.Run("bedrock throttled, anthropic serves unchanged", func(t *testing.T) {
		out, err := runClaude(t, bin, gw, dir, "cc-bedrock-throttled", "PING-CHECK: answer with the pong word only.")
		if err != nil || !strings.Contains(out, "PONG-42") {
			t.Fatalf("claude: %v\n%s", err, out)
		}
		if turnWith(throttled.seen(), "/invoke-with-response-stream", "PING-CHECK") == nil {
			t.Errorf("the throttled bedrock was never tried: %q", throttled.ops())
		}
		client := turnWith(received(), "/v1/messages", "PING-CHECK")
		upstream := turnWith(liveAnthropic.seen(), "/v1/messages", "PING-CHECK")
		if client == nil || upstream == nil {
			t.Fatalf("client turn %v, anthropic turn %v", client != nil, upstream != nil)
		}
		want := bytes.Replace(client.body, []byte(`"model":"cc-bedrock-throttled"`), []byte(`"model":"claude-sonnet-4-5"`), 1)
		if !bytes.Equal(upstream.body, want) {
			t.Errorf("anthropic got another body than Claude Code sent (model aside):\n%s\n%s", clip(string(upstream.body)), clip(string(want)))
		}
		if a, b := upstream.header.Get("anthropic-beta"), client.header.Get("anthropic-beta"); a != b || !strings.Contains(a, "advanced-tool-use") {
			t.Errorf("anthropic-beta: anthropic got %q, Claude Code sent %q", a, b)
		}
	})
	t.Run("bedrock cuts the stream", func(t *testing.T) {
		out, err := runClaude(t, bin, gw, dir, "cc-anthropic-down", "CUT-CHECK: answer.")
		if strings.Contains(out, "FRAGMENT-ONLY") && !strings.Contains(out, "COMPLETE-ANSWER-9") {
			t.Fatalf("Claude Code printed the fragment of a cut stream as its answer (exit %v):\n%s", err, out)
		}
		if err != nil || !strings.Contains(out, "COMPLETE-ANSWER-9") {
			t.Errorf("claude after a cut: %v\n%s", err, out)
		}
		interrupted := false
		for _, r := range records() {
			interrupted = interrupted || (r.Route == "cc-anthropic-down" && r.Outcome == "interrupted")
		}
		if !interrupted {
			t.Errorf("no interrupted record: the cut did not reach the client as an error")
		}
		if turnWith(liveBedrock.seen(), "/invoke", "CUT-CHECK") == nil {
			t.Errorf("Claude Code did not re-send without streaming after the error: %q", liveBedrock.ops())
		}
		noConverse(t)
	})
}
