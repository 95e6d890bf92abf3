package gemini

import (
	"context"
	"errors"
	"reflect"
	"testing"

	"github.com/llmgw/llmgw/pkg/exchange"
	"github.com/llmgw/llmgw/pkg/gwerr"
)

// whole sends a non-streaming request to a fake answering body, and
// returns the events and the error.
func whole(t *testing.T, body string) ([]exchange.Event, error) {
	t.Helper()
	f := newFakeAPI(t, serveJSON(200, body))
	s, err := newTestAdapter(t, f).Send(context.Background(), newCall(t, `{"model":"m","messages":[{"role":"user","content":"Hi"}]}`))
	if err != nil {
		return nil, err
	}
	return collect(t, s)
}

// TestNonStreamingResponse checks a whole answer with text, parallel
// function calls and cached usage.
func TestNonStreamingResponse(t *testing.T) {
	evs, err := whole(t, `{"candidates":[{"content":{"parts":[{"text":"Let me look."},
		{"functionCall":{"id":"fc_1","name":"get_weather","args":{"location": "Paris"}}},{"functionCall":{"name":"get_time"}}],"role":"model"},
		"finishReason":"STOP","index":0}],"usageMetadata":{"promptTokenCount":100,"candidatesTokenCount":20,"cachedContentTokenCount":64,
		"thoughtsTokenCount":5,"toolUsePromptTokenCount":3,"totalTokenCount":128},"modelVersion":"gemini-2.5-pro","responseId":"resp-1"}`)
	if err == nil || err.Error() != "EOF" {
		t.Fatalf("err = %v", err)
	}
	want := []exchange.Event{
		{Kind: exchange.Start, ID: "resp-1", Name: "gemini-2.5-pro"},
		{Kind: exchange.Text, Text: "Let me look."},
		{Kind: exchange.ToolCall, Index: 0, ID: "fc_1", Name: "get_weather"},
		{Kind: exchange.ToolArgs, Index: 0, Text: `{"location":"Paris"}`},
		{Kind: exchange.ToolCall, Index: 1, Name: "get_time"},
		{Kind: exchange.ToolArgs, Index: 1, Text: `{}`},
		{Kind: exchange.Finish, Finish: exchange.FinishToolCalls, Stop: "STOP"},
		{Kind: exchange.Usage, Usage: exchange.TokenUsage{Input: 103, Output: 25, CacheRead: 64, Reasoning: 5}},
	}
	if len(evs) != len(want) {
		t.Fatalf("events = %+v", evs)
	}
	for i := range want {
		got := evs[i]
		got.Created = 0
		if i == 4 && len(got.ID) == 29 {
			got.ID = "" // generated
		}
		if !reflect.DeepEqual(got, want[i]) {
			t.Errorf("event %d = %+v, want %+v", i, got, want[i])
		}
	}
}

// TestFinishReasonMapping checks every finishReason's canonical reason.
func TestFinishReasonMapping(t *testing.T) {
	for reason, want := range map[string]string{
		"STOP": "stop", "MAX_TOKENS": "length", "SAFETY": "content_filter", "RECITATION": "content_filter",
		"BLOCKLIST": "content_filter", "PROHIBITED_CONTENT": "content_filter", "SPII": "content_filter",
		"IMAGE_SAFETY": "content_filter", "LANGUAGE": "stop", "OTHER": "stop", "MALFORMED_FUNCTION_CALL": "stop",
	} {
		if got := finishReason(reason, false); got != want {
			t.Errorf("%s -> %s, want %s", reason, got, want)
		}
	}
	if finishReason("STOP", true) != "tool_calls" || finishReason("MAX_TOKENS", true) != "length" {
		t.Error("a function call makes STOP tool_calls, and only STOP")
	}
}

// TestNonStreamingEdgeCases: an empty success is a provider failure; a
// safety stop with no content and a blocked prompt are answers.
func TestNonStreamingEdgeCases(t *testing.T) {
	_, err := whole(t, `{"candidates":[{"content":{"parts":[],"role":"model"},"finishReason":"MALFORMED_FUNCTION_CALL","index":0}],
		"usageMetadata":{"promptTokenCount":9,"totalTokenCount":9},"modelVersion":"gemini-2.5-flash"}`)
	var ge *gwerr.Error
	if !errors.As(err, &ge) || ge.Category != gwerr.Unavailable || ge.Code != "empty_response" {
		t.Errorf("empty answer: err = %v, want empty_response", err)
	}
	evs, err := whole(t, `{"candidates":[{"finishReason":"SAFETY","index":0}],"usageMetadata":{"promptTokenCount":9,"totalTokenCount":9}}`)
	if err == nil || err.Error() != "EOF" || len(evs) != 3 || evs[1].Finish != exchange.FinishContentFilter || evs[0].ID == "" {
		t.Errorf("safety stop: events %+v err %v", evs, err)
	}
	evs, err = whole(t, `{"promptFeedback":{"blockReason":"SAFETY"},"usageMetadata":{"promptTokenCount":9,"totalTokenCount":9}}`)
	if err == nil || err.Error() != "EOF" || len(evs) != 3 || evs[1].Finish != exchange.FinishContentFilter || evs[1].Stop != "SAFETY" {
		t.Errorf("blocked prompt: events %+v err %v", evs, err)
	}
	if _, err := whole(t, `{"candidates":[`); err == nil {
		t.Error("malformed body accepted")
	}
}
