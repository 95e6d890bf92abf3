package bedrock_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/bedrockruntime"
	"github.com/aws/aws-sdk-go-v2/service/bedrockruntime/document"
	"github.com/aws/aws-sdk-go-v2/service/bedrockruntime/types"
	"github.com/aws/smithy-go/auth/bearer"

	"github.com/llmgw/llmgw/pkg/teams"
	"github.com/llmgw/llmgw/pkg/wire/bedrockwire"
)

// Converse and ConverseStream to a Bedrock target pass through: the body
// the SDK sent the gateway is the body the upstream gets, byte for byte
// (to the target's model path), and the upstream's answer - a JSON body,
// event-stream frames - is what the client gets, byte for byte.

// converseAnswer is the fake Bedrock's Converse body: members the
// canonical events do not carry (additionalModelResponseFields, trace,
// performanceConfig, metrics) and its own spacing.
const converseAnswer = `{"output":{"message":{"role":"assistant","content":[{"text":"Hello from Bedrock"}]}},"stopReason":"end_turn",` +
	`"usage":{"inputTokens":9,"outputTokens":4,"totalTokens":13},"metrics":{"latencyMs":321},` +
	`"additionalModelResponseFields":{"stop_sequence":null},"performanceConfig":{"latency":"optimized"}}`

// converseFrames is the fake's ConverseStream answer, encoded by the
// SDK's eventstream encoder (bedrockwire.AppendEvent).
func converseFrames() []byte {
	var f []byte
	for _, e := range [][2]string{
		{"messageStart", `{"role":"assistant"}`},
		{"contentBlockDelta", `{"contentBlockIndex":0,"delta":{"text":"Hello"}}`},
		{"contentBlockDelta", `{"contentBlockIndex":0,"delta":{"text":" from Bedrock"}}`},
		{"contentBlockStop", `{"contentBlockIndex":0}`},
		{"messageStop", `{"stopReason":"end_turn","additionalModelResponseFields":{"stop_sequence":null}}`},
		{"metadata", `{"usage":{"inputTokens":9,"outputTokens":4,"totalTokens":13},"metrics":{"latencyMs":321},"performanceConfig":{"latency":"optimized"}}`},
	} {
		f = bedrockwire.AppendEvent(f, e[0], []byte(e[1]))
	}
	return f
}

// fakeConverseBedrock answers /converse and /converse-stream as Bedrock
// does, recording the path and the exact body of each request; an
// invoke path is a 400 (a Converse body must not go there).
func fakeConverseBedrock(t *testing.T, rec *recorder) *httptest.Server {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		rec.add(r.URL.EscapedPath(), b)
		w.Header().Set("x-amzn-RequestId", "req-bedrock-1")
		switch _, op, _ := bedrockwire.ParsePath(r.URL.Path); op {
		case bedrockwire.Converse:
			w.Header().Set("Content-Type", "application/json")
			io.WriteString(w, converseAnswer)
		case bedrockwire.ConverseStream:
			w.Header().Set("Content-Type", bedrockwire.EventStreamType)
			w.Write(converseFrames())
		default:
			w.Header().Set("x-amzn-ErrorType", "ValidationException")
			w.WriteHeader(http.StatusBadRequest)
			w.Write(bedrockwire.AppendErrorBody(nil, "this fake serves converse only"))
		}
	}))
	t.Cleanup(srv.Close)
	return srv
}

// sentBodies records the bodies an HTTP client sends (what the SDK sent
// the gateway).
type sentBodies struct {
	next   http.RoundTripper
	mu     sync.Mutex
	bodies []string
}

func (s *sentBodies) RoundTrip(r *http.Request) (*http.Response, error) {
	if r.Body != nil {
		b, _ := io.ReadAll(r.Body)
		r.Body.Close()
		s.mu.Lock()
		s.bodies = append(s.bodies, string(b))
		s.mu.Unlock()
		r.Body = io.NopCloser(bytes.NewReader(b))
	}
	return s.next.RoundTrip(r)
}

func (s *sentBodies) last() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.bodies[len(s.bodies)-1]
}

