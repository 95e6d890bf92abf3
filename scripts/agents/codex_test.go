// Package agents runs real coding agents, as a user would, against the
// gateway and fake upstreams on loopback. The tests only run when
// LLMGW_AGENT_TESTS=1 (scripts/agents/check.sh sets it); they install the
// agent from npm and skip, saying why, when npm cannot.
package agents

import (
	"bytes"
	"context"
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

	"github.com/llmgw/llmgw/pkg/config"
	"github.com/llmgw/llmgw/pkg/server"
)

// CodexVersion is the Codex CLI release these checks were written against
// (npm @openai/codex). CODEX_VERSION overrides it.
const CodexVersion = "0.171.0"

// recorder keeps every request body a handler received.
type recorder struct {
	mu     sync.Mutex
	paths  []string
	bodies [][]byte
}

func (r *recorder) add(path string, body []byte) int {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.paths, r.bodies = append(r.paths, path), append(r.bodies, body)
	return len(r.bodies)
}

func (r *recorder) all() [][]byte {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([][]byte(nil), r.bodies...)
}

// serve is an httptest server that records each body, then answers.
func serve(t *testing.T, rec *recorder, fn func(w http.ResponseWriter, body []byte, n int)) *httptest.Server {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		fn(w, body, rec.add(r.URL.Path, body))
	}))
	t.Cleanup(srv.Close)
	return srv
}

// codexBinary returns the codex executable: $CODEX_BIN, or one installed
// from npm into .llmgw/agents (skipping the test when npm cannot).
func codexBinary(t *testing.T) (string, string) {
	version := CodexVersion
	if v := os.Getenv("CODEX_VERSION"); v != "" {
		version = v
	}
	bin := os.Getenv("CODEX_BIN")
	if bin == "" {
		dir, _ := filepath.Abs(filepath.Join("..", "..", ".llmgw", "agents", "codex-"+version))
		bin = filepath.Join(dir, "node_modules", ".bin", "codex")
		if _, err := os.Stat(bin); err != nil {
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
			defer cancel()
			cmd := exec.CommandContext(ctx, "npm", "install", "--no-audit", "--no-fund", "--loglevel=error", "--prefix", dir, "@openai/codex@"+version)
			if out, err := cmd.CombinedOutput(); err != nil {
				t.Skipf("skipping: npm cannot install @openai/codex@%s: %v\n%s", version, err, out)
			}
		}
	}
	out, err := exec.Command(bin, "--version").CombinedOutput()
	if err != nil {
		t.Skipf("skipping: %s --version failed: %v\n%s", bin, err, out)
	}
	return bin, strings.TrimSpace(string(out))
}

// codexRun is one `codex exec` against the gateway.
type codexRun struct {
	stdout, stderr string
	err            error
}

// runCodex runs codex exec non-interactively with a throwaway HOME and
// CODEX_HOME whose config.toml points a custom Responses provider at the
// gateway, with retries off so that the gateway's own behaviour is seen.
func runCodex(t *testing.T, bin, gatewayURL, model, prompt string) codexRun {
	t.Helper()
	home := t.TempDir()
	codexHome := filepath.Join(home, ".codex")
	work := filepath.Join(home, "work")
	for _, d := range []string{codexHome, work} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(filepath.Join(codexHome, "config.toml"), []byte(codexConfig(gatewayURL)), 0o600); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	// The sandbox is bypassed: the only command run is the fixed echo the
	// fake upstream asks for, in a throwaway directory, and Codex's
	// bubblewrap sandbox needs user namespaces a CI container may lack.
	cmd := exec.CommandContext(ctx, bin, "exec", "--skip-git-repo-check", "--ephemeral",
		"--dangerously-bypass-approvals-and-sandbox", "-m", model, prompt)
	cmd.Dir = work
	cmd.Env = []string{"HOME=" + home, "CODEX_HOME=" + codexHome, "PATH=" + os.Getenv("PATH"),
		"LLMGW_API_KEY=sk-llmgw-agent-test", "NO_COLOR=1", "TERM=dumb"}
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	r := codexRun{stdout: stdout.String(), stderr: stderr.String(), err: err}
	t.Logf("codex -m %s: err=%v\n--- stdout\n%s\n--- stderr (tail)\n%s", model, err, r.stdout, tail(r.stderr, 1500))
	return r
}

// codexConfig is the config.toml of docs/clients.md's "Point Codex CLI at the
// gateway" section.
func codexConfig(gatewayURL string) string {
	return `model_provider = "llmgw"
web_search = "disabled"

[model_providers.llmgw]
name = "llmgw"
base_url = "` + gatewayURL + `/v1"
env_key = "LLMGW_API_KEY"
wire_api = "responses"
request_max_retries = 0
stream_max_retries = 0

[features]
plugins = false

[analytics]
enabled = false
`
}

func tail(s string, n int) string {
	if len(s) > n {
		return "..." + s[len(s)-n:]
	}
	return s
}

// gatewayFor serves a config over loopback, recording the bodies it gets.
func gatewayFor(t *testing.T, yaml string, rec *recorder) string {
	cfg, err := config.Parse([]byte(yaml))
	if err != nil {
		t.Fatal(err)
	}
	h, err := server.New(context.Background(), cfg, server.Options{})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		rec.add(r.URL.Path, body)
		r.Body = io.NopCloser(bytes.NewReader(body))
		h.ServeHTTP(w, r)
	}))
	t.Cleanup(srv.Close)
	return srv.URL
}

func agentTestsEnabled(t *testing.T) {
	if os.Getenv("LLMGW_AGENT_TESTS") != "1" {
		t.Skip("skipping: set LLMGW_AGENT_TESTS=1 (scripts/agents/check.sh) to run the real agents")
	}
}
