package resilience

import (
	"bytes"
	"context"
	"encoding/json"
	"encoding/pem"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws/protocol/eventstream"
)

// This file holds fake upstreams for the three wire formats the gateway
// speaks: OpenAI chat completions (SSE), Anthropic Messages (SSE with
// named events) and Bedrock Converse/ConverseStream (JSON and binary AWS
// event-stream frames). Each serves a scripted answer per request and
// counts what happened: requests, and requests whose handler saw its
// caller leave (context cancelled).

type kind string

const (
	openaiKind    kind = "openai"
	anthropicKind kind = "anthropic"
	bedrockKind   kind = "bedrock"
)

var allKinds = []kind{openaiKind, anthropicKind, bedrockKind}

// script is what a fake upstream does with one request.
type script struct {
	words      []string
	firstDelay time.Duration // before the response headers
	chunkDelay time.Duration // between two words
	// forever keeps a stream going (a word per chunkDelay, at most
	// foreverBound) until the caller leaves.
	forever bool
	stall   bool // never answer; wait for the caller to leave (bounded)
	// status answers with an error status before any byte; errType is the
	// provider's error type (OpenAI error.type, Anthropic error.type,
	// Bedrock X-Amzn-ErrorType / exception type) and errMsg its message.
	status     int
	errType    string
	errMsg     string
	retryAfter string
	// midError sends an in-band error after that many words (0: none);
	// cutAfter drops the connection after that many words (0: none).
	midError int
	cutAfter int
	// errorFirst sends an in-band error right after the stream's start,
	// before any content; abort drops the connection before any byte.
	errorFirst bool
	abort      bool
	// echo appends the credentials the request carried (Authorization,
	// x-api-key, api-key, X-Amz-Security-Token) to every error message and
	// to a response header: a hostile provider.
	echo bool
}

// foreverBound caps a forever stream: the test fails (the handler counts
// no cancellation) rather than hangs.
const foreverBound = 20 * time.Second

// fake is one fake upstream of one kind.
type fake struct {
	*httptest.Server
	kind      kind
	hits      atomic.Int64 // requests received
	cancelled atomic.Int64 // handlers that saw the caller leave
	completed atomic.Int64 // streams and bodies written to their end
	plan      atomic.Pointer[func(r *http.Request, body []byte, n int) script]
	forget    atomic.Bool // keep no request headers and bodies
	mu        sync.Mutex
	headers   []http.Header
	bodies    [][]byte
	hosts     []string
}

// newFake starts a fake upstream that answers every request with sc.
func newFake(t testing.TB, k kind, sc script) *fake {
	f := &fake{kind: k}
	f.set(func(*http.Request, []byte, int) script { return sc })
	f.Server = httptest.NewServer(http.HandlerFunc(f.serve))
	t.Cleanup(f.Close)
	return f
}

// newFakeTLS is newFake over HTTPS (a certificate of its own; see
// trustFake). The SDK sends a Bedrock API key (bearer) over HTTPS only.
func newFakeTLS(t testing.TB, k kind, sc script) *fake {
	f := &fake{kind: k}
	f.set(func(*http.Request, []byte, int) script { return sc })
	f.Server = httptest.NewTLSServer(http.HandlerFunc(f.serve))
	t.Cleanup(f.Close)
	return f
}

// trustFake makes the AWS SDK trust a TLS fake's certificate
// (AWS_CA_BUNDLE, for the rest of the test).
func trustFake(t *testing.T, f *fake) {
	bundle := filepath.Join(t.TempDir(), "ca.pem")
	pemCert := pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: f.Certificate().Raw})
	if err := os.WriteFile(bundle, pemCert, 0o600); err != nil {
		t.Fatal(err)
	}
	t.Setenv("AWS_CA_BUNDLE", bundle)
}

// set replaces the fake's plan: the script of request n (1-based).
func (f *fake) set(p func(r *http.Request, body []byte, n int) script) { f.plan.Store(&p) }

// setScript makes the fake answer every request with sc.
func (f *fake) setScript(sc script) {
	f.set(func(*http.Request, []byte, int) script { return sc })
}

func (f *fake) requestHeaders() []http.Header {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]http.Header(nil), f.headers...)
}

func (f *fake) requestBodies() [][]byte {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([][]byte(nil), f.bodies...)
}

// host is the Host header of request i (0-based).
func (f *fake) host(i int) string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.hosts[i]
}

// addr is host:port, for a Toxiproxy upstream.
func (f *fake) addr() string { return strings.TrimPrefix(f.URL, "http://") }

