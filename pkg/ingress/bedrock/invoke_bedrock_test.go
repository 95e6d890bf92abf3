package bedrock_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/bedrockruntime"
	"github.com/aws/aws-sdk-go-v2/service/bedrockruntime/types"

	"github.com/llmgw/llmgw/pkg/wire/bedrockwire"
)

// fakeClaudeOnBedrock answers InvokeModelWithResponseStream as Bedrock
// does for a Claude model: one chunk event per Anthropic stream event, the
// last one carrying amazon-bedrock-invocationMetrics. Anything else (a
// Converse call) is a 400: Claude's Messages body must not go there.
func fakeClaudeOnBedrock(t *testing.T, rec *recorder) *httptest.Server {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		rec.add(r.URL.EscapedPath(), b)
		if _, op, _ := bedrockwire.ParsePath(r.URL.Path); op != bedrockwire.InvokeModelWithResponseStream {
			w.Header().Set("x-amzn-ErrorType", "ValidationException")
			w.WriteHeader(http.StatusBadRequest)
			w.Write(bedrockwire.AppendErrorBody(nil, "this fake serves invoke-with-response-stream only"))
			return
		}
		w.Header().Set("Content-Type", bedrockwire.EventStreamType)
		var f []byte
		for _, ev := range []string{
			`{"type":"message_start","message":{"id":"msg_bdrk_1","type":"message","role":"assistant","model":"claude-sonnet-4-5-20250929","content":[],"stop_reason":null,"stop_sequence":null,"usage":{"input_tokens":11,"output_tokens":1}}}`,
			`{"type":"content_block_start","index":0,"content_block":{"type":"text","text":""}}`,
			`{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"Hello from"}}`,
			`{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":" Bedrock"}}`,
			`{"type":"content_block_stop","index":0}`,
			`{"type":"message_delta","delta":{"stop_reason":"end_turn","stop_sequence":null},"usage":{"output_tokens":4}}`,
			`{"type":"message_stop","amazon-bedrock-invocationMetrics":{"inputTokenCount":11,"outputTokenCount":4,"invocationLatency":90,"firstByteLatency":30}}`,
		} {
			f = bedrockwire.AppendEvent(f, "chunk", bedrockwire.AppendChunk(nil, []byte(ev)))
		}
		w.Write(f)
	}))
	t.Cleanup(srv.Close)
	return srv
}

// An InvokeModelWithResponseStream call with Claude's native body, served
// by Claude on a Bedrock target after a dead first target, goes to
// Bedrock's InvokeModelWithResponseStream (never Converse) with the
// client's body, and comes back as the Anthropic events Bedrock sent.
func TestInvokeModelToClaudeOnBedrockTarget(t *testing.T) {
	t.Setenv("AWS_ACCESS_KEY_ID", "AKIAIOSFODNN7EXAMPLE")
	t.Setenv("AWS_SECRET_ACCESS_KEY", "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY")
	t.Setenv("AWS_BEARER_TOKEN_BEDROCK", "")
	var rec recorder
	up := fakeClaudeOnBedrock(t, &rec)
	model := "us.anthropic.claude-sonnet-4-5-20250929-v1:0"
	g := gatewayWith(t, fmt.Sprintf("  live: {kind: bedrock, region: us-east-1, endpoint: %q}\n", up.URL), model)
	out, err := goClient(g, teamKey).InvokeModelWithResponseStream(context.Background(), &bedrockruntime.InvokeModelWithResponseStreamInput{
		ModelId: aws.String(profileID), Body: []byte(invokeBody), ContentType: aws.String("application/json"),
	})
	if err != nil {
		t.Fatalf("InvokeModelWithResponseStream: %v", err)
	}
	stream := out.GetStream()
	defer stream.Close()
	var kinds []string
	var text string
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
		}
		if err := json.Unmarshal(chunk.Value.Bytes, &e); err != nil {
			t.Fatalf("chunk %s: %v", chunk.Value.Bytes, err)
		}
		kinds, text = append(kinds, e.Type), text+e.Delta.Text
	}
	if err := stream.Err(); err != nil {
		t.Fatalf("stream error: %v", err)
	}
	if text != "Hello from Bedrock" || kinds[0] != "message_start" || kinds[len(kinds)-1] != "message_stop" {
		t.Errorf("events %v, text %q", kinds, text)
	}
	path, body := rec.last()
	if want := "/model/" + strings.ReplaceAll(model, ":", "%3A") + "/invoke-with-response-stream"; path != want {
		t.Errorf("upstream path %s, want %s", path, want)
	}
	var sent map[string]json.RawMessage
	if err := json.Unmarshal([]byte(body), &sent); err != nil {
		t.Fatalf("upstream body %s: %v", body, err)
	}
	if string(sent["anthropic_version"]) != `"bedrock-2023-05-31"` || sent["model"] != nil || sent["stream"] != nil ||
		string(sent["messages"]) != `[{"role":"user","content":"Say hello"}]` || !strings.Contains(string(sent["anthropic_beta"]), "interleaved-thinking-2025-05-14") {
		t.Errorf("upstream body %s", body)
	}
	for _, r := range g.records(t, 1) {
		if r.Provider != "live" || r.FallbackDepth != 1 || r.InputTokens != 11 || r.OutputTokens != 4 {
			t.Errorf("record %s depth %d tokens %d/%d", r.Provider, r.FallbackDepth, r.InputTokens, r.OutputTokens)
		}
	}
}
