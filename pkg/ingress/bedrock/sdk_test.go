package bedrock_test

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/bedrockruntime"
	"github.com/aws/aws-sdk-go-v2/service/bedrockruntime/types"
	"github.com/aws/smithy-go/auth/bearer"
)

// goClient is aws-sdk-go-v2's bedrockruntime client pointed at the
// gateway with the team key as a Bedrock API key (bearer auth), retries
// off.
func goClient(g *gateway, key string) *bedrockruntime.Client {
	return bedrockruntime.New(bedrockruntime.Options{
		Region:                  "us-east-1",
		BaseEndpoint:            aws.String(g.URL),
		HTTPClient:              g.client,
		BearerAuthTokenProvider: bearer.StaticTokenProvider{Token: bearer.Token{Value: key}},
		AuthSchemePreference:    []string{"httpBearerAuth"},
		RetryMaxAttempts:        1,
	})
}

func userText(s string) []types.Message {
	return []types.Message{{Role: types.ConversationRoleUser, Content: []types.ContentBlock{&types.ContentBlockMemberText{Value: s}}}}
}

// checkServedByLive checks the one usage record: served by the second
// target after the first failed.
func checkServedByLive(t *testing.T, g *gateway, api string) {
	t.Helper()
	rec := g.records(t, 1)[0]
	if rec.Provider != "live" || rec.FallbackDepth != 1 || rec.Team != "aws" || rec.Route != "claude" || string(rec.API) != api {
		t.Errorf("record: provider %q fallback depth %d team %q route %q api %q; want live, 1, aws, claude, %s", rec.Provider, rec.FallbackDepth, rec.Team, rec.Route, rec.API, api)
	}
}

func TestGoSDKConverseFailsOverInvisibly(t *testing.T) {
	live := newUpstream(t, false)
	g := newGateway(t, live)
	out, err := goClient(g, teamKey).Converse(context.Background(), &bedrockruntime.ConverseInput{
		ModelId:         aws.String(profileID),
		Messages:        userText("Say hello"),
		InferenceConfig: &types.InferenceConfiguration{MaxTokens: aws.Int32(64)},
	})
	if err != nil {
		t.Fatalf("Converse: %v", err)
	}
	msg := out.Output.(*types.ConverseOutputMemberMessage).Value
	if got := msg.Content[0].(*types.ContentBlockMemberText).Value; got != "Hello from Claude" {
		t.Errorf("text %q", got)
	}
	if out.StopReason != types.StopReasonEndTurn || aws.ToInt32(out.Usage.OutputTokens) != 4 || aws.ToInt32(out.Usage.InputTokens) != 12 {
		t.Errorf("stop %q usage %+v", out.StopReason, out.Usage)
	}
	checkServedByLive(t, g, "converse")
	var sent struct {
		Model     string `json:"model"`
		MaxTokens int    `json:"max_tokens"`
	}
	json.Unmarshal([]byte(live.requests()[0].body), &sent)
	if sent.Model != "claude-live" || sent.MaxTokens != 64 {
		t.Errorf("upstream got model %q max_tokens %d", sent.Model, sent.MaxTokens)
	}
}

func TestGoSDKConverseStream(t *testing.T) {
	g := newGateway(t, newUpstream(t, false))
	out, err := goClient(g, teamKey).ConverseStream(context.Background(), &bedrockruntime.ConverseStreamInput{
		ModelId: aws.String("claude"), Messages: userText("Say hello"),
	})
	if err != nil {
		t.Fatalf("ConverseStream: %v", err)
	}
	stream := out.GetStream()
	defer stream.Close()
	var text strings.Builder
	var kinds []string
	var stop types.StopReason
	var usage *types.TokenUsage
	for ev := range stream.Events() {
		switch v := ev.(type) {
		case *types.ConverseStreamOutputMemberMessageStart:
			kinds = append(kinds, "start:"+string(v.Value.Role))
		case *types.ConverseStreamOutputMemberContentBlockDelta:
			kinds = append(kinds, "delta")
			text.WriteString(v.Value.Delta.(*types.ContentBlockDeltaMemberText).Value)
		case *types.ConverseStreamOutputMemberContentBlockStop:
			kinds = append(kinds, "stop")
		case *types.ConverseStreamOutputMemberMessageStop:
			kinds = append(kinds, "messageStop")
			stop = v.Value.StopReason
		case *types.ConverseStreamOutputMemberMetadata:
			kinds = append(kinds, "metadata")
			usage = v.Value.Usage
		default:
			t.Errorf("unexpected event %T", ev)
		}
	}
	if err := stream.Err(); err != nil {
		t.Fatalf("stream error: %v", err)
	}
	if text.String() != "Hello from Claude" || stop != types.StopReasonEndTurn || usage == nil || aws.ToInt32(usage.OutputTokens) != 4 {
		t.Errorf("text %q stop %q usage %+v", text.String(), stop, usage)
	}
	if got := strings.Join(kinds, ","); got != "start:assistant,delta,delta,stop,messageStop,metadata" {
		t.Errorf("events %s", got)
	}
	checkServedByLive(t, g, "converse")
}