func (f *fake) serve(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	n := int(f.hits.Add(1))
	if !f.forget.Load() {
		f.mu.Lock()
		f.headers = append(f.headers, r.Header.Clone())
		f.bodies = append(f.bodies, body)
		f.hosts = append(f.hosts, r.Host)
		f.mu.Unlock()
	}
	sc := (*f.plan.Load())(r, body, n)
	ctx := r.Context()
	wi := wireFor(f.kind, body)

	if sc.echo {
		w.Header().Set("X-Echo-Credentials", credentials(r))
		sc.errMsg += " (request credentials: " + credentials(r) + ")"
	}
	if sc.stall {
		f.waitGone(ctx, foreverBound)
		return
	}
	if sc.firstDelay > 0 && f.sleep(ctx, sc.firstDelay) {
		return
	}
	if sc.abort {
		panic(http.ErrAbortHandler)
	}
	if sc.status != 0 {
		if sc.retryAfter != "" {
			w.Header().Set("Retry-After", sc.retryAfter)
		}
		wi.errorResponse(w, sc.status, sc.errType, sc.errMsg)
		f.completed.Add(1)
		return
	}
	stream := f.kind == bedrockKind && strings.HasSuffix(r.URL.Path, "/converse-stream") ||
		f.kind != bedrockKind && bytes.Contains(body, []byte(`"stream":true`))
	if !stream {
		wi.completion(w, strings.Join(sc.words, ""), len(sc.words))
		f.completed.Add(1)
		return
	}
	fl := w.(http.Flusher)
	wi.start(w)
	fl.Flush()
	if sc.errorFirst {
		wi.inBandError(w, sc.errType, sc.errMsg)
		fl.Flush()
		f.completed.Add(1)
		return
	}
	end := time.Now().Add(foreverBound)
	for i := 0; sc.forever || i < len(sc.words); i++ {
		if sc.midError > 0 && i == sc.midError {
			wi.inBandError(w, sc.errType, sc.errMsg)
			fl.Flush()
			f.completed.Add(1)
			return
		}
		if sc.cutAfter > 0 && i == sc.cutAfter {
			panic(http.ErrAbortHandler) // the connection drops mid-body
		}
		word := fmt.Sprintf(" w%d", i)
		if i < len(sc.words) {
			word = sc.words[i]
		}
		if err := wi.word(w, i, word); err != nil {
			f.waitGone(ctx, 5*time.Second)
			return
		}
		fl.Flush()
		if sc.chunkDelay > 0 && f.sleep(ctx, sc.chunkDelay) {
			return
		}
		if ctx.Err() != nil {
			f.cancelled.Add(1)
			return
		}
		if sc.forever && time.Now().After(end) {
			return // bounded: counted as neither completed nor cancelled
		}
	}
	wi.finish(w, len(sc.words))
	fl.Flush()
	f.completed.Add(1)
}

// sleep waits d; true (and counted) when the caller left meanwhile.
func (f *fake) sleep(ctx context.Context, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		f.cancelled.Add(1)
		return true
	case <-t.C:
		return false
	}
}

// waitGone waits (bounded) for the caller to leave and counts it.
func (f *fake) waitGone(ctx context.Context, bound time.Duration) {
	t := time.NewTimer(bound)
	defer t.Stop()
	select {
	case <-ctx.Done():
		f.cancelled.Add(1)
	case <-t.C:
	}
}

// credentials is every credential-bearing header of a request, as sent,
// and each credential again bare (no header name, no "Bearer "), as a
// provider that quotes "the key you used" would.
func credentials(r *http.Request) string {
	var parts []string
	for _, h := range []string{"X-Amz-Security-Token", "Authorization", "X-Api-Key", "Api-Key"} {
		if v := r.Header.Get(h); v != "" {
			parts = append(parts, h+": "+v, "key "+strings.TrimPrefix(v, "Bearer ")+" used")
		}
	}
	return strings.Join(parts, "; ")
}

// wire writes one kind's wire format.
type wire interface {
	start(w http.ResponseWriter)
	word(w http.ResponseWriter, i int, s string) error
	finish(w http.ResponseWriter, n int)
	inBandError(w http.ResponseWriter, typ, msg string)
	errorResponse(w http.ResponseWriter, status int, typ, msg string)
	completion(w http.ResponseWriter, text string, n int)
}

func wireFor(k kind, body []byte) wire {
	switch k {
	case anthropicKind:
		return anthropicWire{}
	case bedrockKind:
		return &bedrockWire{enc: eventstream.NewEncoder()}
	}
	return openaiWire{usage: bytes.Contains(body, []byte(`"include_usage":true`))}
}

func quote(s string) string { b, _ := json.Marshal(s); return string(b) }

// ---- OpenAI ----

type openaiWire struct{ usage bool }

const oaHead = `data: {"id":"chatcmpl-fake","object":"chat.completion.chunk","created":1741569952,"model":"up-model","choices":`

