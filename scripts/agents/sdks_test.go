package agents

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// The npm packages TestNodeSDKs runs, at the versions it was checked with.
var nodeSDKs = []string{"ai@7.0.173", "@ai-sdk/openai@4.0.118", "@openai/agents@0.20.0", "openai@6.49.0", "zod@4"}

// TestNodeSDKs runs the AI SDK's default OpenAI provider (createOpenAI:
// the Responses API) and the OpenAI Agents SDK's default model through the
// gateway to a chat-only upstream: an answer generated and streamed, and a
// stream cut after its first words that each must report as an error.
func TestNodeSDKs(t *testing.T) {
	agentTestsEnabled(t)
	var chatRec, gwRec recorder
	chat := serve(t, &chatRec, fakeChat)
	gw := gatewayFor(t, fmt.Sprintf(`
providers:
  chat: {kind: openai, base_url: %q}
routes:
  sdk-chat: {targets: [{provider: chat, model: fake-chat}]}
`, chat.URL+"/v1"), &gwRec)
	runNodeSDKs(t, gw)
	for _, b := range gwRec.all() {
		if !strings.Contains(string(b), `"input"`) {
			t.Errorf("an SDK did not call the Responses API: %.200s", b)
		}
	}
}

// runNodeSDKs runs sdks.mjs against the gateway at gw, whose route
// sdk-chat the SDKs call, and checks what each saw: the answer PLAIN-OK
// generated and streamed, and a stream cut after its first words reported
// as an error.
func runNodeSDKs(t *testing.T, gw string) {
	t.Helper()
	dir := installNodeSDKs(t)
	script, _ := filepath.Abs("sdks.mjs")
	if err := copyFile(script, filepath.Join(dir, "sdks.mjs")); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, "node", filepath.Join(dir, "sdks.mjs"))
	cmd.Env = append(os.Environ(), "GATEWAY_URL="+gw)
	cmd.Dir = dir
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	t.Logf("node sdks.mjs: %v\n%s\n%s", err, out, tail(stderr.String(), 2000))
	if err != nil {
		t.Fatalf("the SDK script failed: %v", err)
	}
	var got struct {
		AIGenerate   struct{ Text, Finish string }
		AIStream     struct{ Text, Finish string }
		AICut        struct{ Text, Finish, Error string }
		AgentsRun    struct{ Final string }
		AgentsStream struct{ Text string }
		AgentsCut    struct{ Error string }
	}
	if err := json.Unmarshal(out[strings.LastIndexByte(strings.TrimSpace(string(out)), '\n')+1:], &got); err != nil {
		t.Fatalf("output: %v", err)
	}
	if got.AIGenerate.Text != "PLAIN-OK" || got.AIGenerate.Finish != "stop" || got.AIStream.Text != "PLAIN-OK" || got.AIStream.Finish != "stop" {
		t.Errorf("AI SDK answers: %+v %+v", got.AIGenerate, got.AIStream)
	}
	if got.AICut.Finish != "error" || !strings.Contains(got.AICut.Error, "interrupted") {
		t.Errorf("AI SDK cut stream: %+v", got.AICut)
	}
	if got.AgentsRun.Final != "PLAIN-OK" || got.AgentsStream.Text != "PLAIN-OK" {
		t.Errorf("Agents SDK answers: %+v %+v", got.AgentsRun, got.AgentsStream)
	}
	if !strings.Contains(got.AgentsCut.Error, "interrupted") {
		t.Errorf("Agents SDK cut stream: %+v", got.AgentsCut)
	}
}

// installNodeSDKs installs nodeSDKs (once: the directory is kept) and
// returns the directory; a machine without npm access skips the test.
func installNodeSDKs(t *testing.T) string {
	t.Helper()
	dir, _ := filepath.Abs(filepath.Join("..", "..", ".llmgw", "agents", "node-sdks"))
	if _, err := os.Stat(filepath.Join(dir, "node_modules", "@openai", "agents")); err != nil {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
		defer cancel()
		os.MkdirAll(dir, 0o755)
		os.WriteFile(filepath.Join(dir, "package.json"), []byte(`{"name":"llmgw-agent-sdks","private":true,"type":"module"}`), 0o644)
		args := append([]string{"install", "--no-audit", "--no-fund", "--loglevel=error", "--prefix", dir}, nodeSDKs...)
		if out, err := exec.CommandContext(ctx, "npm", args...).CombinedOutput(); err != nil {
			t.Skipf("skipping: npm cannot install %s: %v\n%s", strings.Join(nodeSDKs, " "), err, out)
		}
	}
	return dir
}

func copyFile(src, dst string) error {
	b, err := os.ReadFile(src)
	if err != nil {
		return err
	}
	return os.WriteFile(dst, b, 0o644)
}
