package agents

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// Claude Code and Claude on Bedrock: the real CLI, once in its own Bedrock
// mode straight at a fake Bedrock runtime, once first-party through the
// gateway to a Bedrock target, and through a route over Anthropic and
// Bedrock with no translate_without that fails over both ways. The fake
// Bedrock speaks the real wire: InvokeModel's JSON, and
// InvokeModelWithResponseStream's event stream (chunk events carrying
// Anthropic's events, with valid CRCs, from the AWS SDK's encoder).

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