func (openaiWire) start(w http.ResponseWriter) {
	w.Header().Set("Content-Type", "text/event-stream; charset=utf-8")
	w.WriteHeader(http.StatusOK)
	io.WriteString(w, oaHead+`[{"index":0,"delta":{"role":"assistant","content":""},"finish_reason":null}]}`+"\n\n")
}

func (openaiWire) word(w http.ResponseWriter, _ int, s string) error {
	_, err := io.WriteString(w, oaHead+`[{"index":0,"delta":{"content":`+quote(s)+`},"finish_reason":null}]}`+"\n\n")
	return err
}

func (o openaiWire) finish(w http.ResponseWriter, n int) {
	io.WriteString(w, oaHead+`[{"index":0,"delta":{},"finish_reason":"stop"}]}`+"\n\n")
	if o.usage {
		io.WriteString(w, oaHead+fmt.Sprintf(`[],"usage":{"prompt_tokens":11,"completion_tokens":%d,"total_tokens":%d}}`, n, 11+n)+"\n\n")
	}
	io.WriteString(w, "data: [DONE]\n\n")
}

func (openaiWire) inBandError(w http.ResponseWriter, typ, msg string) {
	io.WriteString(w, `data: {"error":{"message":`+quote(msg)+`,"type":`+quote(typ)+`,"param":null,"code":null}}`+"\n\n")
}

func (openaiWire) errorResponse(w http.ResponseWriter, status int, typ, msg string) {
	if typ == "" {
		typ = map[int]string{400: "invalid_request_error", 401: "invalid_request_error", 429: "rate_limit_error"}[status]
		if typ == "" {
			typ = "server_error"
		}
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	io.WriteString(w, `{"error":{"message":`+quote(msg)+`,"type":`+quote(typ)+`,"param":null,"code":null}}`)
}

func (openaiWire) completion(w http.ResponseWriter, text string, n int) {
	w.Header().Set("Content-Type", "application/json")
	fmt.Fprintf(w, `{"id":"chatcmpl-fake","object":"chat.completion","created":1741570283,"model":"up-model","choices":[{"index":0,"message":{"role":"assistant","content":%s},"finish_reason":"stop"}],"usage":{"prompt_tokens":11,"completion_tokens":%d,"total_tokens":%d}}`,
		quote(text), n, 11+n)
}

// ---- Anthropic ----

type anthropicWire struct{}

func anthropicEvent(w io.Writer, name, data string) error {
	_, err := io.WriteString(w, "event: "+name+"\ndata: "+data+"\n\n")
	return err
}

func (anthropicWire) start(w http.ResponseWriter) {
	w.Header().Set("Content-Type", "text/event-stream; charset=utf-8")
	w.WriteHeader(http.StatusOK)
	anthropicEvent(w, "message_start", `{"type":"message_start","message":{"id":"msg_fake","type":"message","role":"assistant","content":[],"model":"claude-fake","stop_reason":null,"stop_sequence":null,"usage":{"input_tokens":25,"output_tokens":1}}}`)
	anthropicEvent(w, "content_block_start", `{"type":"content_block_start","index":0,"content_block":{"type":"text","text":""}}`)
}

func (anthropicWire) word(w http.ResponseWriter, _ int, s string) error {
	return anthropicEvent(w, "content_block_delta", `{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":`+quote(s)+`}}`)
}

func (anthropicWire) finish(w http.ResponseWriter, n int) {
	anthropicEvent(w, "content_block_stop", `{"type":"content_block_stop","index":0}`)
	anthropicEvent(w, "message_delta", fmt.Sprintf(`{"type":"message_delta","delta":{"stop_reason":"end_turn","stop_sequence":null},"usage":{"output_tokens":%d}}`, n))
	anthropicEvent(w, "message_stop", `{"type":"message_stop"}`)
}

func anthropicErrType(status int, typ string) string {
	if typ != "" {
		return typ
	}
	switch status {
	case 400:
		return "invalid_request_error"
	case 401:
		return "authentication_error"
	case 403:
		return "permission_error"
	case 429:
		return "rate_limit_error"
	case 529:
		return "overloaded_error"
	}
	return "api_error"
}

func (anthropicWire) inBandError(w http.ResponseWriter, typ, msg string) {
	anthropicEvent(w, "error", `{"type":"error","error":{"type":`+quote(anthropicErrType(0, typ))+`,"message":`+quote(msg)+`}}`)
}

func (anthropicWire) errorResponse(w http.ResponseWriter, status int, typ, msg string) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	io.WriteString(w, `{"type":"error","error":{"type":`+quote(anthropicErrType(status, typ))+`,"message":`+quote(msg)+`}}`)
}