// bedrockPassGateway is the harness gateway whose live target is the fake
// Bedrock (model), with static credentials to sign with.
func bedrockPassGateway(t *testing.T, up *httptest.Server, model string) *gateway {
	t.Setenv("AWS_ACCESS_KEY_ID", "AKIAIOSFODNN7EXAMPLE")
	t.Setenv("AWS_SECRET_ACCESS_KEY", "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY")
	t.Setenv("AWS_BEARER_TOKEN_BEDROCK", "")
	return gatewayWith(t, fmt.Sprintf("  live: {kind: bedrock, region: us-east-1, endpoint: %q}\n", up.URL), model)
}

// passInput is a Converse request holding members the canonical Prompt
// does not carry: translation would refuse or drop them.
func passInput() (msgs []types.Message, extra document.Interface, perf *types.PerformanceConfiguration, meta map[string]string) {
	return userText("Say hello"),
		document.NewLazyDocument(map[string]any{"top_k": 7, "anthropic_beta": []string{"context-1m-2025-08-07"}}),
		&types.PerformanceConfiguration{Latency: types.PerformanceConfigLatencyOptimized},
		map[string]string{"project": "alpha"}
}

func TestGoSDKConverseToBedrockTargetPassesThroughByteForByte(t *testing.T) {
	var rec recorder
	up := fakeConverseBedrock(t, &rec)
	model := "us.anthropic.claude-sonnet-4-5-20250929-v1:0"
	g := bedrockPassGateway(t, up, model)
	sent := &sentBodies{next: g.client.Transport}
	c := bedrockruntime.New(bedrockruntime.Options{
		Region: "us-east-1", BaseEndpoint: aws.String(g.URL), HTTPClient: &http.Client{Transport: sent},
		BearerAuthTokenProvider: bearer.StaticTokenProvider{Token: bearer.Token{Value: teamKey}},
		AuthSchemePreference:    []string{"httpBearerAuth"}, RetryMaxAttempts: 1,
	})
	msgs, extra, perf, meta := passInput()
	ctx := context.Background()
	out, err := c.Converse(ctx, &bedrockruntime.ConverseInput{ModelId: aws.String(profileID), Messages: msgs,
		AdditionalModelRequestFields: extra, PerformanceConfig: perf, RequestMetadata: meta,
		InferenceConfig: &types.InferenceConfiguration{MaxTokens: aws.Int32(64)}})
	if err != nil {
		t.Fatalf("Converse: %v", err)
	}
	path, body := rec.last()
	if want := "/model/" + strings.ReplaceAll(model, ":", "%3A") + "/converse"; path != want {
		t.Errorf("upstream path %s, want %s", path, want)
	}
	if body != sent.last() {
		t.Errorf("upstream body\n%s\nthe SDK sent the gateway\n%s", body, sent.last())
	}
	if !strings.Contains(body, `"performanceConfig"`) || !strings.Contains(body, `"top_k"`) || !strings.Contains(body, `"requestMetadata"`) {
		t.Errorf("upstream body lacks the members translation cannot carry: %s", body)
	}
	if got := out.Output.(*types.ConverseOutputMemberMessage).Value.Content[0].(*types.ContentBlockMemberText).Value; got != "Hello from Bedrock" ||
		aws.ToInt64(out.Metrics.LatencyMs) != 321 || out.PerformanceConfig == nil || out.PerformanceConfig.Latency != types.PerformanceConfigLatencyOptimized ||
		out.AdditionalModelResponseFields == nil {
		t.Errorf("answer %q latency %d performance %+v additional %v: want the upstream's", got, aws.ToInt64(out.Metrics.LatencyMs), out.PerformanceConfig, out.AdditionalModelResponseFields)
	}

	s, err := c.ConverseStream(ctx, &bedrockruntime.ConverseStreamInput{ModelId: aws.String("claude"), Messages: msgs,
		AdditionalModelRequestFields: extra, PerformanceConfig: perf, RequestMetadata: meta})
	if err != nil {
		t.Fatalf("ConverseStream: %v", err)
	}
	var text string
	var latency int64
	var streamPerf *types.PerformanceConfiguration
	for ev := range s.GetStream().Events() {
		switch v := ev.(type) {
		case *types.ConverseStreamOutputMemberContentBlockDelta:
			text += v.Value.Delta.(*types.ContentBlockDeltaMemberText).Value
		case *types.ConverseStreamOutputMemberMetadata:
			latency, streamPerf = aws.ToInt64(v.Value.Metrics.LatencyMs), v.Value.PerformanceConfig
		}
	}
	if err := s.GetStream().Err(); err != nil || text != "Hello from Bedrock" || latency != 321 || streamPerf == nil {
		t.Errorf("stream %q latency %d performance %+v: %v; want the upstream's", text, latency, streamPerf, err)
	}
	path, body = rec.last()
	if !strings.HasSuffix(path, "/converse-stream") || body != sent.last() {
		t.Errorf("upstream %s body\n%s\nthe SDK sent the gateway\n%s", path, body, sent.last())
	}
	for _, r := range g.records(t, 2) {
		if r.Provider != "live" || r.FallbackDepth != 1 || r.InputTokens != 9 || r.OutputTokens != 4 || string(r.API) != "converse" {
			t.Errorf("record %s depth %d tokens %d/%d api %s", r.Provider, r.FallbackDepth, r.InputTokens, r.OutputTokens, r.API)
		}
	}
}

