package agents

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/llmgw/llmgw/pkg/config"
)

// readmeBlock returns the fenced block after marker in README.md, and the
// #> lines it states as output.
func readmeBlock(t *testing.T, marker string) (text string, want []string) {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("..", "..", "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	_, rest, ok := strings.Cut(string(b), marker+"\n```")
	if !ok {
		t.Fatalf("README.md has no block marked %s", marker)
	}
	_, rest, _ = strings.Cut(rest, "\n")
	text, _, ok = strings.Cut(rest, "\n```")
	if !ok {
		t.Fatalf("the block marked %s never ends", marker)
	}
	for _, l := range strings.Split(text, "\n") {
		if w, ok := strings.CutPrefix(l, "#> "); ok {
			want = append(want, w)
		}
	}
	return text + "\n", want
}

// demoGateway serves the built-in demo config on loopback.
func demoGateway(t *testing.T) string {
	var rec recorder
	return gatewayFor(t, string(config.DemoYAML()), &rec)
}

// TestClaudeCodeOnTheDemo runs the README's "Claude Code on the demo" block
// as written, with the real Claude Code as `claude` on the PATH, against
// the demo config: it must print the answer the README shows.
func TestClaudeCodeOnTheDemo(t *testing.T) {
	bin, _ := claudeBinary(t)
	text, want := readmeBlock(t, "<!-- claude-code-demo -->")
	if len(want) == 0 {
		t.Fatal("the block states no output")
	}
	gw := demoGateway(t)
	path := t.TempDir()
	if err := os.Symlink(bin, filepath.Join(path, "claude")); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, "bash", "-c", strings.ReplaceAll(text, "http://127.0.0.1:8080", gw))
	cmd.Dir = t.TempDir()
	cmd.Env = []string{"PATH=" + path + string(os.PathListSeparator) + os.Getenv("PATH"), "HOME=" + t.TempDir(),
		"TERM=dumb", "NO_COLOR=1", "DISABLE_AUTOUPDATER=1", "DISABLE_TELEMETRY=1", "DISABLE_ERROR_REPORTING=1"}
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("the README block failed: %v\n%s", err, out)
	}
	for _, w := range want {
		if !strings.Contains(string(out), w) {
			t.Errorf("no %q in the output:\n%s", w, out)
		}
	}
}

// TestDocSnippetsOnTheDemo runs the README's AI SDK snippet as written
// against the demo config: it prints the answer; on a route that does not
// exist it prints the error and exits non-zero (an AI SDK stream error is
// not thrown, so a snippet without onError would print nothing and exit 0).
func TestDocSnippetsOnTheDemo(t *testing.T) {
	agentTestsEnabled(t)
	dir := installNodeSDKs(t)
	text, _ := readmeBlock(t, "<!-- snippet: ai-sdk -->")
	gw := demoGateway(t)
	run := func(snippet string) (string, string, error) {
		f, err := os.CreateTemp(dir, "readme-snippet-*.mjs") // in dir: node resolves the SDKs from there
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { os.Remove(f.Name()) })
		f.WriteString(strings.ReplaceAll(snippet, "http://127.0.0.1:8080", gw))
		f.Close()
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		cmd := exec.CommandContext(ctx, "node", f.Name())
		cmd.Dir = dir
		var stdout, stderr bytes.Buffer
		cmd.Stdout, cmd.Stderr = &stdout, &stderr
		err = cmd.Run()
		return stdout.String(), stderr.String(), err
	}
	out, errOut, err := run(text)
	if err != nil || !strings.Contains(out, "Hello from the steady provider.") {
		t.Errorf("the snippet: %v\nstdout %s\nstderr %s", err, out, errOut)
	}
	if !strings.Contains(text, "llmgw('demo')") {
		t.Fatal("the snippet no longer asks for the demo route")
	}
	out, errOut, err = run(strings.Replace(text, "llmgw('demo')", "llmgw('no-such-route')", 1))
	if err == nil || !strings.Contains(errOut, "error:") || !strings.Contains(errOut, "no-such-route") {
		t.Errorf("an error must surface: %v\nstdout %s\nstderr %s", err, out, errOut)
	}
}
