package server_test

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws/protocol/eventstream"
	"github.com/openai/openai-go/v3"
)

// Stream endings and frames as real upstreams send them, read by the
// official openai-go SDK (issue 13, items 2, 7 and 10).

// sdkStream runs one streamed chat completion with usage asked for and
// returns the chunks, the accumulated answer and the stream's error.
func sdkStream(t *testing.T, g *gateway, model string) ([]openai.ChatCompletionChunk, openai.ChatCompletionAccumulator, error) {
	t.Helper()
	client := g.sdk()
	stream := client.Chat.Completions.NewStreaming(context.Background(), openai.ChatCompletionNewParams{
		Model:         model,
		Messages:      []openai.ChatCompletionMessageParamUnion{openai.UserMessage("hi")},
		StreamOptions: openai.ChatCompletionStreamOptionsParam{IncludeUsage: openai.Bool(true)},
	})
	defer stream.Close()
	var chunks []openai.ChatCompletionChunk
	var acc openai.ChatCompletionAccumulator
	for stream.Next() {
		c := stream.Current()
		chunks = append(chunks, c)
		acc.AddChunk(c)
	}
	return chunks, acc, stream.Err()
}

// Item 2: a stream that sent its finish_reason and the usage chunk is
// complete even when the upstream closes without [DONE]: the client gets a
// normal end ([DONE] written by the gateway) and the usage.
func TestStreamFinishedWithUsageButNoDoneEndsNormally(t *testing.T) {
	up := newUpstream(t, func(w http.ResponseWriter, r *http.Request, _ []byte, _ int) {
		w.Header().Set("Content-Type", "text/event-stream")
		io.WriteString(w, roleChunk(true)+contentChunk("Hello", true)+contentChunk(" world", true)+
			finishChunk("stop", true)+usageChunk(11, 2, 0)) // and the connection ends: no [DONE]
	})
	g := newGateway(t, oneRoute("", up.URL))
	chunks, acc, err := sdkStream(t, g, "m")
	if err != nil {
		t.Fatalf("stream error %v: a finished stream without [DONE] must end normally", err)
	}
	if len(acc.Choices) != 1 || acc.Choices[0].Message.Content != "Hello world" || acc.Choices[0].FinishReason != "stop" {
		t.Fatalf("answer %+v", acc.Choices)
	}
	if last := chunks[len(chunks)-1]; len(last.Choices) != 0 || last.Usage.CompletionTokens != 2 || last.Usage.PromptTokens != 11 {
		t.Errorf("last chunk %s, want the usage chunk", last.RawJSON())
	}
	// On the wire the gateway ends it with [DONE] itself.
	out := readAll(t, g.post(t, `{"model":"m","stream":true,"stream_options":{"include_usage":true},"messages":[{"role":"user","content":"hi"}]}`).Body)
	if !strings.HasSuffix(out, "data: [DONE]\n\n") || strings.Contains(out, `"error"`) {
		t.Errorf("wire: %s", out)
	}
	for _, rec := range g.waitRecs(t, 2) {
		if rec.Outcome != "ok" || rec.OutputTokens != 2 || rec.Estimated {
			t.Errorf("record %+v", rec)
		}
	}
}