// The bytes a client gets from a passthrough are the upstream's: the
// Converse body and every event-stream frame, CRCs included.
func TestConverseToBedrockTargetRelaysTheUpstreamBytes(t *testing.T) {
	var rec recorder
	up := fakeConverseBedrock(t, &rec)
	g := bedrockPassGateway(t, up, "amazon.nova-pro-v1:0")
	for _, tc := range []struct {
		op   string
		want []byte
	}{
		{"converse", []byte(converseAnswer)},
		{"converse-stream", converseFrames()},
	} {
		body := `{"messages":[{"role":"user","content":[{"text":"Say hello"}]}], "performanceConfig": {"latency":"optimized"}}`
		req, _ := http.NewRequest(http.MethodPost, g.URL+"/model/claude/"+tc.op, strings.NewReader(body))
		req.Header.Set("Authorization", "Bearer "+teamKey)
		req.Header.Set("Content-Type", "application/json")
		resp, err := g.client.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		got, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK || !bytes.Equal(got, tc.want) {
			t.Errorf("%s: status %d body\n%q\nwant the upstream's\n%q", tc.op, resp.StatusCode, got, tc.want)
		}
		if _, sentUp := rec.last(); sentUp != body {
			t.Errorf("%s: upstream got %s, want the client's body %s", tc.op, sentUp, body)
		}
	}
}

// A passthrough stream the upstream cuts after its first content frame
// raises the SDK's ModelStreamErrorException after the text relayed,
// never a clean end.
func TestGoSDKConverseStreamPassthroughCutRaisesModelStreamError(t *testing.T) {
	frames := converseFrames()
	var cut int // the end of the first contentBlockDelta frame
	for fr, i := bedrockwire.NewFrameReader(bytes.NewReader(frames)), 0; i < 2; i++ {
		f, _ := fr.Next()
		cut += len(f.Raw)
	}
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.ReadAll(r.Body)
		w.Header().Set("Content-Type", bedrockwire.EventStreamType)
		w.Write(frames[:cut])
		w.(http.Flusher).Flush()
		if conn, _, err := http.NewResponseController(w).Hijack(); err == nil {
			conn.Close()
		}
	}))
	t.Cleanup(up.Close)
	g := bedrockPassGateway(t, up, "amazon.nova-pro-v1:0")
	out, err := goClient(g, teamKey).ConverseStream(context.Background(), &bedrockruntime.ConverseStreamInput{ModelId: aws.String("claude"), Messages: userText("hi")})
	if err != nil {
		t.Fatalf("ConverseStream: %v", err)
	}
	var text string
	for ev := range out.GetStream().Events() {
		switch v := ev.(type) {
		case *types.ConverseStreamOutputMemberContentBlockDelta:
			text += v.Value.Delta.(*types.ContentBlockDeltaMemberText).Value
		case *types.ConverseStreamOutputMemberMessageStop:
			t.Error("a cut stream ended with messageStop")
		}
	}
	var mse *types.ModelStreamErrorException
	if err := out.GetStream().Err(); !errors.As(err, &mse) {
		t.Fatalf("stream error %T %v, want ModelStreamErrorException", err, err)
	}
	if text != "Hello" {
		t.Errorf("text before the cut %q", text)
	}
}