func (anthropicWire) completion(w http.ResponseWriter, text string, n int) {
	w.Header().Set("Content-Type", "application/json")
	fmt.Fprintf(w, `{"id":"msg_fake","type":"message","role":"assistant","model":"claude-fake","content":[{"type":"text","text":%s}],"stop_reason":"end_turn","stop_sequence":null,"usage":{"input_tokens":25,"output_tokens":%d}}`, quote(text), n)
}

// ---- Bedrock ----

type bedrockWire struct{ enc *eventstream.Encoder }

func (b *bedrockWire) frame(w io.Writer, typ, payload string, exception bool) error {
	var msg eventstream.Message
	if exception {
		msg.Headers.Set(":message-type", eventstream.StringValue("exception"))
		msg.Headers.Set(":exception-type", eventstream.StringValue(typ))
	} else {
		msg.Headers.Set(":message-type", eventstream.StringValue("event"))
		msg.Headers.Set(":event-type", eventstream.StringValue(typ))
	}
	msg.Headers.Set(":content-type", eventstream.StringValue("application/json"))
	msg.Payload = []byte(payload)
	return b.enc.Encode(w, msg)
}

func (b *bedrockWire) start(w http.ResponseWriter) {
	w.Header().Set("Content-Type", "application/vnd.amazon.eventstream")
	w.Header().Set("x-amzn-RequestId", "0a1b2c3d-fake")
	w.WriteHeader(http.StatusOK)
	b.frame(w, "messageStart", `{"role":"assistant"}`, false)
}

func (b *bedrockWire) word(w http.ResponseWriter, _ int, s string) error {
	return b.frame(w, "contentBlockDelta", `{"contentBlockIndex":0,"delta":{"text":`+quote(s)+`}}`, false)
}

func (b *bedrockWire) finish(w http.ResponseWriter, n int) {
	b.frame(w, "contentBlockStop", `{"contentBlockIndex":0}`, false)
	b.frame(w, "messageStop", `{"stopReason":"end_turn"}`, false)
	b.frame(w, "metadata", fmt.Sprintf(`{"usage":{"inputTokens":13,"outputTokens":%d,"totalTokens":%d},"metrics":{"latencyMs":5}}`, n, 13+n), false)
}

func bedrockErrType(status int, typ string) string {
	if typ != "" {
		return typ
	}
	switch status {
	case 400:
		return "ValidationException"
	case 403:
		return "AccessDeniedException"
	case 404:
		return "ResourceNotFoundException"
	case 429:
		return "ThrottlingException"
	case 503:
		return "ServiceUnavailableException"
	}
	return "InternalServerException"
}

func (b *bedrockWire) inBandError(w http.ResponseWriter, typ, msg string) {
	if typ == "" {
		typ = "modelStreamErrorException"
	}
	b.frame(w, typ, `{"message":`+quote(msg)+`}`, true)
}

func (b *bedrockWire) errorResponse(w http.ResponseWriter, status int, typ, msg string) {
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("x-amzn-RequestId", "0a1b2c3d-fake")
	w.Header().Set("X-Amzn-ErrorType", bedrockErrType(status, typ)+":http://internal.amazon.com/coral/com.amazon.bedrock/")
	w.WriteHeader(status)
	io.WriteString(w, `{"message":`+quote(msg)+`}`)
}

func (b *bedrockWire) completion(w http.ResponseWriter, text string, n int) {
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("x-amzn-RequestId", "0a1b2c3d-fake")
	fmt.Fprintf(w, `{"output":{"message":{"role":"assistant","content":[{"text":%s}]}},"stopReason":"end_turn","usage":{"inputTokens":13,"outputTokens":%d,"totalTokens":%d},"metrics":{"latencyMs":5}}`, quote(text), n, 13+n)
}

// providerYAML is the config entry of a provider of kind k at an address
// (host:port): the adapter's own notion of where the upstream is (base_url
// for openai and anthropic, endpoint for bedrock). extra is appended inside
// the flow mapping (e.g. `, keys: [{env: X}]`).
func providerYAML(k kind, addr, extra string) string {
	switch k {
	case anthropicKind:
		return fmt.Sprintf(`{kind: anthropic, base_url: "http://%s"%s}`, addr, extra)
	case bedrockKind:
		return fmt.Sprintf(`{kind: bedrock, region: us-east-1, endpoint: "http://%s"%s}`, addr, extra)
	}
	return fmt.Sprintf(`{kind: openai, base_url: "http://%s/v1"%s}`, addr, extra)
}

// modelFor is an upstream model id that each adapter accepts.
func modelFor(k kind) string {
	switch k {
	case anthropicKind:
		return "claude-fake"
	case bedrockKind:
		return "anthropic.claude-fake-v1:0"
	}
	return "up-model"
}
