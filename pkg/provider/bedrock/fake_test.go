package bedrock_test

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws/protocol/eventstream"

	"github.com/llmgw/llmgw/pkg/config"
	"github.com/llmgw/llmgw/pkg/provider/bedrock"
)

// This file is a fake Bedrock runtime endpoint that speaks the real wire
// protocol: Converse answers JSON as the REST API does, ConverseStream
// answers application/vnd.amazon.eventstream with binary event-stream
// frames, and errors carry X-Amzn-ErrorType. InvokeModel and CountTokens
// answer JSON, InvokeModelWithResponseStream an event stream of chunk
// events (chunkEvents). The real SDK client is
// pointed at it, signs its requests with fake static credentials and
// decodes its answers.

// event is one event-stream frame: an event (messageStart, ...) or, when
// exception is set, an exception (throttlingException, ...).
type event struct {
	typ       string
	payload   string
	exception bool
}

func ev(typ, payload string) event { return event{typ: typ, payload: payload} }
func exc(typ, msg string) event {
	return event{typ: typ, payload: `{"message":` + quote(msg) + `}`, exception: true}
}

func quote(s string) string { b, _ := json.Marshal(s); return string(b) }

// reply is the fake's answer to one call.
type reply struct {
	status  int    // an error status; 0 means 200
	errType string // X-Amzn-ErrorType of an error
	body    string // the JSON body of Converse or of an error
	events  []event
	// hold keeps a stream open after its events until the client leaves.
	hold bool
	// garbage is written after the events: a corrupt frame.
	garbage []byte
}

// recorded is one request the fake received.
type recorded struct {
	method, path string
	body         map[string]any
	raw          []byte
	header       http.Header
}

// fakeBedrock serves scripted replies in order; the last one repeats.
type fakeBedrock struct {
	t       *testing.T
	srv     *httptest.Server
	mu      sync.Mutex
	replies []reply
	reqs    []recorded
}

func newFake(t *testing.T, replies ...reply) *fakeBedrock {
	t.Helper()
	f := &fakeBedrock{t: t, replies: replies}
	f.srv = httptest.NewServer(http.HandlerFunc(f.serve))
	t.Cleanup(f.srv.Close)
	return f
}

// newFakeTLS is newFake over HTTPS, with a certificate of its own.
func newFakeTLS(t *testing.T, replies ...reply) *fakeBedrock {
	t.Helper()
	f := &fakeBedrock{t: t, replies: replies}
	f.srv = httptest.NewTLSServer(http.HandlerFunc(f.serve))
	t.Cleanup(f.srv.Close)
	return f
}

func (f *fakeBedrock) serve(w http.ResponseWriter, r *http.Request) {
	raw, _ := io.ReadAll(r.Body)
	rec := recorded{method: r.Method, path: r.URL.EscapedPath(), raw: raw, header: r.Header.Clone()}
	if err := json.Unmarshal(raw, &rec.body); err != nil {
		f.t.Errorf("fake bedrock: request body is not JSON: %v: %s", err, raw)
	}
	f.mu.Lock()
	f.reqs = append(f.reqs, rec)
	rp := f.replies[min(len(f.reqs), len(f.replies))-1]
	f.mu.Unlock()

	if !strings.HasPrefix(r.Header.Get("Authorization"), "AWS4-HMAC-SHA256 ") {
		f.t.Errorf("fake bedrock: request is not SigV4-signed: %q", r.Header.Get("Authorization"))
	}
	w.Header().Set("x-amzn-RequestId", "0a1b2c3d-fake-request-id")
	if rp.status != 0 {
		w.Header().Set("Content-Type", "application/json")
		w.Header().Set("X-Amzn-ErrorType", rp.errType+":http://internal.amazon.com/coral/com.amazon.bedrock/")
		w.WriteHeader(rp.status)
		io.WriteString(w, rp.body)
		return
	}
	if strings.HasSuffix(r.URL.Path, "/converse") || strings.HasSuffix(r.URL.Path, "/invoke") || strings.HasSuffix(r.URL.Path, "/count-tokens") {
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, rp.body)
		return
	}
	w.Header().Set("Content-Type", "application/vnd.amazon.eventstream")
	w.WriteHeader(http.StatusOK)
	writeEvents(w, rp.events)
	if len(rp.garbage) > 0 {
		w.Write(rp.garbage)
	}
	if rp.hold {
		select {
		case <-r.Context().Done():
		case <-time.After(10 * time.Second):
		}
	}
}

