package server

import (
	"net/http"
	"strconv"

	"github.com/llmgw/llmgw/pkg/gwerr"
	"github.com/llmgw/llmgw/pkg/openaiwire"
	"github.com/llmgw/llmgw/pkg/sse"
)

// encoder frames a committed response for the wire: SSE for streams, the
// body as it is for JSON.
type encoder interface {
	frame(data []byte) []byte
	end() []byte
	fail(envelope []byte) []byte
}

// sseEncoder writes data frames, [DONE] at a clean end, and at a failure
// one error frame and no [DONE]. It reuses one buffer.
type sseEncoder struct{ buf []byte }

func (e *sseEncoder) frame(data []byte) []byte {
	e.buf = sse.AppendData(e.buf[:0], data)
	return e.buf
}
func (e *sseEncoder) end() []byte                 { return sse.Done }
func (e *sseEncoder) fail(envelope []byte) []byte { return sse.AppendData(nil, envelope) }

// jsonEncoder writes the one frame of a non-streaming response. A failure
// after commit cannot happen there: the body is whole before it is sent.
type jsonEncoder struct{}

func (jsonEncoder) frame(data []byte) []byte    { return data }
func (jsonEncoder) end() []byte                 { return nil }
func (jsonEncoder) fail(envelope []byte) []byte { return nil }

// writeError writes an error response in the OpenAI error shape and returns
// the status sent.
func writeError(w http.ResponseWriter, e *gwerr.Error, rid string) int {
	return writeErrorStatus(w, e, rid, e.Category.Status())
}

func writeErrorStatus(w http.ResponseWriter, e *gwerr.Error, rid string, status int) int {
	h := w.Header()
	h.Set("Content-Type", "application/json")
	h.Set("x-gateway-error-category", string(e.Category))
	if e.RetryAfter > 0 {
		h.Set("Retry-After", strconv.Itoa(int(e.RetryAfter.Seconds()+0.999)))
	}
	w.WriteHeader(status)
	w.Write(openaiwire.NewErrorEnvelope(e, rid, nil).Marshal())
	return status
}
