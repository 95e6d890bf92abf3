package gwstack

import (
	"archive/zip"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	sqstypes "github.com/aws/aws-sdk-go-v2/service/sqs/types"

	"github.com/llmgw/llmgw/pkg/lambdaemu"
	"github.com/llmgw/llmgw/pkg/store"
	"github.com/llmgw/llmgw/pkg/teamkey"
)

// motoUnsupported are the resource types moto 5.2.1 cannot create through
// CloudFormation (it has no model for them; references to them resolve to
// nothing and the resources that use them fail). The deploy test strips
// them, and only them; see motoTemplate for what replaces references.
var motoUnsupported = map[string]bool{
	"AWS::CloudWatch::Alarm":           true,
	"AWS::Lambda::Url":                 true,
	"AWS::SQS::QueuePolicy":            true,
	"AWS::Lambda::Alias":               true,
	"AWS::CodeDeploy::Application":     true,
	"AWS::CodeDeploy::DeploymentGroup": true,
}

// motoTemplate returns the template as moto can deploy it: the resources
// of motoUnsupported removed (and from every DependsOn), a Ref to a removed
// alias replaced by its function's ARN (the value moto can resolve: the
// Function URL's invoke permissions then sit on the function), other Refs
// and GetAtts of removed resources by placeholder strings (alarm names in
// the dashboard, the FunctionUrl output: moto crashes on a GetAtt of a
// Function URL), and the Tags of SSM parameters dropped (moto fails on
// CloudFormation's map form). Everything else deploys as synthesized.
func motoTemplate(t *testing.T, tmpl map[string]interface{}) []byte {
	t.Helper()
	doc := deepCopy(t, tmpl)
	res := doc["Resources"].(map[string]interface{})
	removed := map[string]map[string]interface{}{}
	for id, r := range res {
		if r := r.(map[string]interface{}); motoUnsupported[r["Type"].(string)] {
			removed[id] = r
			delete(res, id)
		}
	}
	var fix func(v interface{}) interface{}
	fix = func(v interface{}) interface{} {
		switch x := v.(type) {
		case map[string]interface{}:
			if ref, ok := x["Ref"].(string); ok && removed[ref] != nil {
				if r := removed[ref]; r["Type"] == "AWS::Lambda::Alias" {
					fn := r["Properties"].(map[string]interface{})["FunctionName"].(map[string]interface{})["Ref"]
					return map[string]interface{}{"Fn::GetAtt": []interface{}{fn, "Arn"}}
				}
				return "stripped-for-moto-" + ref
			}
			if ga, ok := x["Fn::GetAtt"].([]interface{}); ok && removed[ga[0].(string)] != nil {
				return fmt.Sprintf("arn:aws:stripped-for-moto:%s:%s:%v", motoRegion, motoAccount, ga[0])
			}
			for k, e := range x {
				x[k] = fix(e)
			}
		case []interface{}:
			for i, e := range x {
				x[i] = fix(e)
			}
		}
		return v
	}
	for _, r := range res {
		r := r.(map[string]interface{})
		if deps, ok := r["DependsOn"].([]interface{}); ok {
			var keep []interface{}
			for _, d := range deps {
				if removed[d.(string)] == nil {
					keep = append(keep, d)
				}
			}
			r["DependsOn"] = keep
		}
		if r["Type"] == "AWS::SSM::Parameter" {
			delete(r["Properties"].(map[string]interface{}), "Tags")
		}
	}
	fix(doc)
	out, err := json.Marshal(doc)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// buildBootstraps builds the gateway and rollup bootstraps with
// scripts/build-lambda.sh, for the host's architecture (the test runs
// them), into a temporary directory.
func buildBootstraps(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	cmd := exec.Command("../../scripts/build-lambda.sh", dir)
	cmd.Env = append(os.Environ(), "LAMBDA_GOARCH="+runtime.GOARCH)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("scripts/build-lambda.sh: %v\n%s", err, out)
	}
	return dir
}

// zipBootstrap zips a bootstrap binary as the CDK asset of a function.
func zipBootstrap(t *testing.T, path string) []byte {
	t.Helper()
	bin, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	zw := zip.NewWriter(&buf)
	h := &zip.FileHeader{Name: "bootstrap", Method: zip.Deflate}
	h.SetMode(0o755)
	w, _ := zw.CreateHeader(h)
	w.Write(bin)
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// function is a bootstrap binary running against an emulated Lambda
// Runtime API (pkg/lambdaemu), as Lambda runs it.
type function struct {
	rt     *lambdaemu.Runtime
	stderr *syncBuffer
	done   chan struct{}
}

func startFunction(t *testing.T, bin string, env map[string]string, extra []string) *function {
	t.Helper()
	rt, err := lambdaemu.Start()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { rt.Close() })
	f := &function{rt: rt, stderr: &syncBuffer{}, done: make(chan struct{})}
	cmd := exec.Command(bin)
	cmd.Env = []string{"AWS_LAMBDA_RUNTIME_API=" + rt.Addr(), "PATH=" + os.Getenv("PATH"), "AWS_LAMBDA_FUNCTION_NAME=" + filepath.Base(filepath.Dir(bin))}
	for k, v := range env {
		cmd.Env = append(cmd.Env, k+"="+v)
	}
	cmd.Env = append(cmd.Env, extra...)
	cmd.Stdout, cmd.Stderr = io.Discard, f.stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() { cmd.Wait(); close(f.done) }()
	t.Cleanup(func() { cmd.Process.Kill(); <-f.done })
	return f
}

