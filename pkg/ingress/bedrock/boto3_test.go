package bedrock_test

import (
	"encoding/json"
	"encoding/pem"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// caFile writes the gateway's test certificate for clients outside Go.
func (g *gateway) caFile(t *testing.T) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "gateway.pem")
	if err := os.WriteFile(p, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: g.cert.Raw}), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

// boto3 (python3) through the gateway: converse, converse_stream,
// invoke_model without a contentType, invoke_model_with_response_stream,
// its exception classes, and a stream cut after its first token raising
// EventStreamError; the route's first target is dead.
func TestBoto3(t *testing.T) {
	py, err := exec.LookPath("python3")
	if err != nil {
		t.Skip("python3 is not installed")
	}
	if out, err := exec.Command(py, "-c", "import boto3").CombinedOutput(); err != nil {
		t.Skipf("boto3 is not installed for %s: %s", py, out)
	}
	live := newUpstream(t, false)
	g := newGateway(t, live)
	cutGW := newGateway(t, newUpstream(t, true))
	cmd := exec.Command(py, "testdata/boto3_check.py")
	cmd.Env = append(noAWSEnv(), "GW_URL="+g.URL, "GW_CUT_URL="+cutGW.URL, "AWS_BEARER_TOKEN_BEDROCK="+teamKey, "AWS_CA_BUNDLE="+g.caFile(t),
		"MODEL_ID="+profileID, "AWS_CONFIG_FILE=/dev/null", "AWS_SHARED_CREDENTIALS_FILE=/dev/null", "AWS_EC2_METADATA_DISABLED=true")
	b, err := cmd.Output()
	if err != nil {
		var stderr string
		if ee, ok := err.(*exec.ExitError); ok {
			stderr = string(ee.Stderr)
		}
		t.Fatalf("boto3 script: %v\n%s", err, stderr)
	}
	var out struct {
		Skip     string
		Botocore string
		Converse struct {
			Text, StopReason string
			Usage            map[string]int
		}
		ConverseStream struct {
			Events []string
			Text   string
		} `json:"converse_stream"`
		InvokeModel struct {
			Type    string
			Content []struct{ Text string }
		} `json:"invoke_model"`
		InvokeStream []string `json:"invoke_model_with_response_stream"`
		Validation   string
		NotFound     string `json:"not_found"`
		Cut          struct{ Text, Error string }
	}
	if err := json.Unmarshal(b, &out); err != nil {
		t.Fatalf("boto3 output %s: %v", b, err)
	}
	if out.Skip != "" {
		t.Skip(out.Skip)
	}
	t.Logf("botocore %s", out.Botocore)
	if out.Converse.Text != "Hello from Claude" || out.Converse.StopReason != "end_turn" || out.Converse.Usage["outputTokens"] != 4 {
		t.Errorf("converse: %+v", out.Converse)
	}
	if got := strings.Join(out.ConverseStream.Events, ","); got != "messageStart,contentBlockDelta,contentBlockDelta,contentBlockStop,messageStop,metadata" || out.ConverseStream.Text != "Hello from Claude" {
		t.Errorf("converse_stream: %s %q", got, out.ConverseStream.Text)
	}
	if out.InvokeModel.Type != "message" || len(out.InvokeModel.Content) != 1 || out.InvokeModel.Content[0].Text != "Hello from Claude" {
		t.Errorf("invoke_model: %+v", out.InvokeModel)
	}
	if got := strings.Join(out.InvokeStream, ","); got != "message_start,content_block_start,content_block_delta,content_block_delta,content_block_stop,message_delta,message_stop" {
		t.Errorf("invoke_model_with_response_stream: %s", got)
	}
	if !strings.HasPrefix(out.Validation, "ValidationException: ") || !strings.Contains(out.Validation, "messages[0].role") {
		t.Errorf("validation: %s", out.Validation)
	}
	if out.NotFound != "ResourceNotFoundException" {
		t.Errorf("not found: %s", out.NotFound)
	}
	if out.Cut.Text != "Hello" || out.Cut.Error != "modelStreamErrorException" {
		t.Errorf("cut stream: %+v, want the first token, then EventStreamError modelStreamErrorException", out.Cut)
	}
	recs := g.records(t, 6)
	for _, r := range recs[:4] {
		if r.Provider != "live" || r.FallbackDepth != 1 {
			t.Errorf("record: provider %q depth %d, want live after the dead target", r.Provider, r.FallbackDepth)
		}
	}
	// invoke_model sent no Content-Type and still passed through.
	if seen := live.requests(); len(seen) != 4 || !strings.HasPrefix(seen[2].body, `{"model":"claude-live","max_tokens":64`) {
		t.Errorf("upstream requests: %+v", seen)
	}
}