// invokeBody is a Claude InvokeModel body as AWS SDK callers write it.
const invokeBody = `{"anthropic_version":"bedrock-2023-05-31","anthropic_beta":["interleaved-thinking-2025-05-14"],"max_tokens":64,"messages":[{"role":"user","content":"Say hello"}]}`

func TestGoSDKInvokeModelWithResponseStreamPassesThrough(t *testing.T) {
	live := newUpstream(t, false)
	g := newGateway(t, live)
	out, err := goClient(g, teamKey).InvokeModelWithResponseStream(context.Background(), &bedrockruntime.InvokeModelWithResponseStreamInput{
		ModelId: aws.String(profileID), Body: []byte(invokeBody), ContentType: aws.String("application/json"),
	})
	if err != nil {
		t.Fatalf("InvokeModelWithResponseStream: %v", err)
	}
	stream := out.GetStream()
	defer stream.Close()
	var types_, text []string
	var metrics json.RawMessage
	for ev := range stream.Events() {
		chunk, ok := ev.(*types.ResponseStreamMemberChunk)
		if !ok {
			t.Fatalf("unexpected event %T", ev)
		}
		var e struct {
			Type  string `json:"type"`
			Delta struct {
				Text string `json:"text"`
			} `json:"delta"`
			Metrics json.RawMessage `json:"amazon-bedrock-invocationMetrics"`
		}
		if err := json.Unmarshal(chunk.Value.Bytes, &e); err != nil {
			t.Fatalf("chunk %s: %v", chunk.Value.Bytes, err)
		}
		types_ = append(types_, e.Type)
		text = append(text, e.Delta.Text)
		if e.Metrics != nil {
			metrics = e.Metrics
		}
	}
	if err := stream.Err(); err != nil {
		t.Fatalf("stream error: %v", err)
	}
	want := "message_start,content_block_start,content_block_delta,content_block_delta,content_block_stop,message_delta,message_stop"
	if got := strings.Join(types_, ","); got != want {
		t.Errorf("chunks %s\nwant   %s", got, want)
	}
	if got := strings.Join(text, ""); got != "Hello from Claude" {
		t.Errorf("text %q", got)
	}
	var m struct {
		In  int `json:"inputTokenCount"`
		Out int `json:"outputTokenCount"`
	}
	if json.Unmarshal(metrics, &m) != nil || m.In != 12 || m.Out != 4 {
		t.Errorf("invocation metrics %s", metrics)
	}
	checkServedByLive(t, g, "messages")
	seen := live.requests()
	if len(seen) != 1 {
		t.Fatalf("%d upstream requests", len(seen))
	}
	want = `{"model":"claude-live","stream":true,"max_tokens":64,"messages":[{"role":"user","content":"Say hello"}]}`
	if seen[0].body != want {
		t.Errorf("upstream body %s\nwant          %s", seen[0].body, want)
	}
	if b := seen[0].header.Get("anthropic-beta"); b != "interleaved-thinking-2025-05-14" {
		t.Errorf("upstream anthropic-beta %q", b)
	}
}

func TestGoSDKInvokeModel(t *testing.T) {
	g := newGateway(t, newUpstream(t, false))
	out, err := goClient(g, teamKey).InvokeModel(context.Background(), &bedrockruntime.InvokeModelInput{
		ModelId: aws.String(profileID), Body: []byte(invokeBody),
	})
	if err != nil {
		t.Fatalf("InvokeModel: %v", err)
	}
	var msg struct {
		Type    string `json:"type"`
		Content []struct {
			Text string `json:"text"`
		} `json:"content"`
	}
	if err := json.Unmarshal(out.Body, &msg); err != nil || msg.Type != "message" || len(msg.Content) != 1 || msg.Content[0].Text != "Hello from Claude" {
		t.Errorf("body %s: %v", out.Body, err)
	}
	checkServedByLive(t, g, "messages")
}

