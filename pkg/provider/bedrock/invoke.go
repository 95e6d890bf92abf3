package bedrock

import (
	"cmp"
	"context"
	"strings"
	"sync/atomic"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/bedrockruntime"
	"github.com/aws/aws-sdk-go-v2/service/bedrockruntime/types"
	"github.com/tidwall/gjson"

	"github.com/llmgw/llmgw/pkg/exchange"
	"github.com/llmgw/llmgw/pkg/gwerr"
	"github.com/llmgw/llmgw/pkg/modelid"
	"github.com/llmgw/llmgw/pkg/provider"
	"github.com/llmgw/llmgw/pkg/wire/chatwire"
	"github.com/llmgw/llmgw/pkg/wire/messageswire"
)

// Claude through InvokeModel: a client of the Messages API served by a
// target whose model is Anthropic's (speaksMessages: a base model id
// anthropic.claude-..., a cross-region inference profile such as
// us.anthropic.claude-... or global.anthropic.claude-..., or an ARN whose
// model is one, an application inference profile by its base_model
// option). The descriptor says such a target speaks the Messages API
// (config.Kind.TargetSpeaks), so requests holding what only that API
// carries (adaptive thinking, context_management, output_config, ...)
// reach it with no route setting, and never go to Converse.
//
// What Bedrock does not offer (Anthropic's server tools, MCP servers, a
// container, Files API sources: messageswire.BedrockRefuses) is refused
// before any call, as unsupported, so the failover engine tries the next
// target. The request is the client's body as Bedrock takes it
// (messageswire.ToBedrockInvoke: no model or stream, anthropic_version
// bedrock-2023-05-31, the anthropic-beta header's values in the body's
// anthropic_beta, context_management, output_config and thinking.display
// left out, as Claude Code's own Bedrock mode sends it), after the
// target's prompt variant and the admitted output cap; what it left out is
// noted on the request's trace, so the response names it in
// x-gateway-dropped-features and the record lists it. A streaming request
// goes to InvokeModelWithResponseStream, whose chunk events each carry one
// Anthropic stream event, relayed as the SSE frame Anthropic would send
// (invokeStream); a non-streaming one goes to InvokeModel, whose body is
// the Anthropic message, relayed whole. Errors of the call are classified
// as Converse's (callError), exceptions inside the stream as
// ConverseStream's (streamError), so the failover engine retries or falls
// back before the first content only.

// Streamer is the part of the Bedrock runtime client a streamed Messages
// request uses. The SDK client has it; an API without it cannot serve one.
type Streamer interface {
	InvokeModelWithResponseStream(ctx context.Context, params *bedrockruntime.InvokeModelWithResponseStreamInput, optFns ...func(*bedrockruntime.Options)) (*bedrockruntime.InvokeModelWithResponseStreamOutput, error)
}

var _ Streamer = (*bedrockruntime.Client)(nil)

// speaksMessages reports whether a target serves the Messages API natively
// through InvokeModel: its model is Anthropic's.
func speaksMessages(model string, opts map[string]string) bool { return claude(model, opts) }

// invokeBody is the InvokeModel body of a Messages request at this
// target, and the features it went without.
func invokeBody(call *provider.Call, limit, defaultMax int, v *chatwire.Variant) ([]byte, []string, error) {
	body, err := chatwire.ApplyVariantMembers(call.Req.Body, v, messageswire.Variant)
	if err != nil {
		return nil, nil, err
	}
	return messageswire.ToBedrockInvoke(body, messageswire.BedrockInvoke{Betas: call.Req.Header.Values("anthropic-beta"),
		MaxTokens: limit, DefaultMaxTokens: defaultMax})
}

