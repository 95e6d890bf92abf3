package agents

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// Real AWS-side clients through the gateway's Bedrock Runtime API: Claude
// Code in Bedrock mode and the AWS SDK for JavaScript v3. Each route's
// first target is dead (connection refused) and its second serves.

// jsBedrockSDK is the npm package TestJSBedrockRuntime runs, at the version
// it was checked with.
const jsBedrockSDK = "@aws-sdk/client-bedrock-runtime@3.1162.0"

// bedrockProfile is the inference-profile id the route lists, as Claude
// Code and SDK code name Claude on Bedrock.
const bedrockProfile = "us.anthropic.claude-sonnet-4-5-20250929-v1:0"

// deadURL is the URL of a port nothing listens on any more.
func deadURL(t *testing.T) string {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return "http://" + l.Addr().String()
}

// bedrockRoutes are providers dead and live (an Anthropic API at liveURL)
// and route claude-bedrock over them, listing bedrockProfile.
func bedrockRoutes(t *testing.T, liveURL string) (string, string) {
	return fmt.Sprintf("  dead: {kind: anthropic, base_url: %q, keys: [{env: LLMGW_AGENT_UPSTREAM_KEY}]}\n"+
			"  live: {kind: anthropic, base_url: %q, keys: [{env: LLMGW_AGENT_UPSTREAM_KEY}]}\n", deadURL(t), liveURL),
		"  claude-bedrock:\n    bedrock_model_ids: [" + bedrockProfile + "]\n    targets:\n" +
			"      - {provider: dead, model: claude-dead, max_tokens: 1024}\n      - {provider: live, model: claude-sonnet-4-5, max_tokens: 1024}\n"
}

// noAWSEnv is the environment without AWS or Anthropic settings.
func noAWSEnv() []string {
	var env []string
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "AWS_") && !strings.HasPrefix(kv, "ANTHROPIC_") && !strings.HasPrefix(kv, "CLAUDE_") {
			env = append(env, kv)
		}
	}
	return env
}

// TestClaudeCodeBedrockMode runs the real Claude Code CLI in Bedrock mode
// (CLAUDE_CODE_USE_BEDROCK=1, ANTHROPIC_BEDROCK_BASE_URL, the team key in
// AWS_BEARER_TOKEN_BEDROCK): it answers through a dead first target with
// the second serving invisibly, its InvokeModelWithResponseStream bodies
// reaching the Anthropic upstream as first-party Messages requests.
func TestClaudeCodeBedrockMode(t *testing.T) {
	bin, version := claudeBinary(t)
	up := newClaudeUpstream(t, func(w http.ResponseWriter, body []byte, stream bool) {
		claudeReply(w, stream, "BEDROCK-OK from the gateway.", "", "")
	})
	providers, routes := bedrockRoutes(t, up.URL)
	gw, recs := claudeGateway(t, providers, routes)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, "-p", "Say it.", "--model", bedrockProfile)
	cmd.Dir = t.TempDir()
	cmd.Env = append(noAWSEnv(), "HOME="+t.TempDir(), "TERM=dumb", "NO_COLOR=1",
		"CLAUDE_CODE_USE_BEDROCK=1", "ANTHROPIC_BEDROCK_BASE_URL="+gw, "AWS_BEARER_TOKEN_BEDROCK="+claudeTeamKey, "AWS_REGION=us-east-1",
		"ANTHROPIC_SMALL_FAST_MODEL="+bedrockProfile, "ANTHROPIC_DEFAULT_HAIKU_MODEL="+bedrockProfile,
		"CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC=1", "DISABLE_AUTOUPDATER=1", "DISABLE_TELEMETRY=1",
		"DISABLE_ERROR_REPORTING=1", "CLAUDE_CODE_MAX_RETRIES=0")
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	t.Logf("Claude Code %s (Bedrock mode): %v\nstdout: %s\nstderr: %s", version, err, out, tail(stderr.String(), 2000))
	if err != nil || !strings.Contains(string(out), "BEDROCK-OK") {
		t.Fatalf("Claude Code did not answer through the gateway: %v\n%s", err, out)
	}
	logRequests(t, up)
	served := 0
	for _, r := range recs() {
		t.Logf("record: api %s route %s provider %s depth %d status %d outcome %s", r.API, r.Route, r.Provider, r.FallbackDepth, r.Status, r.Outcome)
		if r.Route == "claude-bedrock" && r.Provider == "live" && r.FallbackDepth == 1 && r.Status == 200 {
			served++
		}
	}
	if served == 0 {
		t.Error("no request was served by the second target after the dead first")
	}
	for i, r := range up.seen() {
		if r.path != "/v1/messages" && r.path != "/v1/messages/count_tokens" {
			t.Errorf("upstream request %d at %s", i, r.path)
		}
		if strings.Contains(string(r.body), "anthropic_version") {
			t.Errorf("upstream request %d still carries Bedrock's anthropic_version", i)
		}
	}
}

