// Package agents runs real coding agents, as a user would, against the
// gateway and fake upstreams on loopback. The checks are slow and need npm,
// so they run only when LLMGW_AGENT_TESTS=1 (see claude.sh); otherwise
// they skip, saying why.
package agents

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/llmgw/llmgw/pkg/config"
	"github.com/llmgw/llmgw/pkg/exchange"
	"github.com/llmgw/llmgw/pkg/server"
	"github.com/llmgw/llmgw/pkg/teams"
)

// claudeCodeVersion is the Claude Code release checked (npm
// @anthropic-ai/claude-code); CLAUDE_CODE_VERSION overrides it.
const claudeCodeVersion = "2.1.332"

const claudeTeamKey = "llmgw_claude-code-agent-check-0123456789abcdef"

// claudeBinary returns the claude executable: CLAUDE_BIN, else an npm
// install of the pinned version in a cache directory. It skips the test
// with the reason when npm cannot install it.
func claudeBinary(t *testing.T) (string, string) {
	t.Helper()
	if os.Getenv("LLMGW_AGENT_TESTS") != "1" {
		t.Skip("set LLMGW_AGENT_TESTS=1 (or run scripts/agents/claude.sh) to run Claude Code against the gateway")
	}
	version := claudeCodeVersion
	if v := os.Getenv("CLAUDE_CODE_VERSION"); v != "" {
		version = v
	}
	if bin := os.Getenv("CLAUDE_BIN"); bin != "" {
		return bin, version
	}
	cache := os.Getenv("LLMGW_AGENT_CACHE")
	if cache == "" {
		if dir, err := os.UserCacheDir(); err == nil {
			cache = filepath.Join(dir, "llmgw-agents")
		} else {
			cache = t.TempDir() // no cache dir: install for this run only, never at a shared temp path
		}
	}
	prefix := filepath.Join(cache, "claude-code-"+version)
	bin := filepath.Join(prefix, "node_modules", ".bin", "claude")
	if _, err := os.Stat(bin); err != nil {
		if _, err := exec.LookPath("npm"); err != nil {
			t.Skipf("npm is not installed, so Claude Code cannot be installed: %v", err)
		}
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
		defer cancel()
		out, err := exec.CommandContext(ctx, "npm", "install", "--no-audit", "--no-fund", "--loglevel=error",
			"--prefix", prefix, "@anthropic-ai/claude-code@"+version).CombinedOutput()
		if err != nil {
			t.Skipf("npm could not install @anthropic-ai/claude-code@%s: %v\n%s", version, err, out)
		}
	}
	out, err := exec.Command(bin, "--version").CombinedOutput()
	if err != nil {
		t.Skipf("the installed Claude Code does not run (%s --version): %v\n%s", bin, err, out)
	}
	t.Logf("Claude Code %s", strings.TrimSpace(string(out)))
	return bin, version
}

// claudeUpstream is a fake Anthropic API that answers Claude Code's
// requests with a script and records them.
type claudeUpstream struct {
	*httptest.Server
	mu   sync.Mutex
	reqs []claudeSeen
}

// claudeSeen is one request the fake upstream received.
type claudeSeen struct {
	path   string
	header http.Header
	body   []byte
}

func (u *claudeUpstream) seen() []claudeSeen {
	u.mu.Lock()
	defer u.mu.Unlock()
	return append([]claudeSeen(nil), u.reqs...)
}

// newClaudeUpstream serves answer(body, stream) for every Messages request.
func newClaudeUpstream(t *testing.T, answer func(w http.ResponseWriter, body []byte, stream bool)) *claudeUpstream {
	u := &claudeUpstream{}
	u.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		u.mu.Lock()
		u.reqs = append(u.reqs, claudeSeen{r.URL.Path, r.Header.Clone(), body})
		u.mu.Unlock()
		if r.URL.Path == "/v1/messages/count_tokens" {
			w.Header().Set("Content-Type", "application/json")
			io.WriteString(w, `{"input_tokens":100}`)
			return
		}
		var req struct {
			Stream bool `json:"stream"`
		}
		json.Unmarshal(body, &req)
		answer(w, body, req.Stream)
	}))
	t.Cleanup(u.Close)
	return u
}

