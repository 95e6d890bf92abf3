package bedrockwire

import "github.com/llmgw/llmgw/pkg/wire/jsonb"

// AppendErrorBody appends the body of an error response or exception
// frame: {"message": msg}. The exception type travels in the
// x-amzn-ErrorType header (ErrorTypeHeader) or the frame's
// :exception-type header, never in the body.
func AppendErrorBody(dst []byte, msg string) []byte {
	dst = append(dst, `{"message":`...)
	dst = jsonb.AppendString(dst, msg)
	return append(dst, '}')
}
