package bedrock_test

import (
	"bytes"
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/llmgw/llmgw/pkg/config"
	"github.com/llmgw/llmgw/pkg/exchange"
	"github.com/llmgw/llmgw/pkg/gwerr"
	"github.com/llmgw/llmgw/pkg/provider"
	"github.com/llmgw/llmgw/pkg/provider/bedrock"
	"github.com/llmgw/llmgw/pkg/wire/bedrockwire"
)

// A Converse client's request (exchange.Converse) at a Bedrock target
// passes through: the client's body to the target's model path, signed;
// the answer relayed as Raw events holding the upstream's exact bytes.

// converseBody holds members the canonical Prompt does not carry.
const converseBody = `{"messages":[{"role":"user","content":[{"text":"hi"}]}],  "additionalModelRequestFields":{"top_k":3},"performanceConfig":{"latency":"optimized"}}`

func converseCall(stream bool) *provider.Call {
	rq := &exchange.Request{API: exchange.Converse, Stream: stream, Body: []byte(converseBody)}
	model := "us.anthropic.claude-sonnet-4-5-20250929-v1:0"
	return &provider.Call{Req: rq, Step: config.Step{ID: "br/" + model, Provider: "br", Model: model}}
}

// encode is the event-stream bytes of events.
func encode(events []event) []byte {
	var b bytes.Buffer
	writeEvents(&b, events)
	return b.Bytes()
}

func TestConverseStreamPassthroughRelaysFramesByteForByte(t *testing.T) {
	good := toolEvents()
	withBad := append(append([]event{}, good[:2]...), ev("contentBlockDelta", `{"contentBlockIndex":0,"delta":{"text":`)) // not JSON
	withBad = append(withBad, good[2:]...)
	f := newFake(t, reply{events: withBad})
	call := converseCall(true)
	s, err := newAdapter(t, f).Send(context.Background(), call)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	var relayed []byte
	var content, finishes int
	var finish string
	for {
		ev, err := s.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatalf("Next: %v", err)
		}
		if ev.Kind != exchange.Raw || ev.RawAPI != exchange.Converse {
			t.Fatalf("event %+v: want Raw converse frames", ev)
		}
		relayed = append(relayed, ev.Raw...)
		if ev.Flags&exchange.HasContent != 0 {
			content++
		}
		if ev.Flags&exchange.HasFinish != 0 {
			finishes++
			finish = ev.Finish
		}
	}
	if !bytes.Equal(relayed, encode(good)) {
		t.Errorf("relayed frames differ from the upstream's (the malformed one dropped)")
	}
	// text delta, two tool starts, three argument deltas
	if content != 6 || finishes != 1 || finish != exchange.FinishToolCalls {
		t.Errorf("content frames %d finishes %d (%s), want 6, 1 tool_calls", content, finishes, finish)
	}
	if u := s.Usage(); u.Input != 20 || u.Output != 30 || u.Estimated {
		t.Errorf("usage %+v, want the metadata event's 20/30", u)
	}
	if call.Req.Trace.MalformedFrames != 1 {
		t.Errorf("malformed frames %d, want 1", call.Req.Trace.MalformedFrames)
	}
	r := f.requests()[0]
	if string(r.raw) != converseBody || r.path != streamPath(call.Step.Model) {
		t.Errorf("upstream %s got %s, want the client's body", r.path, r.raw)
	}
}

func TestConversePassthroughWholeBody(t *testing.T) {
	answer := `{"output":{"message":{"role":"assistant","content":[{"text":"Hello"}]}},"stopReason":"max_tokens","usage":{"inputTokens":5,"outputTokens":2,"totalTokens":9,"cacheReadInputTokens":2,"cacheWriteInputTokens":0},"metrics":{"latencyMs":9},"trace":{"x":1}}`
	f := newFake(t, reply{body: answer})
	call := converseCall(false)
	call.Req.OutputCap = 100 // the admitted cap is added to inferenceConfig
	s, err := newAdapter(t, f).Send(context.Background(), call)
	if err != nil {
		t.Fatal(err)
	}
	ev, err := s.Next()
	if err != nil || ev.Kind != exchange.Raw || string(ev.Raw) != answer || ev.Flags&exchange.Whole == 0 || ev.Finish != exchange.FinishLength {
		t.Fatalf("event %+v %v: want the upstream's body whole, finish length", ev, err)
	}
	if u := s.Usage(); u.Input != 7 || u.Output != 2 || u.CacheRead != 2 {
		t.Errorf("usage %+v, want input 7 (cached included), output 2", u)
	}
	want := strings.TrimSuffix(converseBody, "}") + `,"inferenceConfig":{"maxTokens":100}}`
	if r := f.requests()[0]; string(r.raw) != want || !strings.HasSuffix(r.path, "/converse") {
		t.Errorf("upstream %s got %s\nwant %s", r.path, r.raw, want)
	}
}

// An exception inside a passthrough stream is classified by its type and
// carries it (gwerr.Upstream), as the SDK's path does.
func TestConverseStreamPassthroughException(t *testing.T) {
	f := newFake(t, reply{events: concat(textEvents("Hi"), []event{exc("throttlingException", "slow down")})})
	s, err := newAdapter(t, f).Send(context.Background(), converseCall(true))
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	for {
		_, err = s.Next()
		if err != nil {
			break
		}
	}
	var up *gwerr.Upstream
	if gwerr.As(err).Category != gwerr.RateLimited || !errors.As(err, &up) || up.Type != "ThrottlingException" || up.Service != bedrockwire.Service {
		t.Fatalf("err %v: want rate_limited carrying the upstream's ThrottlingException", err)
	}
}

// With AWS_BEARER_TOKEN_BEDROCK set the passthrough authenticates as the
// SDK does: the Bedrock API key as a bearer token, no signature.
func TestConversePassthroughWithABedrockAPIKey(t *testing.T) {
	var auth string
	srv := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		auth = r.Header.Get("Authorization")
		io.ReadAll(r.Body)
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, `{"output":{"message":{"role":"assistant","content":[{"text":"ok"}]}},"stopReason":"end_turn","usage":{"inputTokens":1,"outputTokens":1,"totalTokens":2}}`)
	}))
	t.Cleanup(srv.Close)
	awsEnv(t)
	t.Setenv("AWS_BEARER_TOKEN_BEDROCK", "bedrock-api-key-test")
	a, err := bedrock.New(context.Background(), "br", &config.Provider{Kind: "bedrock", Region: "us-east-1", Endpoint: srv.URL}, srv.Client())
	if err != nil {
		t.Fatal(err)
	}
	if _, err := a.Send(context.Background(), converseCall(false)); err != nil {
		t.Fatal(err)
	}
	if auth != "Bearer bedrock-api-key-test" {
		t.Errorf("Authorization %q, want the Bedrock API key as a bearer token", auth)
	}
}
