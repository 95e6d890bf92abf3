package bedrock

import (
	"context"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/bedrockruntime"
	"github.com/aws/aws-sdk-go-v2/service/bedrockruntime/types"

	"github.com/llmgw/llmgw/pkg/exchange"
	"github.com/llmgw/llmgw/pkg/gwerr"
	"github.com/llmgw/llmgw/pkg/provider"
	"github.com/llmgw/llmgw/pkg/wire/chatwire"
)

// Counter is the part of the Bedrock runtime client count_tokens uses. The
// SDK client has it; an API without it counts nothing upstream.
type Counter interface {
	CountTokens(ctx context.Context, params *bedrockruntime.CountTokensInput, optFns ...func(*bedrockruntime.Options)) (*bedrockruntime.CountTokensOutput, error)
}

var (
	_ Counter               = (*bedrockruntime.Client)(nil)
	_ provider.TokenCounter = (*Adapter)(nil)
)

// CountTokens implements provider.TokenCounter for a Messages client's
// count_tokens request at a target whose model is Claude: Bedrock's
// CountTokens operation with input.invokeModel.body, the body InvokeModel
// would get (messageswire.ToBedrockInvoke, with max_tokens 1 when the
// count_tokens body has none, as InvokeModel requires one; the target's
// prompt variant's system edits applied), for the target's base model
// (CountTokens takes a foundation model id, not an inference profile: the
// profile prefix stripped, or the target's base_model). Any other request,
// or a model whose base is not known, cannot be counted here
// (provider.ErrCannotCount).
func (a *Adapter) CountTokens(ctx context.Context, call *provider.Call) (int, error) {
	model := countModel(call.Model(), call.Step.Options)
	ct, ok := a.api.(Counter)
	if !ok || call.Req.API != exchange.Messages || !speaksMessages(call.Model(), call.Step.Options) || model == "" {
		return 0, provider.ErrCannotCount
	}
	var sys *chatwire.Variant
	if v := call.Variant(); v != nil && v.EditsSystem() {
		sys = &chatwire.Variant{System: v.System, SystemPrefix: v.SystemPrefix, SystemSuffix: v.SystemSuffix}
	}
	body, _, err := invokeBody(call, 0, 1, sys)
	if err != nil {
		return 0, err
	}
	out, err := ct.CountTokens(ctx, &bedrockruntime.CountTokensInput{ModelId: aws.String(model),
		Input: &types.CountTokensInputMemberInvokeModel{Value: types.InvokeModelTokensRequest{Body: body}}}, traceHeader(call.Req.TraceParent))
	if err != nil {
		observeError(call, err)
		return 0, callError(ctx, a.id, err)
	}
	if out.InputTokens == nil {
		return 0, &gwerr.Error{Category: gwerr.Unavailable, Message: "provider returned no input token count", Provider: a.id}
	}
	return int(*out.InputTokens), nil
}
