package bedrockwire

import (
	"encoding/base64"
	"strconv"

	"github.com/llmgw/llmgw/pkg/wire/jsonb"
)

// The response side: a Converse body, the payloads of ConverseStream's
// events, and an InvokeModelWithResponseStream chunk. Each Append function
// appends one JSON value.

// The stop reasons of a Converse answer (StopReason in the service model).
const (
	StopEndTurn              = "end_turn"
	StopToolUse              = "tool_use"
	StopMaxTokens            = "max_tokens"
	StopStopSequence         = "stop_sequence"
	StopGuardrailIntervened  = "guardrail_intervened"
	StopContentFiltered      = "content_filtered"
	StopMalformedModelOutput = "malformed_model_output"
	StopMalformedToolUse     = "malformed_tool_use"
	StopContextWindow        = "model_context_window_exceeded"
)

// StopReasons is the set of stop reasons the SDKs know.
var StopReasons = map[string]bool{StopEndTurn: true, StopToolUse: true, StopMaxTokens: true, StopStopSequence: true,
	StopGuardrailIntervened: true, StopContentFiltered: true, StopMalformedModelOutput: true, StopMalformedToolUse: true,
	StopContextWindow: true}

// Usage is a TokenUsage: Input counts the uncached prompt tokens, as
// Bedrock does (cache reads and writes are counted apart, and totalTokens
// is the sum of all four).
type Usage struct {
	Input, Output, CacheRead, CacheWrite int
	// CacheWrite1h is the part of CacheWrite written with a 1-hour
	// lifetime (cacheDetails entries with ttl "1h"), read only; Tier the
	// service tier that served the request (serviceTier.type beside the
	// usage), read only.
	CacheWrite1h int
	Tier         string
}

// AppendUsage appends a TokenUsage object.
func AppendUsage(dst []byte, u Usage) []byte {
	dst = append(dst, `{"inputTokens":`...)
	dst = strconv.AppendInt(dst, int64(u.Input), 10)
	dst = append(dst, `,"outputTokens":`...)
	dst = strconv.AppendInt(dst, int64(u.Output), 10)
	dst = append(dst, `,"totalTokens":`...)
	dst = strconv.AppendInt(dst, int64(u.Input+u.Output+u.CacheRead+u.CacheWrite), 10)
	if u.CacheRead > 0 || u.CacheWrite > 0 {
		dst = append(dst, `,"cacheReadInputTokens":`...)
		dst = strconv.AppendInt(dst, int64(u.CacheRead), 10)
		dst = append(dst, `,"cacheWriteInputTokens":`...)
		dst = strconv.AppendInt(dst, int64(u.CacheWrite), 10)
	}
	return append(dst, '}')
}

// AppendMetrics appends a ConverseMetrics (or ConverseStreamMetrics) object.
func AppendMetrics(dst []byte, latencyMs int64) []byte {
	dst = append(dst, `{"latencyMs":`...)
	dst = strconv.AppendInt(dst, latencyMs, 10)
	return append(dst, '}')
}

// AppendTextBlock appends a text content block.
func AppendTextBlock(dst []byte, text string) []byte {
	dst = append(dst, `{"text":`...)
	dst = jsonb.AppendString(dst, text)
	return append(dst, '}')
}

// AppendToolUseBlock appends a toolUse content block; input is its JSON
// object.
func AppendToolUseBlock(dst []byte, id, name string, input []byte) []byte {
	dst = append(dst, `{"toolUse":{"toolUseId":`...)
	dst = jsonb.AppendString(dst, id)
	dst = append(dst, `,"name":`...)
	dst = jsonb.AppendString(dst, name)
	dst = append(dst, `,"input":`...)
	dst = append(dst, input...)
	return append(dst, "}}"...)
}

// AppendReasoningBlock appends a reasoningContent block with visible
// reasoning and its signature.
func AppendReasoningBlock(dst []byte, text, signature string) []byte {
	dst = append(dst, `{"reasoningContent":{"reasoningText":{"text":`...)
	dst = jsonb.AppendString(dst, text)
	if signature != "" {
		dst = append(dst, `,"signature":`...)
		dst = jsonb.AppendString(dst, signature)
	}
	return append(dst, "}}}"...)
}

// AppendRedactedBlock appends a reasoningContent block of redacted
// reasoning; b64 is its bytes in base64 (the blob's JSON form).
func AppendRedactedBlock(dst []byte, b64 string) []byte {
	dst = append(dst, `{"reasoningContent":{"redactedContent":`...)
	dst = jsonb.AppendString(dst, b64)
	return append(dst, "}}"...)
}

// AppendConverseResponse appends a Converse response body:
//
//	{"output":{"message":{"role":"assistant","content":[blocks]}},
//	 "stopReason":...,"usage":{...},"metrics":{"latencyMs":...}}
//
// blocks is the content blocks, already joined with commas.
func AppendConverseResponse(dst, blocks []byte, stopReason string, u Usage, latencyMs int64) []byte {
	dst = append(dst, `{"output":{"message":{"role":"assistant","content":[`...)
	dst = append(dst, blocks...)
	dst = append(dst, `]}},"stopReason":`...)
	dst = jsonb.AppendString(dst, stopReason)
	dst = append(dst, `,"usage":`...)
	dst = AppendUsage(dst, u)
	dst = append(dst, `,"metrics":`...)
	dst = AppendMetrics(dst, latencyMs)
	return append(dst, '}')
}

