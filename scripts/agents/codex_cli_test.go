package agents

import (
	"bytes"
	"fmt"
	"net/http"
	"strings"
	"testing"
)

// TestCodexCLI runs the real Codex CLI (`codex exec`) through the gateway:
// a plain answer passed through to a Responses upstream (its body reaching
// the upstream byte for byte except the model), a shell-tool round trip
// translated to a chat-only upstream (Codex runs the command and sends its
// output back), a failover before the first token that Codex never sees,
// and a stream cut after its first words that Codex must report as an
// error, not print as an answer.
func TestCodexCLI(t *testing.T) {
	agentTestsEnabled(t)
	bin, version := codexBinary(t)
	t.Logf("using %s (%s)", version, bin)

	var chatRec, nativeRec, deadRec, gwRec recorder
	chat := serve(t, &chatRec, fakeChat)
	native := serve(t, &nativeRec, fakeResponses)
	dead := serve(t, &deadRec, func(w http.ResponseWriter, _ []byte, _ int) {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(503)
		w.Write([]byte(`{"error":{"message":"overloaded","type":"server_error"}}`))
	})
	gw := gatewayFor(t, fmt.Sprintf(`
defaults: {attempts: 1, backoff_base: 1ms, backoff_max: 2ms}
providers:
  native: {kind: openai, base_url: %q, apis: [chat, responses]}
  chat:   {kind: openai, base_url: %q}
  dead:   {kind: openai, base_url: %q}
routes:
  codex-native:   {targets: [{provider: native, model: gpt-native}]}
  codex-chat:     {targets: [{provider: chat, model: fake-chat}]}
  codex-failover: {targets: [{provider: dead, model: gone}, {provider: chat, model: fake-chat}]}
`, native.URL+"/v1", chat.URL+"/v1", dead.URL+"/v1"), &gwRec)

	t.Run("plain_answer_passthrough", func(t *testing.T) {
		r := runCodex(t, bin, gw, "codex-native", "Reply with the word from the server. "+markPlain)
		if r.err != nil || !strings.Contains(r.stdout, "PASSTHROUGH-OK") {
			t.Fatalf("codex failed or printed no answer: %v", r.err)
		}
		got := nativeRec.all()
		var sent []byte
		for _, b := range gwRec.all() {
			if bytes.Contains(b, []byte(`"model":"codex-native"`)) {
				sent = b
			}
		}
		if len(got) == 0 || sent == nil {
			t.Fatalf("upstream saw %d requests; gateway saw codex's: %v", len(got), sent != nil)
		}
		want := bytes.Replace(sent, []byte(`"model":"codex-native"`), []byte(`"model":"gpt-native"`), 1)
		if !bytes.Equal(got[len(got)-1], want) {
			t.Errorf("the upstream's body is not codex's with only the model rewritten:\n%.400s\nwant\n%.400s", got[len(got)-1], want)
		}
		for _, f := range []string{`"store":false`, `"prompt_cache_key"`, `"client_metadata"`, `"include":["reasoning.encrypted_content"]`} {
			if !bytes.Contains(got[len(got)-1], []byte(f)) {
				t.Errorf("upstream body lacks %s", f)
			}
		}
	})

	t.Run("shell_tool_round_trip_translated", func(t *testing.T) {
		n := len(chatRec.all())
		r := runCodex(t, bin, gw, "codex-chat", "Run the shell command the server asks for, then report. "+markTool)
		if r.err != nil || !strings.Contains(r.stdout, "TOOL-RESULT: tool-42") {
			t.Fatalf("codex failed or did not report the tool result: %v", r.err)
		}
		bodies := chatRec.all()[n:]
		if len(bodies) < 2 {
			t.Fatalf("chat upstream saw %d requests, want the call and the follow-up", len(bodies))
		}
		last := bodies[len(bodies)-1]
		if !bytes.Contains(last, []byte(`"role":"tool"`)) || !bytes.Contains(last, []byte("tool-42")) || !bytes.Contains(last, []byte(`"tool_call_id":"call_fake_1"`)) {
			t.Errorf("the follow-up does not carry the tool's output as a tool message: %.600s", last)
		}
	})

	t.Run("failover_before_first_token", func(t *testing.T) {
		deadBefore := len(deadRec.all())
		r := runCodex(t, bin, gw, "codex-failover", "Say the word. "+markPlain)
		if r.err != nil || !strings.Contains(r.stdout, "PLAIN-OK") {
			t.Fatalf("codex failed or printed no answer: %v", r.err)
		}
		if len(deadRec.all()) == deadBefore {
			t.Error("the failing primary was never tried")
		}
	})

	t.Run("cut_stream_is_an_error", func(t *testing.T) {
		r := runCodex(t, bin, gw, "codex-chat", "Tell a story. "+markCut)
		if r.err == nil {
			t.Errorf("codex exited 0 after a cut stream; stdout %q", r.stdout)
		}
		if strings.Contains(r.stdout, "PARTIAL-FRAGMENT") {
			t.Errorf("codex printed the fragment as an answer: %q", r.stdout)
		}
	})
}