// claudeReply answers with text, or with a tool_use block when tool is set,
// in the streamed or the whole form.
func claudeReply(w http.ResponseWriter, stream bool, text, tool, input string) {
	stop, block := "end_turn", map[string]any{"type": "text", "text": text}
	if tool != "" {
		stop, block = "tool_use", map[string]any{"type": "tool_use", "id": "toolu_01AgentCheck", "name": tool, "input": json.RawMessage(input)}
	}
	usage := map[string]int{"input_tokens": 120, "cache_creation_input_tokens": 0, "cache_read_input_tokens": 0, "output_tokens": 12}
	if !stream {
		w.Header().Set("Content-Type", "application/json")
		json.NewEncoder(w).Encode(map[string]any{"id": "msg_01AgentCheck", "type": "message", "role": "assistant", "model": "claude-sonnet-4-5",
			"content": []any{block}, "stop_reason": stop, "stop_sequence": nil, "usage": usage})
		return
	}
	w.Header().Set("Content-Type", "text/event-stream; charset=utf-8")
	frame := func(event string, data any) {
		b, _ := json.Marshal(data)
		fmt.Fprintf(w, "event: %s\ndata: %s\n\n", event, b)
		w.(http.Flusher).Flush()
	}
	frame("message_start", map[string]any{"type": "message_start", "message": map[string]any{"id": "msg_01AgentCheck", "type": "message",
		"role": "assistant", "model": "claude-sonnet-4-5", "content": []any{}, "stop_reason": nil, "stop_sequence": nil, "usage": usage}})
	if tool != "" {
		frame("content_block_start", map[string]any{"type": "content_block_start", "index": 0, "content_block": map[string]any{"type": "tool_use", "id": "toolu_01AgentCheck", "name": tool, "input": map[string]any{}}})
		frame("content_block_delta", map[string]any{"type": "content_block_delta", "index": 0, "delta": map[string]any{"type": "input_json_delta", "partial_json": input}})
	} else {
		frame("content_block_start", map[string]any{"type": "content_block_start", "index": 0, "content_block": map[string]any{"type": "text", "text": ""}})
		for _, word := range strings.SplitAfter(text, " ") {
			frame("content_block_delta", map[string]any{"type": "content_block_delta", "index": 0, "delta": map[string]any{"type": "text_delta", "text": word}})
		}
	}
	frame("content_block_stop", map[string]any{"type": "content_block_stop", "index": 0})
	frame("message_delta", map[string]any{"type": "message_delta", "delta": map[string]any{"stop_reason": stop, "stop_sequence": nil}, "usage": map[string]int{"output_tokens": 12}})
	frame("message_stop", map[string]any{"type": "message_stop"})
}