// Item 7: a data line that is not JSON, mid-stream, is never forwarded;
// the stream completes, and the record and the log line count it.
func TestMalformedFrameMidStreamIsSkippedAndCounted(t *testing.T) {
	up := newUpstream(t, func(w http.ResponseWriter, r *http.Request, _ []byte, _ int) {
		w.Header().Set("Content-Type", "text/event-stream")
		io.WriteString(w, roleChunk(true)+contentChunk("Hello", true)+
			"data: "+chunkHead+`[{"index":0,"delta":{"content":" GARBLED`+"\n\n"+ // cut JSON
			contentChunk(" world", true)+finishChunk("stop", true)+usageChunk(11, 2, 0)+"data: [DONE]\n\n")
	})
	g := newGateway(t, oneRoute("", up.URL))
	chunks, acc, err := sdkStream(t, g, "m")
	if err != nil {
		t.Fatalf("stream error %v: a malformed frame must be skipped, not relayed or fatal", err)
	}
	if got := acc.Choices[0].Message.Content; got != "Hello world" {
		t.Errorf("content %q", got)
	}
	for _, c := range chunks {
		if strings.Contains(c.RawJSON(), "GARBLED") {
			t.Errorf("malformed frame relayed: %s", c.RawJSON())
		}
	}
	rec := g.waitRecs(t, 1)[0]
	if rec.MalformedFrames != 1 || rec.Outcome != "ok" {
		t.Errorf("record %+v: want malformed_frames 1, outcome ok", rec)
	}
	if !strings.Contains(g.logs.String(), `"malformed_frames":1`) {
		t.Errorf("log line does not count the malformed frame: %s", g.logs.String())
	}
}

// bedrockTextStream answers ConverseStream with text and no messageStart,
// as some Bedrock models and proxies do.
func bedrockTextStream(w http.ResponseWriter) {
	w.Header().Set("Content-Type", "application/vnd.amazon.eventstream")
	enc := eventstream.NewEncoder()
	for _, e := range [][2]string{
		{"contentBlockDelta", `{"contentBlockIndex":0,"delta":{"text":"Hello"}}`},
		{"contentBlockDelta", `{"contentBlockIndex":0,"delta":{"text":" world"}}`},
		{"contentBlockStop", `{"contentBlockIndex":0}`},
		{"messageStop", `{"stopReason":"end_turn"}`},
		{"metadata", `{"usage":{"inputTokens":9,"outputTokens":2,"totalTokens":11},"metrics":{"latencyMs":80}}`},
	} {
		var m eventstream.Message
		m.Headers.Set(":message-type", eventstream.StringValue("event"))
		m.Headers.Set(":event-type", eventstream.StringValue(e[0]))
		m.Headers.Set(":content-type", eventstream.StringValue("application/json"))
		m.Payload = []byte(e[1])
		enc.Encode(w, m)
	}
}

// Item 10: a Bedrock stream without messageStart still gives the client
// delta.role "assistant" on its first chunk.
func TestBedrockStreamWithoutMessageStartStartsWithTheRole(t *testing.T) {
	t.Setenv("AWS_ACCESS_KEY_ID", "AKIDTEST")
	t.Setenv("AWS_SECRET_ACCESS_KEY", "secret")
	t.Setenv("AWS_REGION", "us-east-1")
	bed := newUpstream(t, func(w http.ResponseWriter, _ *http.Request, _ []byte, _ int) { bedrockTextStream(w) })
	g := newGateway(t, fastPolicy+fmt.Sprintf(`
providers:
  bedrock: {kind: bedrock, region: us-east-1, endpoint: %q}
routes:
  claude: {targets: [{provider: bedrock, model: "us.anthropic.claude-sonnet-4-5-20250929-v1:0"}]}
`, bed.URL))
	chunks, acc, err := sdkStream(t, g, "claude")
	if err != nil {
		t.Fatal(err)
	}
	if len(chunks) == 0 || len(chunks[0].Choices) != 1 || chunks[0].Choices[0].Delta.Role != "assistant" {
		t.Fatalf("first chunk %s: want delta.role assistant", chunks[0].RawJSON())
	}
	for _, c := range chunks[1:] {
		if len(c.Choices) > 0 && c.Choices[0].Delta.Role != "" {
			t.Errorf("role repeated: %s", c.RawJSON())
		}
	}
	if acc.Choices[0].Message.Content != "Hello world" || acc.Choices[0].Message.Role != "assistant" || acc.Usage.CompletionTokens != 2 {
		t.Errorf("answer %+v usage %+v", acc.Choices[0].Message, acc.Usage)
	}
}