// MessageStartPayload is the payload of a messageStart event.
const MessageStartPayload = `{"role":"assistant"}`

// AppendToolUseStart appends a contentBlockStart payload opening toolUse
// block index.
func AppendToolUseStart(dst []byte, index int, id, name string) []byte {
	dst = append(dst, `{"start":{"toolUse":{"toolUseId":`...)
	dst = jsonb.AppendString(dst, id)
	dst = append(dst, `,"name":`...)
	dst = jsonb.AppendString(dst, name)
	dst = append(dst, `}},"contentBlockIndex":`...)
	dst = strconv.AppendInt(dst, int64(index), 10)
	return append(dst, '}')
}

// The kinds of a contentBlockDelta.
const (
	DeltaText      = "text"      // {"text": s}
	DeltaToolInput = "toolUse"   // {"toolUse": {"input": s}}
	DeltaReasoning = "reasoning" // {"reasoningContent": {"text": s}}
	DeltaSignature = "signature" // {"reasoningContent": {"signature": s}}
	DeltaRedacted  = "redacted"  // {"reasoningContent": {"redactedContent": s (base64)}}
)

// AppendDelta appends a contentBlockDelta payload of kind (a Delta*) for
// block index.
func AppendDelta(dst []byte, index int, kind, s string) []byte {
	dst = append(dst, `{"delta":`...)
	switch kind {
	case DeltaText:
		dst = append(dst, `{"text":`...)
		dst = jsonb.AppendString(dst, s)
		dst = append(dst, '}')
	case DeltaToolInput:
		dst = append(dst, `{"toolUse":{"input":`...)
		dst = jsonb.AppendString(dst, s)
		dst = append(dst, "}}"...)
	default:
		field := map[string]string{DeltaReasoning: "text", DeltaSignature: "signature", DeltaRedacted: "redactedContent"}[kind]
		dst = append(dst, `{"reasoningContent":{"`...)
		dst = append(dst, field...)
		dst = append(dst, `":`...)
		dst = jsonb.AppendString(dst, s)
		dst = append(dst, "}}"...)
	}
	dst = append(dst, `,"contentBlockIndex":`...)
	dst = strconv.AppendInt(dst, int64(index), 10)
	return append(dst, '}')
}

// AppendBlockStop appends a contentBlockStop payload.
func AppendBlockStop(dst []byte, index int) []byte {
	dst = append(dst, `{"contentBlockIndex":`...)
	dst = strconv.AppendInt(dst, int64(index), 10)
	return append(dst, '}')
}

// AppendMessageStop appends a messageStop payload.
func AppendMessageStop(dst []byte, stopReason string) []byte {
	dst = append(dst, `{"stopReason":`...)
	dst = jsonb.AppendString(dst, stopReason)
	return append(dst, '}')
}

// AppendMetadata appends a metadata payload: usage and metrics.
func AppendMetadata(dst []byte, u Usage, latencyMs int64) []byte {
	dst = append(dst, `{"usage":`...)
	dst = AppendUsage(dst, u)
	dst = append(dst, `,"metrics":`...)
	dst = AppendMetrics(dst, latencyMs)
	return append(dst, '}')
}

// AppendChunk appends a chunk event's payload (a PayloadPart): the bytes of
// one model stream event, base64 in the JSON.
func AppendChunk(dst, event []byte) []byte {
	dst = append(dst, `{"bytes":"`...)
	dst = base64.StdEncoding.AppendEncode(dst, event)
	return append(dst, `"}`...)
}

// InvocationMetrics are the figures Bedrock adds to the last Anthropic
// stream event of an InvokeModelWithResponseStream, as the member
// "amazon-bedrock-invocationMetrics".
type InvocationMetrics struct {
	InputTokens, OutputTokens, CacheRead, CacheWrite int
	LatencyMs, FirstByteLatencyMs                    int64
}

// InvocationMetricsMember is the member name of InvocationMetrics.
const InvocationMetricsMember = "amazon-bedrock-invocationMetrics"

// AppendInvocationMetrics appends the InvocationMetrics object.
func AppendInvocationMetrics(dst []byte, m InvocationMetrics) []byte {
	dst = append(dst, `{"inputTokenCount":`...)
	dst = strconv.AppendInt(dst, int64(m.InputTokens), 10)
	dst = append(dst, `,"outputTokenCount":`...)
	dst = strconv.AppendInt(dst, int64(m.OutputTokens), 10)
	dst = append(dst, `,"invocationLatency":`...)
	dst = strconv.AppendInt(dst, m.LatencyMs, 10)
	dst = append(dst, `,"firstByteLatency":`...)
	dst = strconv.AppendInt(dst, m.FirstByteLatencyMs, 10)
	dst = append(dst, `,"cacheReadInputTokenCount":`...)
	dst = strconv.AppendInt(dst, int64(m.CacheRead), 10)
	dst = append(dst, `,"cacheWriteInputTokenCount":`...)
	dst = strconv.AppendInt(dst, int64(m.CacheWrite), 10)
	return append(dst, '}')
}
