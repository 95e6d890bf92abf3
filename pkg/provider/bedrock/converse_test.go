package bedrock_test

import (
	"context"
	"errors"
	"io"
	"net/http"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/bedrockruntime"
	"github.com/aws/aws-sdk-go-v2/service/bedrockruntime/types"

	"github.com/llmgw/llmgw/pkg/exchange"
	"github.com/llmgw/llmgw/pkg/gwerr"
	"github.com/llmgw/llmgw/pkg/ingress/chat"
	"github.com/llmgw/llmgw/pkg/provider/bedrock"
)

// completionBody is the chat.completion body the Chat Completions encoder
// builds from a non-streaming response's events.
func completionBody(t *testing.T, evs []exchange.Event, u exchange.TokenUsage) []byte {
	t.Helper()
	enc := chat.Ingress{}.NewEncoder(&exchange.Request{})
	for i := range evs {
		if b := enc.Event(nil, &evs[i]); len(b) != 0 {
			t.Fatalf("the body encoder wrote %q before End", b)
		}
	}
	return enc.End(nil, u)
}

// TestConverse: a non-streaming call is the events of the whole output,
// which the Chat Completions encoder turns into one chat.completion.
func TestConverse(t *testing.T) {
	bedrock.SetClock(t, time.Unix(1750000000, 0))
	f := newFake(t, reply{body: `{"output":{"message":{"role":"assistant","content":[
		{"text":"Checking the weather."},
		{"toolUse":{"toolUseId":"tooluse_X","name":"get_weather","input":{"city":"Paris","days":3}}}]}},
		"stopReason":"tool_use",
		"usage":{"inputTokens":10,"outputTokens":20,"totalTokens":75,"cacheReadInputTokens":40,"cacheWriteInputTokens":5},
		"metrics":{"latencyMs":300}}`})
	call := newCall(t, `{"model":"m","messages":[{"role":"user","content":"Weather?"}]}`)
	var status int
	call.OnResponse = func(st int, h http.Header) { status = st }
	s, err := newAdapter(t, f).Send(context.Background(), call)
	if err != nil {
		t.Fatal(err)
	}
	if status != http.StatusOK {
		t.Errorf("OnResponse saw status %d, want 200", status)
	}
	var evs []exchange.Event
	for {
		ev, err := s.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		evs = append(evs, ev)
	}
	want := []exchange.Event{
		{Kind: exchange.Start, ID: "0a1b2c3d-fake-request-id", Name: model, Created: 1750000000},
		{Kind: exchange.Text, Text: "Checking the weather."},
		{Kind: exchange.ToolCall, ID: "tooluse_X", Name: "get_weather"},
		{Kind: exchange.ToolArgs, Text: `{"city":"Paris","days":3}`},
		{Kind: exchange.Finish, Finish: "tool_calls", Stop: "tool_use"},
		{Kind: exchange.Usage, Usage: exchange.TokenUsage{Input: 55, Output: 20, CacheRead: 40, CacheWrite: 5}},
	}
	if !reflect.DeepEqual(evs, want) {
		t.Errorf("events\n got %+v\nwant %+v", evs, want)
	}
	assertJSON(t, completionBody(t, evs, s.Usage()), `{"id":"chatcmpl-0a1b2c3d-fake-request-id","object":"chat.completion","created":1750000000,
		"model":"`+model+`","choices":[{"index":0,"message":{"role":"assistant","content":"Checking the weather.","refusal":null,
		"tool_calls":[{"id":"tooluse_X","type":"function","function":{"name":"get_weather","arguments":"{\"city\":\"Paris\",\"days\":3}"}}]},
		"finish_reason":"tool_calls","logprobs":null}],
		"usage":{"prompt_tokens":55,"completion_tokens":20,"total_tokens":75,"prompt_tokens_details":{"cached_tokens":40,"cache_creation_tokens":5}}}`)
	if u := s.Usage(); u != (exchange.TokenUsage{Input: 55, Output: 20, CacheRead: 40, CacheWrite: 5}) {
		t.Errorf("usage %+v", u)
	}
	if reqs := f.requests(); len(reqs) != 1 || reqs[0].path != "/model/anthropic.claude-3-5-haiku-20241022-v1%3A0/converse" {
		t.Errorf("requests %+v", reqs)
	}
}

