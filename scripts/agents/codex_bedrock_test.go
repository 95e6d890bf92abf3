package agents

import (
	"bytes"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"

	"github.com/llmgw/llmgw/pkg/provider/bedrock/bedrocktest"
)

// TestCodexFailsOverToOpenAIOnBedrock runs the real Codex CLI on a route
// whose OpenAI target is down and whose second target is OpenAI's
// gpt-oss-120b on Bedrock's Responses endpoint (bedrock-mantle): Codex's
// Responses request reaches Bedrock with its own body but the model,
// signed with SigV4 for bedrock-mantle, and Codex prints Bedrock's answer,
// never seeing the failover.
func TestCodexFailsOverToOpenAIOnBedrock(t *testing.T) {
	agentTestsEnabled(t)
	bin, version := codexBinary(t)
	t.Logf("using %s (%s)", version, bin)

	var gwRec recorder
	f := newOpenAIOnBedrock(t, fakeResponses)
	gw := gatewayFor(t, f.config("codex-bedrock"), &gwRec)
	r := runCodex(t, bin, gw, "codex-bedrock", "Reply with the word from the server. "+markPlain)
	if r.err != nil || !strings.Contains(r.stdout, "PASSTHROUGH-OK") {
		t.Fatalf("codex failed or printed no answer: %v", r.err)
	}
	f.check(t)
	got := f.brRec.all()
	var sent []byte
	for _, b := range gwRec.all() {
		if bytes.Contains(b, []byte(`"model":"codex-bedrock"`)) {
			sent = b
		}
	}
	if len(got) == 0 || sent == nil {
		t.Fatalf("bedrock saw %d requests; gateway saw codex's: %v", len(got), sent != nil)
	}
	want := bytes.Replace(sent, []byte(`"model":"codex-bedrock"`), []byte(`"model":"openai.gpt-oss-120b"`), 1)
	if !bytes.Equal(got[len(got)-1], want) {
		t.Errorf("bedrock's body is not codex's with only the model rewritten:\n%.400s\nwant\n%.400s", got[len(got)-1], want)
	}
}

// TestNodeSDKsFailOverToOpenAIOnBedrock runs the AI SDK and the OpenAI
// Agents SDK (sdks.mjs) on a route whose OpenAI target is down and whose
// second target is gpt-oss-120b on Bedrock's Responses endpoint: their
// answers, streamed and whole, come from Bedrock, and a Bedrock stream cut
// after its first words is an error to each.
func TestNodeSDKsFailOverToOpenAIOnBedrock(t *testing.T) {
	agentTestsEnabled(t)
	var gwRec recorder
	f := newOpenAIOnBedrock(t, scriptedResponses)
	runNodeSDKs(t, gatewayFor(t, f.config("sdk-chat"), &gwRec))
	f.check(t)
	if len(f.brRec.all()) < 6 {
		t.Errorf("bedrock served %d requests, want every SDK call", len(f.brRec.all()))
	}
}

// openAIOnBedrock is a dead OpenAI upstream and a fake Bedrock serving
// OpenAI's Responses API at bedrock-mantle's /v1 path, which refuses any
// request not signed (SigV4, service bedrock-mantle, us-east-1) with the
// test's credentials.
type openAIOnBedrock struct {
	dead, br       *httptest.Server
	deadRec, brRec recorder
	mu             sync.Mutex
	authErrs       []string
}

func newOpenAIOnBedrock(t *testing.T, answer func(w http.ResponseWriter, body []byte, n int)) *openAIOnBedrock {
	creds := aws.Credentials{AccessKeyID: "AKIDAGENTSBEDROCK", SecretAccessKey: "agents-bedrock-secret"}
	for k, v := range map[string]string{"AWS_ACCESS_KEY_ID": creds.AccessKeyID, "AWS_SECRET_ACCESS_KEY": creds.SecretAccessKey,
		"AWS_SESSION_TOKEN": "", "AWS_REGION": "us-east-1", "AWS_PROFILE": "", "AWS_BEARER_TOKEN_BEDROCK": "",
		"AWS_CONFIG_FILE": "/nonexistent/aws-config", "AWS_SHARED_CREDENTIALS_FILE": "/nonexistent/aws-credentials",
		"AWS_EC2_METADATA_DISABLED": "true", "AWS_ENDPOINT_URL": "", "AWS_ENDPOINT_URL_BEDROCK_RUNTIME": ""} {
		t.Setenv(k, v)
	}
	f := &openAIOnBedrock{}
	f.dead = serve(t, &f.deadRec, func(w http.ResponseWriter, _ []byte, _ int) {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(503)
		w.Write([]byte(`{"error":{"message":"overloaded","type":"server_error"}}`))
	})
	f.br = serveRequest(t, &f.brRec, func(w http.ResponseWriter, r *http.Request, body []byte) {
		if err := bedrocktest.CheckSigV4(r, body, "bedrock-mantle", "us-east-1", creds); err != nil || r.URL.Path != "/v1/responses" {
			f.mu.Lock()
			f.authErrs = append(f.authErrs, fmt.Sprintf("%s: %v", r.URL.Path, err))
			f.mu.Unlock()
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(403)
			w.Write([]byte(`{"message":"The request signature we calculated does not match the signature you provided."}`))
			return
		}
		answer(w, body, 0)
	})
	return f
}

// config is a gateway config whose route is [OpenAI (dead), gpt-oss-120b
// on Bedrock mantle].
func (f *openAIOnBedrock) config(route string) string {
	return fmt.Sprintf(`
defaults: {attempts: 1, backoff_base: 1ms, backoff_max: 2ms}
providers:
  openai:  {kind: openai, base_url: %q, apis: [chat, responses]}
  bedrock: {kind: bedrock, region: us-east-1, endpoint: %q}
routes:
  %s:
    targets:
      - {provider: openai, model: gpt-5}
      - {provider: bedrock, model: openai.gpt-oss-120b, options: {openai_endpoint: mantle}}
`, f.dead.URL+"/v1", f.br.URL, route)
}

// check fails t when OpenAI was never tried or Bedrock refused a request.
func (f *openAIOnBedrock) check(t *testing.T) {
	t.Helper()
	if len(f.deadRec.all()) == 0 {
		t.Error("the failing OpenAI target was never tried")
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if len(f.authErrs) > 0 {
		t.Errorf("bedrock refused: %q", f.authErrs)
	}
}

// serveRequest is serve with the request itself (its path and headers),
// for a fake that checks how it was called.
func serveRequest(t *testing.T, rec *recorder, fn func(w http.ResponseWriter, r *http.Request, body []byte)) *httptest.Server {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		rec.add(r.URL.Path, body)
		fn(w, r, body)
	}))
	t.Cleanup(srv.Close)
	return srv
}