// sendMessages serves a Messages request through InvokeModel (see above).
func (a *Adapter) sendMessages(ctx context.Context, call *provider.Call) (provider.Stream, error) {
	model := call.Model()
	if param, what, ok := messageswire.BedrockRefuses(call.Req.Body); ok {
		return nil, provider.Unsupported(call.Step.ID, param, what)
	}
	body, dropped, err := invokeBody(call, call.OutputLimit(), 0, call.Variant())
	if err != nil {
		return nil, err
	}
	for _, k := range dropped {
		call.Req.Trace.NoteDrop(call.Step.ID, k)
	}
	if call.Req.Stream {
		st, ok := a.api.(Streamer)
		if !ok {
			return nil, provider.Unsupported(call.Step.ID, "stream", "streaming through InvokeModelWithResponseStream")
		}
		malformed := new(atomic.Int64)
		out, err := st.InvokeModelWithResponseStream(withMalformedCounter(ctx, malformed), &bedrockruntime.InvokeModelWithResponseStreamInput{
			ModelId: aws.String(model), Body: body, ContentType: aws.String("application/json"), Accept: aws.String("application/json"),
			ServiceTier: types.ServiceTierType(call.Step.ServiceTier),
		}, traceHeader(call.Req.TraceParent), ownStreamCodec)
		if err != nil {
			observeError(call, err)
			return nil, callError(ctx, a.id, err)
		}
		observe(call, out.ResultMetadata)
		es := out.GetStream()
		if es == nil || es.Reader == nil {
			return nil, &gwerr.Error{Category: gwerr.Unavailable, Message: "provider returned no event stream", Provider: a.id}
		}
		return &invokeStream{id: a.id, ctx: ctx, es: es, reqBytes: len(body), malformed: malformed, trace: &call.Req.Trace,
			tier: string(out.ServiceTier)}, nil
	}
	inv, ok := a.api.(Invoker)
	if !ok {
		return nil, provider.Unsupported(call.Step.ID, "model", "the Messages API through InvokeModel")
	}
	out, err := inv.InvokeModel(ctx, &bedrockruntime.InvokeModelInput{ModelId: aws.String(model), Body: body,
		ContentType: aws.String("application/json"), Accept: aws.String("application/json"),
		ServiceTier: types.ServiceTierType(call.Step.ServiceTier)}, traceHeader(call.Req.TraceParent))
	if err != nil {
		observeError(call, err)
		return nil, callError(ctx, a.id, err)
	}
	observe(call, out.ResultMetadata)
	return wholeMessage(a.id, out.Body, string(out.ServiceTier))
}

// wholeMessage is the stream of a non-streaming answer: one Raw event with
// the Anthropic message as Bedrock returned it (Whole | HasContent,
// HasFinish with its stop_reason); an empty one (no content, no output
// tokens) is provider.EmptyResponse, an error object an in-band error.
func wholeMessage(id string, data []byte, tier string) (provider.Stream, error) {
	if !gjson.ValidBytes(data) {
		return nil, &gwerr.Error{Category: gwerr.Unavailable, Message: "provider returned malformed JSON", Provider: id}
	}
	mi, _ := messageswire.ReadMessage(nil, data)
	if mi.Error {
		return nil, provider.InBandError(id, mi.ErrorType)
	}
	u := provider.MessagesUsage(mi.Usage, mi.Container)
	u.Tier = cmp.Or(tier, u.Tier) // Bedrock bills by its own tier, the header's
	if !mi.Content && u.Output == 0 {
		return nil, provider.EmptyResponse(id)
	}
	ev := exchange.Event{Kind: exchange.Raw, Raw: data, RawAPI: exchange.Messages, Flags: exchange.Whole | exchange.HasContent}
	if stop := mi.StopReason; stop != "" {
		ev.Flags |= exchange.HasFinish
		ev.Finish, ev.Stop, ev.StopSequence = messageswire.FinishReason(stop), stop, mi.StopSequence
	}
	return provider.Events(u, ev), nil
}

// countModel is the model id CountTokens is asked about: the base model
// (CountTokens takes a foundation model, not an inference profile), ""
// when it is not known.
func countModel(model string, opts map[string]string) string {
	if b := opts["base_model"]; b != "" {
		return b
	}
	if b := modelid.Base(model); b != "" && !strings.HasPrefix(b, "arn:") {
		return b
	}
	return ""
}
