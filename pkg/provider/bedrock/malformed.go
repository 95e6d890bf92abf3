package bedrock

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"sync/atomic"

	"github.com/aws/aws-sdk-go-v2/aws/protocol/eventstream"
)

// Malformed events. The SDK's event-stream reader ends the whole stream
// when one event's JSON payload does not decode, so an upstream that
// garbles one event would cut a stream that otherwise completes. The
// gateway drops such frames before the SDK sees them: the response body of
// a ConverseStream call is read through a frameFilter that decodes each
// event-stream frame (CRCs checked, as the SDK does), drops an event whose
// JSON payload is not valid JSON, counts it, and passes every other frame
// on re-encoded byte for byte. Exceptions and corrupt frames are passed on
// (or reported) as before.

// malformedKey carries a call's malformed-frame counter in its context, to
// the HTTP client that wraps the body.
type malformedKey struct{}

// withMalformedCounter returns ctx carrying n, which the call's frame
// filter increments for each event it drops.
func withMalformedCounter(ctx context.Context, n *atomic.Int64) context.Context {
	return context.WithValue(ctx, malformedKey{}, n)
}

// filterBody wraps an event-stream response body whose request carries a
// counter.
func filterBody(r *http.Request, resp *http.Response) {
	n, _ := r.Context().Value(malformedKey{}).(*atomic.Int64)
	if n == nil || resp.Body == nil || !strings.HasPrefix(resp.Header.Get("Content-Type"), "application/vnd.amazon.eventstream") {
		return
	}
	resp.Body = &frameFilter{body: resp.Body, n: n, dec: eventstream.NewDecoder(), enc: eventstream.NewEncoder()}
}

// frameFilter drops event frames with a malformed JSON payload.
type frameFilter struct {
	body    io.ReadCloser
	n       *atomic.Int64
	dec     *eventstream.Decoder
	enc     *eventstream.Encoder
	payload []byte
	out     bytes.Buffer
	err     error
}

// Read implements io.Reader: the next frames that are not dropped.
func (f *frameFilter) Read(p []byte) (int, error) {
	for f.out.Len() == 0 {
		if f.err != nil {
			return 0, f.err
		}
		m, err := f.dec.Decode(f.body, f.payload[:0])
		if err != nil {
			f.err = err
			continue
		}
		if cap(m.Payload) > cap(f.payload) {
			f.payload = m.Payload[:0]
		}
		if malformedEvent(&m) {
			f.n.Add(1)
			continue
		}
		f.out.Reset()
		if err := f.enc.Encode(&f.out, m); err != nil {
			f.err = err
		}
	}
	return f.out.Read(p)
}

// Close implements io.Closer.
func (f *frameFilter) Close() error { return f.body.Close() }

// malformedEvent reports whether m is an event whose JSON payload is not
// valid JSON.
func malformedEvent(m *eventstream.Message) bool {
	if len(m.Payload) == 0 {
		return false
	}
	if mt := m.Headers.Get(":message-type"); mt == nil || mt.String() != "event" {
		return false
	}
	if ct := m.Headers.Get(":content-type"); ct != nil && !strings.Contains(ct.String(), "json") {
		return false
	}
	return !json.Valid(m.Payload)
}
