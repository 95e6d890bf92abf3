package bedrock_test

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/service/bedrockruntime"

	"github.com/llmgw/llmgw/pkg/config"
	"github.com/llmgw/llmgw/pkg/exchange"
	"github.com/llmgw/llmgw/pkg/gwerr"
	"github.com/llmgw/llmgw/pkg/provider"
	"github.com/llmgw/llmgw/pkg/provider/bedrock"
)

// invoker is an injected runtime client that also answers InvokeModel.
type invoker struct {
	injected
	bodies []string
	models []string
	reply  func(body []byte) string
}

func (v *invoker) InvokeModel(_ context.Context, in *bedrockruntime.InvokeModelInput, _ ...func(*bedrockruntime.Options)) (*bedrockruntime.InvokeModelOutput, error) {
	v.bodies = append(v.bodies, string(in.Body))
	v.models = append(v.models, *in.ModelId)
	return &bedrockruntime.InvokeModelOutput{Body: []byte(v.reply(in.Body))}, nil
}

func embedCall(model string, er *exchange.EmbedRequest) *provider.Call {
	return &provider.Call{Req: &exchange.Request{API: exchange.Embeddings, Embed: er},
		Step: config.Step{ID: "br/" + model, Provider: "br", Model: model}}
}

func cohereReply(body []byte) string {
	var in struct{ Texts []string }
	json.Unmarshal(body, &in)
	vs := make([]string, len(in.Texts))
	for i := range vs {
		vs[i] = "[1,2]"
	}
	return `{"id":"x","embeddings":[` + strings.Join(vs, ",") + `],"response_type":"embeddings_floats"}`
}

func TestEmbeddingsCohereBatchesOf96(t *testing.T) {
	v := &invoker{reply: cohereReply}
	a := bedrock.NewWithAPI("br", v)
	inputs := make([]string, 100)
	for i := range inputs {
		inputs[i] = fmt.Sprintf("text %d", i)
	}
	s, err := a.Send(context.Background(), embedCall("cohere.embed-english-v3", &exchange.EmbedRequest{Inputs: inputs, EncodingFormat: "float"}))
	if err != nil {
		t.Fatal(err)
	}
	if len(v.bodies) != 2 || !strings.Contains(v.bodies[0], `"input_type":"search_document"`) || strings.Count(v.bodies[1], "text ") != 4 {
		t.Fatalf("calls %d: %v", len(v.bodies), v.bodies)
	}
	ev, _ := s.Next()
	var out struct {
		Data []struct{ Index int } `json:"data"`
	}
	if ev.Kind != exchange.Raw || ev.RawAPI != exchange.Embeddings || json.Unmarshal(ev.Raw, &out) != nil || len(out.Data) != 100 || out.Data[99].Index != 99 {
		t.Errorf("event %+v", ev)
	}
	if u := s.Usage(); !u.Estimated || u.Input == 0 || u.Output != 0 {
		t.Errorf("usage %+v: want an input estimate without Bedrock's count", u)
	}
}

func TestEmbeddingsRefusedBeforeAnyCall(t *testing.T) {
	v := &invoker{reply: cohereReply}
	a := bedrock.NewWithAPI("br", v)
	for name, call := range map[string]*provider.Call{
		"token arrays":    embedCall("amazon.titan-embed-text-v2:0", &exchange.EmbedRequest{Tokens: [][]int{{1}}}),
		"titan v1 dims":   embedCall("amazon.titan-embed-text-v1", &exchange.EmbedRequest{Inputs: []string{"a"}, Dimensions: 256}),
		"cohere v3 dims":  embedCall("cohere.embed-multilingual-v3", &exchange.EmbedRequest{Inputs: []string{"a"}, Dimensions: 512}),
		"not an embedder": embedCall("us.anthropic.claude-sonnet-4-5-20250929-v1:0", &exchange.EmbedRequest{Inputs: []string{"a"}}),
		"no InvokeModel":  nil,
	} {
		aa := a
		if call == nil {
			aa = bedrock.NewWithAPI("br", &injected{})
			call = embedCall("amazon.titan-embed-text-v2:0", &exchange.EmbedRequest{Inputs: []string{"a"}})
		}
		if _, err := aa.Send(context.Background(), call); category(err) != gwerr.InvalidRequest || gwerr.As(err).Code != provider.CodeUnsupportedFeature {
			t.Errorf("%s: err = %v, want unsupported", name, err)
		}
	}
	if len(v.bodies) != 0 {
		t.Errorf("%d calls for refused requests", len(v.bodies))
	}
	bad := &invoker{reply: func([]byte) string { return `{"embeddings":"nope"}` }}
	_, err := bedrock.NewWithAPI("br", bad).Send(context.Background(), embedCall("cohere.embed-english-v3", &exchange.EmbedRequest{Inputs: []string{"a"}}))
	if category(err) != gwerr.Unavailable {
		t.Errorf("malformed body: err = %v, want unavailable", err)
	}
}