// TestJSBedrockRuntime runs @aws-sdk/client-bedrock-runtime (JS v3) with
// its endpoint set to the gateway: converse and converseStream through a
// dead first target, a stream cut after its first words that must raise,
// and an unknown model as ResourceNotFoundException.
func TestJSBedrockRuntime(t *testing.T) {
	agentTestsEnabled(t)
	dir, _ := filepath.Abs(filepath.Join("..", "..", ".llmgw", "agents", "aws-sdk-js"))
	if _, err := os.Stat(filepath.Join(dir, "node_modules", "@aws-sdk", "client-bedrock-runtime")); err != nil {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
		defer cancel()
		os.MkdirAll(dir, 0o755)
		os.WriteFile(filepath.Join(dir, "package.json"), []byte(`{"name":"llmgw-aws-sdk-js","private":true,"type":"module"}`), 0o644)
		if out, err := exec.CommandContext(ctx, "npm", "install", "--no-audit", "--no-fund", "--loglevel=error", "--prefix", dir, jsBedrockSDK).CombinedOutput(); err != nil {
			t.Skipf("skipping: npm cannot install %s: %v\n%s", jsBedrockSDK, err, out)
		}
	}
	script, _ := filepath.Abs("bedrock.mjs")
	if err := copyFile(script, filepath.Join(dir, "bedrock.mjs")); err != nil {
		t.Fatal(err)
	}
	up := newClaudeUpstream(t, func(w http.ResponseWriter, body []byte, stream bool) {
		if strings.Contains(string(body), "ZQX-CUT") && stream {
			w.Header().Set("Content-Type", "text/event-stream; charset=utf-8")
			io.WriteString(w, "event: message_start\ndata: {\"type\":\"message_start\",\"message\":{\"id\":\"msg_cut\",\"type\":\"message\",\"role\":\"assistant\",\"model\":\"claude-sonnet-4-5\",\"content\":[],\"stop_reason\":null,\"stop_sequence\":null,\"usage\":{\"input_tokens\":9,\"output_tokens\":1}}}\n\n"+
				"event: content_block_start\ndata: {\"type\":\"content_block_start\",\"index\":0,\"content_block\":{\"type\":\"text\",\"text\":\"\"}}\n\n"+
				"event: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"index\":0,\"delta\":{\"type\":\"text_delta\",\"text\":\"Once upon\"}}\n\n")
			w.(http.Flusher).Flush()
			if conn, _, err := http.NewResponseController(w).Hijack(); err == nil {
				conn.Close()
			}
			return
		}
		claudeReply(w, stream, "PLAIN-OK", "", "")
	})
	providers, routes := bedrockRoutes(t, up.URL)
	gw, recs := claudeGateway(t, providers, routes)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, "node", filepath.Join(dir, "bedrock.mjs"))
	cmd.Env = append(noAWSEnv(), "GATEWAY_URL="+gw, "MODEL_ID="+bedrockProfile, "AWS_BEARER_TOKEN_BEDROCK="+claudeTeamKey,
		"AWS_CONFIG_FILE=/dev/null", "AWS_SHARED_CREDENTIALS_FILE=/dev/null", "AWS_EC2_METADATA_DISABLED=true")
	cmd.Dir = dir
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	t.Logf("node bedrock.mjs: %v\n%s\n%s", err, out, tail(stderr.String(), 2000))
	if err != nil {
		t.Fatalf("the SDK script failed: %v", err)
	}
	var got struct {
		Converse       struct{ Text, StopReason string }
		ConverseStream struct {
			Events []string
			Text   string
		}
		Cut      struct{ Text, Error, Stop string }
		NotFound string
	}
	if err := json.Unmarshal(out[strings.LastIndexByte(strings.TrimSpace(string(out)), '\n')+1:], &got); err != nil {
		t.Fatalf("output: %v", err)
	}
	if got.Converse.Text != "PLAIN-OK" || got.Converse.StopReason != "end_turn" {
		t.Errorf("converse: %+v", got.Converse)
	}
	if strings.Join(got.ConverseStream.Events, ",") != "messageStart,contentBlockDelta,contentBlockStop,messageStop,metadata" || got.ConverseStream.Text != "PLAIN-OK" {
		t.Errorf("converseStream: %+v", got.ConverseStream)
	}
	if got.Cut.Text != "Once upon" || got.Cut.Stop != "" || !strings.HasPrefix(got.Cut.Error, "ModelStreamErrorException") {
		t.Errorf("cut stream: %+v (want the first words, then ModelStreamErrorException)", got.Cut)
	}
	if got.NotFound != "ResourceNotFoundException" {
		t.Errorf("unknown model: %q", got.NotFound)
	}
	for _, r := range recs()[:2] {
		if r.Provider != "live" || r.FallbackDepth != 1 {
			t.Errorf("record: provider %q depth %d, want live after the dead target", r.Provider, r.FallbackDepth)
		}
	}
}