// An exception a Bedrock upstream sends inside a passthrough stream after
// its first content reaches the client as that exception.
func TestGoSDKConverseStreamPassthroughRelaysTheUpstreamsException(t *testing.T) {
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.ReadAll(r.Body)
		w.Header().Set("Content-Type", bedrockwire.EventStreamType)
		f := bedrockwire.AppendEvent(nil, "messageStart", []byte(`{"role":"assistant"}`))
		f = bedrockwire.AppendEvent(f, "contentBlockDelta", []byte(`{"contentBlockIndex":0,"delta":{"text":"Hello"}}`))
		f = bedrockwire.AppendException(f, "internalServerException", "upstream trouble")
		w.Write(f)
	}))
	t.Cleanup(up.Close)
	g := bedrockPassGateway(t, up, "amazon.nova-pro-v1:0")
	out, err := goClient(g, teamKey).ConverseStream(context.Background(), &bedrockruntime.ConverseStreamInput{ModelId: aws.String("claude"), Messages: userText("hi")})
	if err != nil {
		t.Fatalf("ConverseStream: %v", err)
	}
	for range out.GetStream().Events() {
	}
	var ise *types.InternalServerException
	if err := out.GetStream().Err(); !errors.As(err, &ise) {
		t.Fatalf("stream error %T %v, want the upstream's InternalServerException", err, err)
	}
}

// A dead first Bedrock target (connection refused) is left for the second
// unseen: the passthrough fails over before its first byte, the stream
// and the body alike.
func TestGoSDKConversePassthroughFailsOverFromADeadBedrockTarget(t *testing.T) {
	t.Setenv("AWS_ACCESS_KEY_ID", "AKIAIOSFODNN7EXAMPLE")
	t.Setenv("AWS_SECRET_ACCESS_KEY", "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY")
	t.Setenv("AWS_BEARER_TOKEN_BEDROCK", "")
	var rec recorder
	up := fakeConverseBedrock(t, &rec)
	g := serveYAML(t, fmt.Sprintf(`defaults: {attempts: 1}
providers:
  east: {kind: bedrock, region: us-east-1, endpoint: %q}
  west: {kind: bedrock, region: us-west-2, endpoint: %q}
routes:
  claude:
    targets:
      - {provider: east, model: us.amazon.nova-pro-v1:0}
      - {provider: west, model: us.amazon.nova-pro-v1:0}
teams:
  aws:
    keys: [{id: k1, sha256: %q}]
`, deadURL(t), up.URL, teams.HashKey(teamKey)))
	c := goClient(g, teamKey)
	ctx := context.Background()
	out, err := c.Converse(ctx, &bedrockruntime.ConverseInput{ModelId: aws.String("claude"), Messages: userText("Say hello")})
	if err != nil {
		t.Fatalf("Converse: %v", err)
	}
	if got := out.Output.(*types.ConverseOutputMemberMessage).Value.Content[0].(*types.ContentBlockMemberText).Value; got != "Hello from Bedrock" {
		t.Errorf("answer %q", got)
	}
	s, err := c.ConverseStream(ctx, &bedrockruntime.ConverseStreamInput{ModelId: aws.String("claude"), Messages: userText("Say hello")})
	if err != nil {
		t.Fatalf("ConverseStream: %v", err)
	}
	var text string
	for ev := range s.GetStream().Events() {
		if d, ok := ev.(*types.ConverseStreamOutputMemberContentBlockDelta); ok {
			text += d.Value.Delta.(*types.ContentBlockDeltaMemberText).Value
		}
	}
	if err := s.GetStream().Err(); err != nil || text != "Hello from Bedrock" {
		t.Errorf("stream %q: %v", text, err)
	}
	for _, r := range g.records(t, 2) {
		if r.Provider != "west" || r.FallbackDepth != 1 {
			t.Errorf("record: provider %s depth %d, want west after the dead east", r.Provider, r.FallbackDepth)
		}
	}
}
