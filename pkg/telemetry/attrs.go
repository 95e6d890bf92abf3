package telemetry

import (
	commonpb "go.opentelemetry.io/proto/otlp/common/v1"
)

// Attribute names: the OpenTelemetry GenAI semantic conventions' where they
// have one, the gateway's own under llmgw.*.
const (
	AttrOperation     = "gen_ai.operation.name"
	AttrProvider      = "gen_ai.provider.name"
	AttrRequestModel  = "gen_ai.request.model"
	AttrResponseModel = "gen_ai.response.model"
	AttrInputTokens   = "gen_ai.usage.input_tokens"
	AttrOutputTokens  = "gen_ai.usage.output_tokens"
	AttrFinishReasons = "gen_ai.response.finish_reasons"
	AttrTTFC          = "gen_ai.response.time_to_first_chunk"
	AttrTokenType     = "gen_ai.token.type"
	AttrErrorType     = "error.type"
	AttrServerAddress = "server.address"
	AttrHTTPStatus    = "http.response.status_code"
	AttrInputMessages = "gen_ai.input.messages"
	AttrOutputMessage = "gen_ai.output.messages"
	AttrSystemInstr   = "gen_ai.system_instructions"

	AttrRoute           = "llmgw.route"
	AttrTarget          = "llmgw.target"
	AttrTeam            = "llmgw.team"
	AttrTag             = "llmgw.tag"
	AttrAttempt         = "llmgw.attempt"
	AttrAttempts        = "llmgw.attempts"
	AttrCategory        = "llmgw.category"
	AttrPhase           = "llmgw.phase"
	AttrBreaker         = "llmgw.breaker.decision"
	AttrFallbackDepth   = "llmgw.fallback_depth"
	AttrCacheHit        = "llmgw.cache.hit"
	AttrCache           = "llmgw.cache"
	AttrContinues       = "llmgw.continues"
	AttrStage           = "llmgw.stage"
	AttrRequestID       = "llmgw.request_id"
	AttrAPI             = "llmgw.api"
	AttrOutcome         = "llmgw.outcome"
	AttrSkipped         = "llmgw.skipped"
	AttrTraceSource     = "llmgw.trace_source"
	EventContent        = "gen_ai.client.inference.operation.details"
	EventSkipped        = "llmgw.target.skipped"
	MetricTokenUsage    = "gen_ai.client.token.usage"
	MetricDuration      = "gen_ai.client.operation.duration"
	MetricTimeToFirst   = "gen_ai.client.operation.time_to_first_chunk"
	MetricDroppedSpans  = "llmgw.telemetry.dropped_spans"
	overflowAttr        = "otel.metric.overflow"
	otherValue          = "_other"
	scopeName           = "github.com/llmgw/llmgw/pkg/telemetry"
	providerNameUnknown = "_OTHER"
)

func str(k, v string) *commonpb.KeyValue {
	return &commonpb.KeyValue{Key: k, Value: &commonpb.AnyValue{Value: &commonpb.AnyValue_StringValue{StringValue: v}}}
}

func num(k string, v int64) *commonpb.KeyValue {
	return &commonpb.KeyValue{Key: k, Value: &commonpb.AnyValue{Value: &commonpb.AnyValue_IntValue{IntValue: v}}}
}

func flt(k string, v float64) *commonpb.KeyValue {
	return &commonpb.KeyValue{Key: k, Value: &commonpb.AnyValue{Value: &commonpb.AnyValue_DoubleValue{DoubleValue: v}}}
}

func boolean(k string, v bool) *commonpb.KeyValue {
	return &commonpb.KeyValue{Key: k, Value: &commonpb.AnyValue{Value: &commonpb.AnyValue_BoolValue{BoolValue: v}}}
}

func strs(k string, vs []string) *commonpb.KeyValue {
	arr := &commonpb.ArrayValue{}
	for _, v := range vs {
		arr.Values = append(arr.Values, &commonpb.AnyValue{Value: &commonpb.AnyValue_StringValue{StringValue: v}})
	}
	return &commonpb.KeyValue{Key: k, Value: &commonpb.AnyValue{Value: &commonpb.AnyValue_ArrayValue{ArrayValue: arr}}}
}

func scope() *commonpb.InstrumentationScope {
	return &commonpb.InstrumentationScope{Name: scopeName}
}

// providerName is the gen_ai.provider.name of a provider kind.
func providerName(kind string) string {
	switch kind {
	case "openai":
		return "openai"
	case "anthropic":
		return "anthropic"
	case "bedrock":
		return "aws.bedrock"
	case "gemini":
		return "gcp.gemini"
	case "":
		return providerNameUnknown
	}
	return kind
}