// invoke sends one event and returns the status and the whole body.
func (f *function) invoke(t *testing.T, event []byte) (int, string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	go func() {
		select {
		case <-f.done: // a process that died answers nothing
			cancel()
		case <-ctx.Done():
		}
	}()
	resp, err := f.rt.Invoke(ctx, event, time.Now().Add(time.Minute))
	if err == nil && resp.Err != nil {
		err = resp.Err
	}
	if err != nil {
		t.Fatalf("invoke: %v\nstderr: %s", err, f.stderr.String())
	}
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatalf("reading the response: %v", err)
	}
	return resp.Status, string(body)
}

// openAIUpstream answers chat completions in OpenAI's wire format, plain
// or streamed, with the model it was asked for in the reply.
func openAIUpstream(t *testing.T) *httptest.Server {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var req struct {
			Model  string `json:"model"`
			Stream bool   `json:"stream"`
		}
		json.NewDecoder(r.Body).Decode(&req)
		if r.URL.Path != "/v1/chat/completions" || r.Header.Get("Authorization") != "Bearer "+motoProviderKey {
			w.WriteHeader(http.StatusUnauthorized)
			io.WriteString(w, `{"error":{"message":"bad request","type":"invalid_request_error"}}`)
			return
		}
		reply := "reply from " + req.Model
		if !req.Stream {
			w.Header().Set("Content-Type", "application/json")
			fmt.Fprintf(w, `{"id":"chatcmpl-1","object":"chat.completion","created":1,"model":%q,"choices":[{"index":0,"message":{"role":"assistant","content":%q},"finish_reason":"stop"}],"usage":{"prompt_tokens":3,"completion_tokens":4,"total_tokens":7}}`, req.Model, reply)
			return
		}
		w.Header().Set("Content-Type", "text/event-stream")
		for _, part := range strings.SplitAfter(reply, " ") {
			fmt.Fprintf(w, "data: {\"id\":\"chatcmpl-1\",\"object\":\"chat.completion.chunk\",\"created\":1,\"model\":%q,\"choices\":[{\"index\":0,\"delta\":{\"content\":%q},\"finish_reason\":null}]}\n\n", req.Model, part)
		}
		fmt.Fprintf(w, "data: {\"id\":\"chatcmpl-1\",\"object\":\"chat.completion.chunk\",\"created\":1,\"model\":%q,\"choices\":[{\"index\":0,\"delta\":{},\"finish_reason\":\"stop\"}]}\n\n", req.Model)
		fmt.Fprintf(w, "data: {\"id\":\"chatcmpl-1\",\"object\":\"chat.completion.chunk\",\"created\":1,\"model\":%q,\"choices\":[],\"usage\":{\"prompt_tokens\":3,\"completion_tokens\":4,\"total_tokens\":7}}\n\ndata: [DONE]\n\n", req.Model)
	}))
	t.Cleanup(srv.Close)
	return srv
}

const (
	motoProviderKey = "sk-test-moto-provider-key-0000"
	motoTeamKey     = "llmgw_example_team_key_not_real" // the sample events' key
)

// motoTestConfig is the operator's parameter the test adds under the
// config path: a provider (its key a SecureString under the keys path), a
// route and the team of the sample events.
func motoTestConfig(upstream, keysPath string) string {
	return fmt.Sprintf(`
providers:
  up: {kind: openai, base_url: "%s/v1", keys: [{ssm: %sup/1}]}
routes:
  demo: {targets: [{provider: up, model: gpt-4.1}]}
teams:
  checkout:
    keys: [{id: example, sha256: %s}]
`, upstream, keysPath, teamkey.Hash(motoTeamKey))
}

// failingTable refuses every write: a table that is down, so the
// recorder spills.
type failingTable struct{}

func (failingTable) Put(context.Context, store.Item, store.Cond) (store.Item, error) {
	return store.Item{}, errors.New("table unavailable (test)")
}

func readEvent(t *testing.T, name string) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("../../events", name))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// usageRecords returns the stored usage records of team for today.
func usageRecords(t *testing.T, st store.Querier, team string) []store.Item {
	t.Helper()
	var out []store.Item
	if err := st.Query(context.Background(), store.UsagePK(team, time.Now()), "", "", func(it store.Item) bool {
		out = append(out, it)
		return true
	}); err != nil {
		t.Fatal(err)
	}
	return out
}

// mustAWSConfig points the test process's AWS SDK clients at moto.
func mustAWSConfig(t *testing.T, m *moto) {
	t.Helper()
	for _, kv := range m.env() {
		k, v, _ := strings.Cut(kv, "=")
		t.Setenv(k, v)
	}
}

func mustDynamo(t *testing.T, cfg aws.Config) *dynamodb.Client {
	t.Helper()
	return dynamodb.NewFromConfig(cfg)
}

// queueDepth returns the queue's visible plus in-flight messages.
func queueDepth(t *testing.T, cfg aws.Config, queueURL string) int {
	t.Helper()
	out, err := sqs.NewFromConfig(cfg).GetQueueAttributes(context.Background(), &sqs.GetQueueAttributesInput{
		QueueUrl:       aws.String(queueURL),
		AttributeNames: []sqstypes.QueueAttributeName{sqstypes.QueueAttributeNameApproximateNumberOfMessages, sqstypes.QueueAttributeNameApproximateNumberOfMessagesNotVisible},
	})
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, v := range out.Attributes {
		k, _ := strconv.Atoi(v)
		n += k
	}
	return n
}