// writeEvents encodes events as AWS event-stream frames, flushing each.
func writeEvents(w io.Writer, events []event) {
	enc := eventstream.NewEncoder()
	for _, e := range events {
		var msg eventstream.Message
		if e.exception {
			msg.Headers.Set(":message-type", eventstream.StringValue("exception"))
			msg.Headers.Set(":exception-type", eventstream.StringValue(e.typ))
		} else {
			msg.Headers.Set(":message-type", eventstream.StringValue("event"))
			msg.Headers.Set(":event-type", eventstream.StringValue(e.typ))
		}
		msg.Headers.Set(":content-type", eventstream.StringValue("application/json"))
		msg.Payload = []byte(e.payload)
		if err := enc.Encode(w, msg); err != nil {
			return
		}
		if fl, ok := w.(http.Flusher); ok {
			fl.Flush()
		}
	}
}

func (f *fakeBedrock) requests() []recorded {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]recorded(nil), f.reqs...)
}

// awsEnv isolates the AWS SDK from the machine: fake static credentials,
// no shared files, no instance metadata, no endpoint override.
func awsEnv(t *testing.T) {
	t.Setenv("AWS_ACCESS_KEY_ID", "AKIDFAKEFAKEFAKE")
	t.Setenv("AWS_SECRET_ACCESS_KEY", "fake-secret-key")
	t.Setenv("AWS_SESSION_TOKEN", "")
	t.Setenv("AWS_PROFILE", "")
	t.Setenv("AWS_REGION", "")
	t.Setenv("AWS_DEFAULT_REGION", "")
	t.Setenv("AWS_CONFIG_FILE", "/nonexistent/aws-config")
	t.Setenv("AWS_SHARED_CREDENTIALS_FILE", "/nonexistent/aws-credentials")
	t.Setenv("AWS_EC2_METADATA_DISABLED", "true")
	t.Setenv("AWS_ENDPOINT_URL", "")
	t.Setenv("AWS_ENDPOINT_URL_BEDROCK_RUNTIME", "")
	t.Setenv("AWS_CA_BUNDLE", "")
	t.Setenv("AWS_BEARER_TOKEN_BEDROCK", "")
}

// newAdapter builds the adapter the way the factory does, pointed at the
// fake with the provider's endpoint.
func newAdapter(t *testing.T, f *fakeBedrock) *bedrock.Adapter {
	t.Helper()
	awsEnv(t)
	a, err := bedrock.New(context.Background(), "br", &config.Provider{Kind: "bedrock", Region: "us-east-1", Endpoint: f.srv.URL}, nil)
	if err != nil {
		t.Fatal(err)
	}
	return a
}

// streamPath is the ConverseStream path for a model id.
func streamPath(model string) string {
	return "/model/" + strings.ReplaceAll(url.PathEscape(model), ":", "%3A") + "/converse-stream"
}

// Common event scripts, with payloads as Bedrock sends them.

func textEvents(parts ...string) []event {
	evs := []event{ev("messageStart", `{"role":"assistant"}`)}
	for _, p := range parts {
		evs = append(evs, ev("contentBlockDelta", `{"contentBlockIndex":0,"delta":{"text":`+quote(p)+`}}`))
	}
	return append(evs, ev("contentBlockStop", `{"contentBlockIndex":0}`))
}

func stopEvents(reason string, in, out int) []event {
	return []event{
		ev("messageStop", `{"stopReason":"`+reason+`"}`),
		ev("metadata", `{"usage":{"inputTokens":`+itoa(in)+`,"outputTokens":`+itoa(out)+`,"totalTokens":`+itoa(in+out)+`},"metrics":{"latencyMs":123}}`),
	}
}

func itoa(n int) string { b, _ := json.Marshal(n); return string(b) }

func concat(parts ...[]event) []event {
	var out []event
	for _, p := range parts {
		out = append(out, p...)
	}
	return out
}

// toolEvents is a text block (index 0) followed by two tool-use blocks
// (bedrock indices 1 and 2, OpenAI indices 0 and 1), arguments in pieces.
func toolEvents() []event {
	return concat(textEvents("Let me check."), []event{
		ev("contentBlockStart", `{"contentBlockIndex":1,"start":{"toolUse":{"toolUseId":"tooluse_A1","name":"get_weather"}}}`),
		ev("contentBlockDelta", `{"contentBlockIndex":1,"delta":{"toolUse":{"input":"{\"city\":"}}}`),
		ev("contentBlockDelta", `{"contentBlockIndex":1,"delta":{"toolUse":{"input":"\"Paris\"}"}}}`),
		ev("contentBlockStop", `{"contentBlockIndex":1}`),
		ev("contentBlockStart", `{"contentBlockIndex":2,"start":{"toolUse":{"toolUseId":"tooluse_B2","name":"get_time"}}}`),
		ev("contentBlockDelta", `{"contentBlockIndex":2,"delta":{"toolUse":{"input":"{\"tz\":\"CET\"}"}}}`),
		ev("contentBlockStop", `{"contentBlockIndex":2}`),
	}, stopEvents("tool_use", 20, 30))
}