// TestConverseEmpty: a success with nothing in it is provider.EmptyResponse.
func TestConverseEmpty(t *testing.T) {
	f := newFake(t, reply{body: `{"output":{"message":{"role":"assistant","content":[]}},"stopReason":"end_turn",
		"usage":{"inputTokens":10,"outputTokens":0,"totalTokens":10},"metrics":{"latencyMs":3}}`})
	_, err := newAdapter(t, f).Send(context.Background(), newCall(t, `{"model":"m","messages":[{"role":"user","content":"Hi"}]}`))
	var ge *gwerr.Error
	if !errors.As(err, &ge) || ge.Code != "empty_response" || ge.Category != gwerr.Unavailable {
		t.Fatalf("err = %v, want provider.EmptyResponse", err)
	}
}

// TestConverseMalformed: malformed model output is a provider failure,
// never a clean finish.
func TestConverseMalformed(t *testing.T) {
	f := newFake(t, reply{body: `{"output":{"message":{"role":"assistant","content":[{"text":"{\"bro"}]}},"stopReason":"malformed_tool_use",
		"usage":{"inputTokens":10,"outputTokens":3,"totalTokens":13},"metrics":{"latencyMs":3}}`})
	_, err := newAdapter(t, f).Send(context.Background(), newCall(t, `{"model":"m","messages":[{"role":"user","content":"Hi"}]}`))
	if category(err) != gwerr.Unavailable {
		t.Fatalf("err = %v, want unavailable", err)
	}
}

// injected is an API that is not the SDK client: tests and embedders can
// put their own behind the adapter.
type injected struct {
	out *bedrockruntime.ConverseOutput
	err error
}

func (i *injected) Converse(context.Context, *bedrockruntime.ConverseInput, ...func(*bedrockruntime.Options)) (*bedrockruntime.ConverseOutput, error) {
	return i.out, i.err
}

func (i *injected) ConverseStream(context.Context, *bedrockruntime.ConverseStreamInput, ...func(*bedrockruntime.Options)) (*bedrockruntime.ConverseStreamOutput, error) {
	if i.err != nil {
		return nil, i.err
	}
	return &bedrockruntime.ConverseStreamOutput{}, nil
}

// TestInjectedAPI: the adapter works over any API; errors without an HTTP
// response are still classified by their exception type, and an output
// without an event stream is a provider failure, not a panic.
func TestInjectedAPI(t *testing.T) {
	text := "injected"
	a := bedrock.NewWithAPI("br", &injected{out: &bedrockruntime.ConverseOutput{StopReason: types.StopReasonEndTurn,
		Output: &types.ConverseOutputMemberMessage{Value: types.Message{Role: types.ConversationRoleAssistant,
			Content: []types.ContentBlock{&types.ContentBlockMemberText{Value: text}}}}}})
	s, err := a.Send(context.Background(), newCall(t, `{"model":"m","messages":[{"role":"user","content":"Hi"}]}`))
	if err != nil {
		t.Fatal(err)
	}
	var evs []exchange.Event
	for ev, err := s.Next(); err == nil; ev, err = s.Next() {
		evs = append(evs, ev)
	}
	if body := completionBody(t, evs, s.Usage()); !strings.Contains(string(body), `"content":"injected"`) || !strings.Contains(string(body), `"id":"chatcmpl-`) {
		t.Errorf("completion %s", body)
	}
	if u := s.Usage(); !u.Estimated || u.Output != 2 {
		t.Errorf("usage without bedrock's figures %+v, want an estimate", u)
	}

	a = bedrock.NewWithAPI("br", &injected{err: &types.ThrottlingException{Message: aws.String("slow down")}})
	if _, err := a.Send(context.Background(), newCall(t, streamHi)); category(err) != gwerr.RateLimited {
		t.Errorf("err = %v, want rate_limited", err)
	}
	a = bedrock.NewWithAPI("br", &injected{})
	if _, err := a.Send(context.Background(), newCall(t, streamHi)); category(err) != gwerr.Unavailable {
		t.Errorf("err = %v, want unavailable for a missing event stream", err)
	}
}
