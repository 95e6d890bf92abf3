// Package bedrockwire is the Amazon Bedrock Runtime API as a wire format
// (the bedrock-runtime service model, restJson1, 2023-09-30): the request
// and response shapes of Converse, ConverseStream and CountTokens, the
// events of a ConverseStream and of an InvokeModelWithResponseStream (its
// `chunk` events), error bodies, the paths of the operations, and the
// application/vnd.amazon.eventstream frame writer (eventstream.go). Field
// names and casing are the service model's: the AWS SDKs are strict about
// both.
//
// The Bedrock Runtime ingress (pkg/ingress/bedrock) reads and writes
// through it. InvokeModel bodies are a model family's own format (Anthropic
// Messages for Claude): they live in that family's wire package
// (messageswire.FromBedrockInvoke, messageswire.ToBedrockInvoke).
package bedrockwire

import "strings"

// Operation names a Bedrock Runtime operation served at
// POST /model/{modelId}/{operation path}.
type Operation string

// The operations, by the last segment of their path.
const (
	Converse                      Operation = "converse"
	ConverseStream                Operation = "converse-stream"
	InvokeModel                   Operation = "invoke"
	InvokeModelWithResponseStream Operation = "invoke-with-response-stream"
	CountTokens                   Operation = "count-tokens"
)

// Operations lists every operation the ingress serves.
var Operations = []Operation{Converse, ConverseStream, InvokeModel, InvokeModelWithResponseStream, CountTokens}

// Streams reports whether the operation answers with an event stream.
func (o Operation) Streams() bool {
	return o == ConverseStream || o == InvokeModelWithResponseStream
}

// PathPrefix starts the path of every model operation.
const PathPrefix = "/model/"

// ParsePath splits a decoded request path /model/{modelId}/{operation}
// into the model id and the operation. The model id may itself hold '/'
// (an ARN the SDKs percent-encode as %2F, which the HTTP server decodes):
// the operation is the last segment. ok is false for any other path or an
// unknown operation.
func ParsePath(path string) (modelID string, op Operation, ok bool) {
	rest, found := strings.CutPrefix(path, PathPrefix)
	if !found {
		return "", "", false
	}
	i := strings.LastIndexByte(rest, '/')
	if i <= 0 {
		return "", "", false
	}
	modelID, op = rest[:i], Operation(rest[i+1:])
	for _, o := range Operations {
		if o == op {
			return modelID, op, true
		}
	}
	return "", "", false
}

// EventStreamType is the media type of a streamed response.
const EventStreamType = "application/vnd.amazon.eventstream"

// ErrorTypeHeader is the header that names an error's exception type; the
// SDKs pick their exception class from it.
const ErrorTypeHeader = "X-Amzn-Errortype"

// RequestIDHeader carries the request id the SDKs report with an error.
const RequestIDHeader = "X-Amzn-Requestid"

// The exception types of error responses (x-amzn-ErrorType), with the
// statuses Bedrock answers them with.
const (
	ValidationException           = "ValidationException"           // 400
	AccessDeniedException         = "AccessDeniedException"         // 403
	ResourceNotFoundException     = "ResourceNotFoundException"     // 404
	ModelTimeoutException         = "ModelTimeoutException"         // 408
	ModelNotReadyException        = "ModelNotReadyException"        // 429
	ThrottlingException           = "ThrottlingException"           // 429
	ServiceQuotaExceededException = "ServiceQuotaExceededException" // 400
	InternalServerException       = "InternalServerException"       // 500
	ServiceUnavailableException   = "ServiceUnavailableException"   // 503
	ModelErrorException           = "ModelErrorException"           // 424
	ModelStreamErrorException     = "ModelStreamErrorException"     // 424 (in a stream)
)

// Service names the Bedrock Runtime API in a gwerr.Upstream error: an
// upstream failure an adapter of this API (pkg/provider/bedrock) reports
// under its exception type, for an ingress of the same API to answer with.
const Service = "bedrock-runtime"

// ExceptionStatus is the HTTP status of each exception type the gateway
// answers with as Bedrock does (the service model's httpError).
var ExceptionStatus = map[string]int{
	ValidationException: 400, AccessDeniedException: 403, ResourceNotFoundException: 404, ModelTimeoutException: 408,
	ModelNotReadyException: 429, ThrottlingException: 429, ServiceQuotaExceededException: 400, InternalServerException: 500,
	ServiceUnavailableException: 503, ModelErrorException: 424,
}

// StreamMember is the exception-frame type (`:exception-type`) of an
// exception type inside a ConverseStream (invoke: an
// InvokeModelWithResponseStream), "" when that stream has no such member.
func StreamMember(exception string, invoke bool) string {
	switch exception {
	case InternalServerException:
		return StreamInternalServer
	case ValidationException:
		return StreamValidation
	case ThrottlingException:
		return StreamThrottling
	case ServiceUnavailableException:
		return StreamServiceUnavailable
	case ModelStreamErrorException:
		return StreamModelStreamError
	case ModelTimeoutException:
		if invoke {
			return StreamModelTimeout
		}
	}
	return ""
}

// ExceptionOf is the exception type of a stream member (its upper-camel
// name: throttlingException -> ThrottlingException).
func ExceptionOf(member string) string {
	if member == "" || member[0] < 'a' || member[0] > 'z' {
		return member
	}
	return string(member[0]-'a'+'A') + member[1:]
}

// The exceptions a stream may carry instead of its next event (the
// `:exception-type` of an exception frame: the union member names of
// ConverseStreamOutput and ResponseStream, lower camel case).
// StreamModelTimeout is a ResponseStream member only.
const (
	StreamInternalServer     = "internalServerException"
	StreamModelStreamError   = "modelStreamErrorException"
	StreamValidation         = "validationException"
	StreamThrottling         = "throttlingException"
	StreamServiceUnavailable = "serviceUnavailableException"
	StreamModelTimeout       = "modelTimeoutException"
)

// The events of a ConverseStream (`:event-type`).
const (
	EventMessageStart      = "messageStart"
	EventContentBlockStart = "contentBlockStart"
	EventContentBlockDelta = "contentBlockDelta"
	EventContentBlockStop  = "contentBlockStop"
	EventMessageStop       = "messageStop"
	EventMetadata          = "metadata"
)

// EventChunk is the one event of an InvokeModelWithResponseStream: a
// PayloadPart whose bytes are one event of the model's own stream.
const EventChunk = "chunk"
