package bedrock

import (
	"context"
	"encoding/json"
	"strconv"
	"strings"

	"github.com/aws/aws-sdk-go-v2/aws"
	awsmiddleware "github.com/aws/aws-sdk-go-v2/aws/middleware"
	"github.com/aws/aws-sdk-go-v2/service/bedrockruntime"
	smithyhttp "github.com/aws/smithy-go/transport/http"

	"github.com/llmgw/llmgw/pkg/exchange"
	"github.com/llmgw/llmgw/pkg/gwerr"
	"github.com/llmgw/llmgw/pkg/modelid"
	"github.com/llmgw/llmgw/pkg/provider"
	"github.com/llmgw/llmgw/pkg/wire/embedwire"
)

// Embeddings (an exchange.Embeddings request): InvokeModel with the body of
// the target's model family, chosen by its base model id (or the target's
// base_model option):
//
//	amazon.titan-embed-*    one call per input: {"inputText", "dimensions"?}
//	                        -> {"embedding", "inputTextTokenCount"}; dimensions
//	                        is refused on titan-embed-text-v1 (fixed size)
//	cohere.embed-*-v3       one call per 96 inputs: {"texts", "input_type"}
//	                        (input_type: the target's input_type option,
//	                        default search_document) -> {"embeddings"};
//	                        input tokens from Bedrock's
//	                        X-Amzn-Bedrock-Input-Token-Count header, else
//	                        estimated; dimensions other than 1024 is refused
//	                        (Cohere Embed v4 answers in another shape: refused
//	                        as any other model)
//
// The vectors come back as one Raw event (RawAPI Embeddings, Flags Whole)
// holding the OpenAI list body (embedwire.EmbeddingsBody); base64 is
// encoded by the gateway (float32, little-endian). Token-array inputs and
// any other model are refused as unsupported before any call, so the
// failover engine tries the next target.

// Invoker is the part of the Bedrock runtime client embeddings use. The
// SDK client has it; an API without it cannot serve embeddings.
type Invoker interface {
	InvokeModel(ctx context.Context, params *bedrockruntime.InvokeModelInput, optFns ...func(*bedrockruntime.Options)) (*bedrockruntime.InvokeModelOutput, error)
}

var _ Invoker = (*bedrockruntime.Client)(nil)

// cohereBatch is the most texts one Cohere embed call takes.
const cohereBatch = 96

func (a *Adapter) sendEmbeddings(ctx context.Context, call *provider.Call) (provider.Stream, error) {
	model := call.Model()
	target := call.Step.ID
	er := call.Req.Embed
	inv, ok := a.api.(Invoker)
	if !ok || er == nil {
		return nil, provider.Unsupported(target, "input", "the embeddings API")
	}
	if er.Tokens != nil {
		return nil, provider.Unsupported(target, "input", "token-array input")
	}
	base := call.Step.Options["base_model"]
	if base == "" {
		base = modelid.Base(model)
	}
	var vectors [][]float64
	var tokens int
	var err error
	switch {
	case strings.HasPrefix(base, "amazon.titan-embed"):
		if er.Dimensions > 0 && strings.HasPrefix(base, "amazon.titan-embed-text-v1") {
			return nil, provider.Unsupported(target, "dimensions", "dimensions")
		}
		vectors, tokens, err = a.titan(ctx, call, inv, model, er)
	case strings.HasPrefix(base, "cohere.embed-") && strings.Contains(base, "-v3"):
		if er.Dimensions > 0 && er.Dimensions != 1024 {
			return nil, provider.Unsupported(target, "dimensions", "dimensions other than 1024")
		}
		vectors, tokens, err = a.cohere(ctx, call, inv, model, er)
	default:
		return nil, provider.Unsupported(target, "model", "the embeddings API (model "+model+" is not a Titan or Cohere v3 embedding model)")
	}
	if err != nil {
		return nil, err
	}
	if len(vectors) != len(er.Inputs) {
		return nil, &gwerr.Error{Category: gwerr.Unavailable, Message: "provider returned " + strconv.Itoa(len(vectors)) + " embeddings for " + strconv.Itoa(len(er.Inputs)) + " inputs", Provider: a.id}
	}
	u := exchange.TokenUsage{Input: tokens}
	if tokens < 0 {
		n := 0
		for _, s := range er.Inputs {
			n += exchange.EstimateTokens(len(s))
		}
		u = exchange.TokenUsage{Input: n, Estimated: true}
	}
	body := embedwire.EmbeddingsBody(model, vectors, u.Input, er.EncodingFormat == "base64")
	return provider.Events(u, exchange.Event{Kind: exchange.Raw, Raw: body, RawAPI: exchange.Embeddings,
		Flags: exchange.HasContent | exchange.HasFinish | exchange.Whole}), nil
}

