package bedrockwire

import (
	"bytes"

	"github.com/aws/aws-sdk-go-v2/aws/protocol/eventstream"
)

// The frame writer: every message of a Bedrock event stream is one
// application/vnd.amazon.eventstream frame (total length, headers length,
// prelude CRC, headers, payload, message CRC), encoded by the AWS SDK's
// eventstream package. Events carry the headers
//
//	:message-type  event
//	:event-type    messageStart, contentBlockDelta, chunk, ...
//	:content-type  application/json
//
// and exceptions
//
//	:message-type    exception
//	:exception-type  modelStreamErrorException, throttlingException, ...
//	:content-type    application/json
//
// with the event's or the exception's JSON as the payload.

// AppendEvent appends one event frame of type eventType with payload (a
// JSON object).
func AppendEvent(dst []byte, eventType string, payload []byte) []byte {
	return appendFrame(dst, "event", ":event-type", eventType, payload)
}

// AppendException appends one exception frame of type excType (a Stream*
// name) whose payload is {"message": msg}.
func AppendException(dst []byte, excType, msg string) []byte {
	return appendFrame(dst, "exception", ":exception-type", excType, AppendErrorBody(nil, msg))
}

func appendFrame(dst []byte, msgType, typeHeader, typ string, payload []byte) []byte {
	var hs eventstream.Headers
	hs.Set(":message-type", eventstream.StringValue(msgType))
	hs.Set(typeHeader, eventstream.StringValue(typ))
	hs.Set(":content-type", eventstream.StringValue("application/json"))
	buf := bytes.NewBuffer(dst)
	// Encode fails only when its writer does; a bytes.Buffer never does.
	_ = eventstream.NewEncoder().Encode(buf, eventstream.Message{Headers: hs, Payload: payload})
	return buf.Bytes()
}
