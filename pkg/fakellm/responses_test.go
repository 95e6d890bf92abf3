package fakellm

import (
	"context"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/anthropics/anthropic-sdk-go/v2"
	aoption "github.com/anthropics/anthropic-sdk-go/v2/option"
	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"
	"github.com/openai/openai-go/v3/responses"

	"github.com/llmgw/llmgw/pkg/config"
)

// The Handler answers .../responses in the Responses wire format: the
// official SDK reads its event stream (names, sequence numbers, the
// completed response with usage) and its non-streaming response object.
func TestHandlerResponsesWireFormat(t *testing.T) {
	srv := httptest.NewServer(&Handler{Script: &config.FakeScript{Reply: "one two three"}})
	defer srv.Close()
	client := openai.NewClient(option.WithBaseURL(srv.URL+"/v1"), option.WithAPIKey("k"), option.WithMaxRetries(0))
	params := responses.ResponseNewParams{Model: "m", Input: responses.ResponseNewParamsInputUnion{OfString: openai.String("hi")}}

	st := client.Responses.NewStreaming(context.Background(), params)
	var types []string
	var deltas strings.Builder
	var last responses.ResponseStreamEventUnion
	for i := int64(0); st.Next(); i++ {
		ev := st.Current()
		if ev.SequenceNumber != i {
			t.Errorf("event %d has sequence_number %d", i, ev.SequenceNumber)
		}
		types = append(types, ev.Type)
		if ev.Type == "response.output_text.delta" {
			deltas.WriteString(ev.Delta)
		}
		last = ev
	}
	if err := st.Err(); err != nil {
		t.Fatal(err)
	}
	want := "response.created response.in_progress response.output_item.added response.content_part.added " +
		"response.output_text.delta response.output_text.delta response.output_text.delta response.output_text.done " +
		"response.content_part.done response.output_item.done response.completed"
	if got := strings.Join(types, " "); got != want {
		t.Errorf("events:\n%s\nwant\n%s", got, want)
	}
	done := last.AsResponseCompleted().Response
	if deltas.String() != "one two three" || done.OutputText() != "one two three" || done.Usage.OutputTokens != 3 || done.Usage.InputTokens == 0 {
		t.Errorf("deltas %q, completed %q usage %+v", deltas.String(), done.OutputText(), done.Usage)
	}

	r, err := client.Responses.New(context.Background(), params)
	if err != nil || r.OutputText() != "one two three" || r.Status != "completed" || r.Usage.TotalTokens != r.Usage.InputTokens+3 {
		t.Errorf("non-streaming: %v %+v", err, r)
	}
}

// The Handler answers .../messages in the Messages wire format (as the
// Transport does): the official Anthropic SDK reads its stream.
func TestHandlerMessagesWireFormat(t *testing.T) {
	srv := httptest.NewServer(&Handler{Script: &config.FakeScript{Reply: "a b"}})
	defer srv.Close()
	client := anthropic.NewClient(aoption.WithBaseURL(srv.URL), aoption.WithAPIKey("k"), aoption.WithMaxRetries(0))
	st := client.Messages.NewStreaming(context.Background(), anthropic.MessageNewParams{
		Model: "m", MaxTokens: 10, Messages: []anthropic.MessageParam{anthropic.NewUserMessage(anthropic.NewTextBlock("hi"))}})
	var msg anthropic.Message
	for st.Next() {
		if err := msg.Accumulate(st.Current()); err != nil {
			t.Fatal(err)
		}
	}
	if err := st.Err(); err != nil || len(msg.Content) != 1 || msg.Content[0].Text != "a b" || msg.StopReason != "end_turn" {
		t.Errorf("stream: %v %+v", err, msg)
	}
}