// claudeGateway serves the real gateway handler on loopback with a team key
// and the given routes YAML; it returns its URL and the usage records.
func claudeGateway(t *testing.T, providers, routes string) (string, func() []exchange.Record) {
	t.Helper()
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
	h, err := server.New(context.Background(), cfg, server.Options{
		Logger: log,
		Front: server.Front{
			Authenticate: teams.NewAuthenticator(func() *config.Config { return cfg }, log).Authenticate,
		},
		Reporting: server.Reporting{
			Record: func(_ context.Context, r *exchange.Record) { mu.Lock(); recs = append(recs, *r); mu.Unlock() },
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	return srv.URL, func() []exchange.Record { mu.Lock(); defer mu.Unlock(); return append([]exchange.Record(nil), recs...) }
}

// runClaude runs `claude -p prompt --model route` in dir with a throwaway
// HOME and returns its stdout; stderr is logged.
func runClaude(t *testing.T, bin, gatewayURL, dir, route, prompt string, extra ...string) (string, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	args := append([]string{"-p", prompt, "--model", route}, extra...)
	cmd := exec.CommandContext(ctx, bin, args...)
	cmd.Dir = dir
	cmd.Env = []string{"PATH=" + os.Getenv("PATH"), "HOME=" + t.TempDir(), "TERM=dumb", "NO_COLOR=1",
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

// logRequests records what Claude Code sent (headers and body fields,
// never the prompt text) for the check's report.
func logRequests(t *testing.T, u *claudeUpstream) {
	t.Helper()
	for i, r := range u.seen() {
		var top map[string]json.RawMessage
		json.Unmarshal(r.body, &top)
		var keys []string
		for k := range top {
			keys = append(keys, k)
		}
		t.Logf("upstream request %d: %s anthropic-beta=%q fields=%v thinking=%s", i, r.path, r.header.Get("anthropic-beta"), keys, top["thinking"])
		if strings.Contains(r.header.Get("Authorization")+r.header.Get("x-api-key"), claudeTeamKey) {
			t.Errorf("the client's team key reached the upstream")
		}
	}
}

// TestClaudeCodeThroughTheGateway runs the real Claude Code CLI
// non-interactively against the gateway: a plain answer, a tool round trip
// (Claude Code runs its Read tool on a file and sends the result back), a
// failover before the first token, and a stream cut after it (Claude Code
// sees event: error and re-sends the request without streaming).
func TestClaudeCodeThroughTheGateway(t *testing.T) {
	bin, version := claudeBinary(t)
	dir := t.TempDir()
	notes := filepath.Join(dir, "notes.txt")
	if err := os.WriteFile(notes, []byte("The magic word is XYZZY-7.\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	readInput, _ := json.Marshal(map[string]string{"file_path": notes})
	up := newClaudeUpstream(t, func(w http.ResponseWriter, body []byte, stream bool) {
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
	})
	dead := newClaudeUpstream(t, func(w http.ResponseWriter, _ []byte, _ bool) {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(529)
		io.WriteString(w, `{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}`)
	})
	gw, records := claudeGateway(t,
		"  live: {kind: anthropic, base_url: \""+up.URL+"\", keys: [{env: LLMGW_AGENT_UPSTREAM_KEY}]}\n"+
			"  dead: {kind: anthropic, base_url: \""+dead.URL+"\", keys: [{env: LLMGW_AGENT_UPSTREAM_KEY}]}\n",
		"  cc: {targets: [{provider: live, model: claude-sonnet-4-5}]}\n"+
			"  cc-failover: {targets: [{provider: dead, model: claude-sonnet-4-5}, {provider: live, model: claude-sonnet-4-5}]}\n")
	t.Logf("Claude Code %s against %s", version, gw)

	t.Run("plain answer", func(t *testing.T) {
		out, err := runClaude(t, bin, gw, dir, "cc", "PING-CHECK: answer with the pong word only.")
		if err != nil || !strings.Contains(out, "PONG-42") {
			t.Fatalf("claude: %v\n%s", err, out)
		}
	})
	t.Run("tool round trip", func(t *testing.T) {
		out, err := runClaude(t, bin, gw, dir, "cc", "READ-CHECK: read notes.txt and tell me the magic word.", "--allowedTools", "Read")
		if err != nil || !strings.Contains(out, "The file says XYZZY-7.") {
			t.Fatalf("claude: %v\n%s", err, out)
		}
	})
	t.Run("failover before the first token", func(t *testing.T) {
		before := len(dead.seen())
		out, err := runClaude(t, bin, gw, dir, "cc-failover", "PING-CHECK: answer with the pong word only.")
		if err != nil || !strings.Contains(out, "PONG-42") {
			t.Fatalf("claude: %v\n%s", err, out)
		}
		if len(dead.seen()) == before {
			t.Errorf("the dead target was never tried")
		}
		served := false
		for _, r := range records() {
			served = served || (r.Route == "cc-failover" && r.FallbackDepth == 1 && r.Outcome == "ok")
		}
		if !served {
			t.Errorf("no record of a request served by the second target: %+v", records())
		}
	})
	t.Run("cut after the first token", func(t *testing.T) {
		out, err := runClaude(t, bin, gw, dir, "cc", "CUT-CHECK: answer.")
		if strings.Contains(out, "FRAGMENT-ONLY") && !strings.Contains(out, "COMPLETE-ANSWER-9") {
			t.Fatalf("Claude Code printed the fragment of a cut stream as its answer (exit %v):\n%s", err, out)
		}
		if err != nil || !strings.Contains(out, "COMPLETE-ANSWER-9") {
			t.Errorf("claude after a cut: %v\n%s", err, out)
		}
		interrupted := false
		for _, r := range records() {
			interrupted = interrupted || r.Outcome == "interrupted"
		}
		if !interrupted {
			t.Errorf("no interrupted record: the cut did not reach the client as an error")
		}
	})
	logRequests(t, up)
}