// invoke makes one InvokeModel call and returns its body and Bedrock's
// input token count (-1 when the response does not say).
func (a *Adapter) invoke(ctx context.Context, call *provider.Call, inv Invoker, model string, body any) ([]byte, int, error) {
	raw, err := json.Marshal(body)
	if err != nil {
		return nil, 0, &gwerr.Error{Category: gwerr.Internal, Message: "could not encode the upstream request", Provider: a.id, Cause: err}
	}
	out, err := inv.InvokeModel(ctx, &bedrockruntime.InvokeModelInput{ModelId: aws.String(model), Body: raw,
		ContentType: aws.String("application/json"), Accept: aws.String("application/json")}, traceHeader(call.Req.TraceParent))
	if err != nil {
		observeError(call, err)
		return nil, 0, callError(ctx, a.id, err)
	}
	observe(call, out.ResultMetadata)
	tokens := -1
	if r, ok := awsmiddleware.GetRawResponse(out.ResultMetadata).(*smithyhttp.Response); ok && r != nil && r.Response != nil {
		if n, err := strconv.Atoi(r.Header.Get("X-Amzn-Bedrock-Input-Token-Count")); err == nil {
			tokens = n
		}
	}
	return out.Body, tokens, nil
}

func malformedBody(id string) error {
	return &gwerr.Error{Category: gwerr.Unavailable, Message: "provider returned a malformed embeddings body", Provider: id}
}

// titan embeds each input with its own call.
func (a *Adapter) titan(ctx context.Context, call *provider.Call, inv Invoker, model string, er *exchange.EmbedRequest) ([][]float64, int, error) {
	type request struct {
		InputText  string `json:"inputText"`
		Dimensions int    `json:"dimensions,omitempty"`
	}
	var vectors [][]float64
	total := 0
	for _, s := range er.Inputs {
		raw, hdr, err := a.invoke(ctx, call, inv, model, request{InputText: s, Dimensions: er.Dimensions})
		if err != nil {
			return nil, 0, err
		}
		var resp struct {
			Embedding  []float64 `json:"embedding"`
			TokenCount *int      `json:"inputTextTokenCount"`
		}
		if json.Unmarshal(raw, &resp) != nil || len(resp.Embedding) == 0 {
			return nil, 0, malformedBody(a.id)
		}
		switch {
		case resp.TokenCount != nil:
			total += *resp.TokenCount
		case hdr >= 0:
			total += hdr
		default:
			total += exchange.EstimateTokens(len(s))
		}
		vectors = append(vectors, resp.Embedding)
	}
	return vectors, total, nil
}

// cohere embeds the inputs in batches of cohereBatch; tokens is -1 when
// Bedrock did not count them.
func (a *Adapter) cohere(ctx context.Context, call *provider.Call, inv Invoker, model string, er *exchange.EmbedRequest) ([][]float64, int, error) {
	type request struct {
		Texts     []string `json:"texts"`
		InputType string   `json:"input_type"`
	}
	inputType := call.Step.Options["input_type"]
	if inputType == "" {
		inputType = "search_document"
	}
	var vectors [][]float64
	total := 0
	for start := 0; start < len(er.Inputs); start += cohereBatch {
		batch := er.Inputs[start:min(start+cohereBatch, len(er.Inputs))]
		raw, hdr, err := a.invoke(ctx, call, inv, model, request{Texts: batch, InputType: inputType})
		if err != nil {
			return nil, 0, err
		}
		var resp struct {
			Embeddings [][]float64 `json:"embeddings"`
		}
		if json.Unmarshal(raw, &resp) != nil || len(resp.Embeddings) != len(batch) {
			return nil, 0, malformedBody(a.id)
		}
		if hdr < 0 || total < 0 {
			total = -1
		} else {
			total += hdr
		}
		vectors = append(vectors, resp.Embeddings...)
	}
	return vectors, total, nil
}