// A stream the upstream cuts after its first token raises the SDK's
// stream exception: never a silently short answer.
func TestGoSDKStreamCutRaisesModelStreamError(t *testing.T) {
	g := newGateway(t, newUpstream(t, true))
	c := goClient(g, teamKey)
	out, err := c.ConverseStream(context.Background(), &bedrockruntime.ConverseStreamInput{ModelId: aws.String("claude"), Messages: userText("hi")})
	if err != nil {
		t.Fatalf("ConverseStream: %v", err)
	}
	var text string
	for ev := range out.GetStream().Events() {
		if d, ok := ev.(*types.ConverseStreamOutputMemberContentBlockDelta); ok {
			text += d.Value.Delta.(*types.ContentBlockDeltaMemberText).Value
		}
		if _, ok := ev.(*types.ConverseStreamOutputMemberMessageStop); ok {
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

	iout, err := c.InvokeModelWithResponseStream(context.Background(), &bedrockruntime.InvokeModelWithResponseStreamInput{
		ModelId: aws.String("claude"), Body: []byte(invokeBody)})
	if err != nil {
		t.Fatalf("InvokeModelWithResponseStream: %v", err)
	}
	for ev := range iout.GetStream().Events() {
		if c, ok := ev.(*types.ResponseStreamMemberChunk); ok && strings.Contains(string(c.Value.Bytes), "message_stop") {
			t.Error("a cut stream ended with message_stop")
		}
	}
	if err := iout.GetStream().Err(); !errors.As(err, &mse) {
		t.Fatalf("invoke stream error %T %v, want ModelStreamErrorException", err, err)
	}
}

func TestGoSDKErrors(t *testing.T) {
	live := newUpstream(t, false)
	g := newGateway(t, live)
	ctx := context.Background()
	_, err := goClient(g, teamKey).Converse(ctx, &bedrockruntime.ConverseInput{ModelId: aws.String("no-such-model"), Messages: userText("hi")})
	var nf *types.ResourceNotFoundException
	if !errors.As(err, &nf) {
		t.Errorf("unknown model: %T %v, want ResourceNotFoundException", err, err)
	}
	_, err = goClient(g, teamKey).Converse(ctx, &bedrockruntime.ConverseInput{ModelId: aws.String("claude"),
		Messages: []types.Message{{Role: "robot", Content: []types.ContentBlock{&types.ContentBlockMemberText{Value: "hi"}}}}})
	var ve *types.ValidationException
	if !errors.As(err, &ve) || !strings.Contains(aws.ToString(ve.Message), "messages[0].role") {
		t.Errorf("bad role: %T %v, want ValidationException naming messages[0].role", err, err)
	}
	_, err = goClient(g, teamKey).InvokeModel(ctx, &bedrockruntime.InvokeModelInput{ModelId: aws.String("claude"), Body: []byte(`{"messages":[]}`)})
	if !errors.As(err, &ve) {
		t.Errorf("bad invoke body: %T %v, want ValidationException", err, err)
	}
	// What the canonical prompt cannot hold is refused naming it, before any call.
	_, err = goClient(g, teamKey).Converse(ctx, &bedrockruntime.ConverseInput{ModelId: aws.String("claude"), Messages: userText("hi"),
		GuardrailConfig: &types.GuardrailConfiguration{GuardrailIdentifier: aws.String("gr-1"), GuardrailVersion: aws.String("1")}})
	if !errors.As(err, &ve) || !strings.Contains(aws.ToString(ve.Message), "guardrail") {
		t.Errorf("guardrailConfig: %T %v, want ValidationException naming it", err, err)
	} else {
		t.Logf("guardrailConfig refused: %s", aws.ToString(ve.Message))
	}
	var ad *types.AccessDeniedException
	_, err = goClient(g, "llmgw_not-a-key").Converse(ctx, &bedrockruntime.ConverseInput{ModelId: aws.String("claude"), Messages: userText("hi")})
	if !errors.As(err, &ad) {
		t.Errorf("wrong key: %T %v, want AccessDeniedException", err, err)
	}
	// SigV4 (IAM credentials): refused, saying to send a bearer team key.
	sig := bedrockruntime.New(bedrockruntime.Options{Region: "us-east-1", BaseEndpoint: aws.String(g.URL), RetryMaxAttempts: 1, HTTPClient: g.client,
		Credentials: credentials.NewStaticCredentialsProvider("AKIAIOSFODNN7EXAMPLE", "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY", "")})
	_, err = sig.Converse(ctx, &bedrockruntime.ConverseInput{ModelId: aws.String("claude"), Messages: userText("hi")})
	if !errors.As(err, &ad) || !strings.Contains(aws.ToString(ad.Message), "Bearer <team key>") {
		t.Errorf("SigV4: %T %v, want AccessDeniedException saying to use a bearer team key", err, err)
	}
	if n := len(live.requests()); n != 0 {
		t.Errorf("%d upstream calls for refused requests", n)
	}
}

func TestGoSDKCountTokens(t *testing.T) {
	live := newUpstream(t, false)
	g := newGateway(t, live)
	out, err := goClient(g, teamKey).CountTokens(context.Background(), &bedrockruntime.CountTokensInput{
		ModelId: aws.String(profileID),
		Input:   &types.CountTokensInputMemberInvokeModel{Value: types.InvokeModelTokensRequest{Body: []byte(invokeBody)}},
	})
	if err != nil {
		t.Fatalf("CountTokens: %v", err)
	}
	if aws.ToInt32(out.InputTokens) != 42 {
		t.Errorf("inputTokens %d, want the upstream's 42", aws.ToInt32(out.InputTokens))
	}
	out, err = goClient(g, teamKey).CountTokens(context.Background(), &bedrockruntime.CountTokensInput{
		ModelId: aws.String("claude"),
		Input:   &types.CountTokensInputMemberConverse{Value: types.ConverseTokensRequest{Messages: userText("Say hello")}},
	})
	if err != nil {
		t.Fatalf("CountTokens converse: %v", err)
	}
	if aws.ToInt32(out.InputTokens) < 1 {
		t.Errorf("converse inputTokens %d", aws.ToInt32(out.InputTokens))
	}
}