// noAWSEnv is the environment without AWS settings, so a client finds no
// credentials but the bearer token it is given.
func noAWSEnv() []string {
	var env []string
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "AWS_") {
			env = append(env, kv)
		}
	}
	return env
}

// boto3's Converse and ConverseStream to a Bedrock target pass through:
// the upstream gets the bytes botocore sent the gateway, members the
// canonical Prompt does not carry included, and boto3 reads the
// upstream's own answer (its metrics, its performanceConfig).
func TestBoto3ConverseToBedrockTargetPassesThrough(t *testing.T) {
	py, err := exec.LookPath("python3")
	if err != nil {
		t.Skip("python3 is not installed")
	}
	if out, err := exec.Command(py, "-c", "import boto3").CombinedOutput(); err != nil {
		t.Skipf("boto3 is not installed for %s: %s", py, out)
	}
	var rec recorder
	g := bedrockPassGateway(t, fakeConverseBedrock(t, &rec), "amazon.nova-pro-v1:0")
	cmd := exec.Command(py, "testdata/boto3_passthrough.py")
	cmd.Env = append(noAWSEnv(), "GW_URL="+g.URL, "AWS_BEARER_TOKEN_BEDROCK="+teamKey, "AWS_CA_BUNDLE="+g.caFile(t),
		"MODEL_ID="+profileID, "AWS_CONFIG_FILE=/dev/null", "AWS_SHARED_CREDENTIALS_FILE=/dev/null", "AWS_EC2_METADATA_DISABLED=true")
	b, err := cmd.Output()
	if err != nil {
		var stderr string
		if ee, ok := err.(*exec.ExitError); ok {
			stderr = string(ee.Stderr)
		}
		t.Fatalf("boto3 script: %v\n%s", err, stderr)
	}
	var out struct {
		Skip     string
		Converse struct {
			Text, Performance string
			Latency           int
		}
		ConverseStream struct {
			Text    string
			Latency int
		} `json:"converse_stream"`
		Sent []string
	}
	if err := json.Unmarshal(b, &out); err != nil {
		t.Fatalf("boto3 output %s: %v", b, err)
	}
	if out.Skip != "" {
		t.Skip(out.Skip)
	}
	if out.Converse.Text != "Hello from Bedrock" || out.Converse.Latency != 321 || out.Converse.Performance != "optimized" {
		t.Errorf("converse: %+v, want the upstream's answer", out.Converse)
	}
	if out.ConverseStream.Text != "Hello from Bedrock" || out.ConverseStream.Latency != 321 {
		t.Errorf("converse_stream: %+v, want the upstream's answer", out.ConverseStream)
	}
	rec.mu.Lock()
	got := append([]string(nil), rec.bodies...)
	rec.mu.Unlock()
	if len(got) != 2 || len(out.Sent) != 2 || got[0] != out.Sent[0] || got[1] != out.Sent[1] || !strings.Contains(got[0], `"performanceConfig"`) {
		t.Errorf("upstream bodies\n%q\nbotocore sent the gateway\n%q", got, out.Sent)
	}
}
