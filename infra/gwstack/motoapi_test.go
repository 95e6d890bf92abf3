package gwstack

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"encoding/xml"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	v4 "github.com/aws/aws-sdk-go-v2/aws/signer/v4"
)

// The CloudFormation, S3 and Lambda calls of the deploy test are plain
// SigV4-signed HTTP requests (the module has no SDK clients for those
// services, and the test needs four calls); DynamoDB, SSM and SQS use the
// SDK clients the gateway itself uses.

const (
	motoRegion  = "us-east-1"
	motoAccount = "123456789012" // moto's default account
)

// moto is a moto server on loopback, started by startMoto.
type moto struct {
	url string
	log *syncBuffer
}

// motoMissing says why moto cannot run here, or "".
func motoMissing() string {
	if _, err := exec.LookPath("python3"); err != nil {
		return "python3 is not installed"
	}
	if out, err := exec.Command("python3", "-c", "import moto, moto.server, flask").CombinedOutput(); err != nil {
		return "the moto python3 package (moto[server] 5.x) is not installed: " + strings.TrimSpace(lastLine(string(out)))
	}
	return ""
}

func lastLine(s string) string {
	s = strings.TrimSpace(s)
	return s[strings.LastIndex(s, "\n")+1:]
}

// startMoto runs `python3 -m moto.server` on a free loopback port until the
// test ends.
func startMoto(t *testing.T) *moto {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := ln.Addr().(*net.TCPAddr).Port
	ln.Close()
	m := &moto{url: "http://127.0.0.1:" + strconv.Itoa(port), log: &syncBuffer{}}
	cmd := exec.Command("python3", "-m", "moto.server", "-H", "127.0.0.1", "-p", strconv.Itoa(port))
	cmd.Stdout, cmd.Stderr = m.log, m.log
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	go func() { cmd.Wait(); close(done) }()
	t.Cleanup(func() { cmd.Process.Kill(); <-done })
	for deadline := time.Now().Add(60 * time.Second); ; {
		if resp, err := http.Get(m.url + "/moto-api/"); err == nil {
			resp.Body.Close()
			return m
		}
		select {
		case <-done:
			t.Fatalf("moto server exited: %s", m.log.String())
		case <-time.After(100 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			t.Fatalf("moto server did not start: %s", m.log.String())
		}
	}
}

// env is the environment that points the AWS SDKs (and the functions) at
// moto, with dummy credentials.
func (m *moto) env() []string {
	return []string{"AWS_ENDPOINT_URL=" + m.url, "AWS_REGION=" + motoRegion, "AWS_DEFAULT_REGION=" + motoRegion,
		"AWS_ACCESS_KEY_ID=testing", "AWS_SECRET_ACCESS_KEY=testing", "AWS_EC2_METADATA_DISABLED=true"}
}

// do sends a SigV4-signed request for service and returns the body; a
// status >= 300 fails the test with moto's answer.
func (m *moto) do(t *testing.T, service, method, path string, header http.Header, body []byte) []byte {
	t.Helper()
	req, err := http.NewRequest(method, m.url+path, bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	for k, v := range header {
		req.Header[k] = v
	}
	sum := sha256.Sum256(body)
	hash := hex.EncodeToString(sum[:])
	req.Header.Set("X-Amz-Content-Sha256", hash)
	creds := aws.Credentials{AccessKeyID: "testing", SecretAccessKey: "testing"}
	if err := v4.NewSigner().SignHTTP(context.Background(), creds, req, hash, service, motoRegion, time.Now()); err != nil {
		t.Fatal(err)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	out, _ := io.ReadAll(resp.Body)
	if resp.StatusCode >= 300 {
		t.Fatalf("%s %s %s: %d %s", service, method, path, resp.StatusCode, out)
	}
	return out
}

// cfn calls a CloudFormation Query API action.
func (m *moto) cfn(t *testing.T, action string, params url.Values, out any) {
	t.Helper()
	params.Set("Action", action)
	params.Set("Version", "2010-05-15")
	body := m.do(t, "cloudformation", "POST", "/", http.Header{"Content-Type": {"application/x-www-form-urlencoded"}}, []byte(params.Encode()))
	if out != nil {
		if err := xml.Unmarshal(body, out); err != nil {
			t.Fatalf("%s: %v: %s", action, err, body)
		}
	}
}

// stack is the part of DescribeStacks the test reads.
type stack struct {
	Status  string `xml:"StackStatus"`
	Reason  string `xml:"StackStatusReason"`
	Outputs []struct {
		Key   string `xml:"OutputKey"`
		Value string `xml:"OutputValue"`
	} `xml:"Outputs>member"`
}

// output returns the stack output key.
func (s stack) output(t *testing.T, key string) string {
	t.Helper()
	for _, o := range s.Outputs {
		if o.Key == key {
			return o.Value
		}
	}
	t.Fatalf("stack has no output %s: %+v", key, s.Outputs)
	return ""
}

// deployStack creates the stack from the template and waits until
// CloudFormation is done; a failed deploy fails the test with the failed
// resources' reasons.
func (m *moto) deployStack(t *testing.T, name string, template []byte) stack {
	t.Helper()
	m.cfn(t, "CreateStack", url.Values{
		"StackName":             {name},
		"TemplateBody":          {string(template)},
		"Capabilities.member.1": {"CAPABILITY_IAM"},
		"Capabilities.member.2": {"CAPABILITY_NAMED_IAM"},
		"OnFailure":             {"DO_NOTHING"},
	}, nil)
	var st stack
	for deadline := time.Now().Add(2 * time.Minute); ; time.Sleep(200 * time.Millisecond) {
		var out struct {
			Stacks []stack `xml:"DescribeStacksResult>Stacks>member"`
		}
		m.cfn(t, "DescribeStacks", url.Values{"StackName": {name}}, &out)
		if len(out.Stacks) != 1 {
			t.Fatalf("DescribeStacks: %+v", out)
		}
		st = out.Stacks[0]
		if !strings.HasSuffix(st.Status, "_IN_PROGRESS") || time.Now().After(deadline) {
			break
		}
	}
	if st.Status != "CREATE_COMPLETE" {
		var ev struct {
			Events []struct {
				ID, Type, Status, Reason string
			} `xml:"DescribeStackEventsResult>StackEvents>member"`
		}
		m.cfn(t, "DescribeStackEvents", url.Values{"StackName": {name}}, &ev)
		t.Fatalf("stack %s: %s %s; events: %+v\nmoto log (tail): %s", name, st.Status, st.Reason, ev.Events, tail(m.log.String(), 4000))
	}
	return st
}

// physicalID returns the physical ID of the stack's resource logicalID.
func (m *moto) physicalID(t *testing.T, stackName, logicalID string) string {
	t.Helper()
	var out struct {
		Resources []struct {
			Logical  string `xml:"LogicalResourceId"`
			Physical string `xml:"PhysicalResourceId"`
		} `xml:"DescribeStackResourcesResult>StackResources>member"`
	}
	m.cfn(t, "DescribeStackResources", url.Values{"StackName": {stackName}}, &out)
	for _, r := range out.Resources {
		if r.Logical == logicalID {
			return r.Physical
		}
	}
	t.Fatalf("stack %s has no resource %s", stackName, logicalID)
	return ""
}

// functionEnv returns the environment variables of a deployed function.
func (m *moto) functionEnv(t *testing.T, name string) map[string]string {
	t.Helper()
	var cfg struct {
		Environment struct{ Variables map[string]string }
	}
	body := m.do(t, "lambda", "GET", "/2015-03-31/functions/"+url.PathEscape(name)+"/configuration", nil, nil)
	if err := json.Unmarshal(body, &cfg); err != nil {
		t.Fatalf("function configuration: %v: %s", err, body)
	}
	return cfg.Environment.Variables
}

// putObject creates the bucket when needed and stores body under key.
func (m *moto) putObject(t *testing.T, bucket, key string, body []byte) {
	t.Helper()
	m.do(t, "s3", "PUT", "/"+bucket, nil, nil) // idempotent in us-east-1
	m.do(t, "s3", "PUT", "/"+bucket+"/"+key, http.Header{"Content-Type": {"application/zip"}}, body)
}

func tail(s string, n int) string {
	if len(s) > n {
		return "..." + s[len(s)-n:]
	}
	return s
}

// cfnLintMissing says why cfn-lint cannot run here, or "".
func cfnLintMissing() string {
	out, err := exec.Command("cfn-lint", "--version").CombinedOutput()
	if err != nil {
		return fmt.Sprintf("cfn-lint (the cfn-lint python3 package) is not installed: %v %s", err, strings.TrimSpace(string(out)))
	}
	return ""
}

// syncBuffer is a goroutine-safe buffer for a process's output.
type syncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}
