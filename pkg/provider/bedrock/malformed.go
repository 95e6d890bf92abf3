package bedrock

import (
	"bytes"
	"context"
	"encoding/binary"
	"encoding/json"
	"hash/crc32"
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
// on byte for byte (as read when it checks out, re-encoded otherwise). Exceptions and corrupt frames are passed on
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

// frameFilter drops event frames with a malformed JSON payload. A frame
// that checks out (prelude and message CRCs, headers well formed) is
// passed on as the bytes it came in, without a copy into a Message; any
// other frame goes through the SDK's decoder and encoder (slow), so a
// corrupt frame is reported exactly as the decoder reports it.
type frameFilter struct {
	body    io.ReadCloser
	n       *atomic.Int64
	dec     *eventstream.Decoder
	enc     *eventstream.Encoder
	payload []byte
	prelude [preludeLen]byte
	frame   []byte // the frame being passed on
	off     int    // bytes of frame already read
	out     bytes.Buffer
	err     error
}

// Read implements io.Reader: the next frames that are not dropped.
func (f *frameFilter) Read(p []byte) (int, error) {
	for f.off == len(f.frame) && f.out.Len() == 0 {
		if f.err != nil {
			return 0, f.err
		}
		f.next()
	}
	if f.off < len(f.frame) {
		n := copy(p, f.frame[f.off:])
		f.off += n
		return n, nil
	}
	return f.out.Read(p)
}

const (
	preludeLen = 12 // total length, headers length, prelude CRC
	minFrame   = preludeLen + 4
)

// next reads one frame: into frame when it checks out and is kept, into
// out through the decoder (slow) otherwise; a dropped frame leaves both
// empty, an error sets err.
func (f *frameFilter) next() {
	f.frame, f.off = f.frame[:0], 0
	prelude := f.prelude[:]
	n, err := io.ReadFull(f.body, prelude)
	if err != nil {
		f.slow(prelude[:n])
		return
	}
	total, hlen := binary.BigEndian.Uint32(prelude[0:4]), binary.BigEndian.Uint32(prelude[4:8])
	if total < minFrame || hlen > total-minFrame || crc32.ChecksumIEEE(prelude[:8]) != binary.BigEndian.Uint32(prelude[8:12]) {
		f.slow(prelude)
		return
	}
	if cap(f.frame) < int(total) {
		f.frame = make([]byte, 0, total)
	}
	f.frame = append(f.frame[:0], prelude...)[:total]
	if n, err := io.ReadFull(f.body, f.frame[preludeLen:]); err != nil {
		f.slow(f.frame[:preludeLen+n])
		return
	}
	if crc32.ChecksumIEEE(f.frame[:total-4]) != binary.BigEndian.Uint32(f.frame[total-4:]) {
		f.slow(f.frame)
		return
	}
	mt, ct, ok := frameHeaders(f.frame[preludeLen : preludeLen+hlen])
	if !ok {
		f.slow(f.frame)
		return
	}
	payload := f.frame[preludeLen+hlen : total-4]
	if len(payload) > 0 && string(mt) == "event" && (ct == nil || bytes.Contains(ct, []byte("json"))) && !json.Valid(payload) {
		f.n.Add(1)
		f.frame = f.frame[:0]
	}
}

// slow decodes one frame whose first bytes, read, did not check out, with
// the SDK's decoder (reading the rest from body), and re-encodes it into
// out, or drops it, or sets err as the decoder says.
func (f *frameFilter) slow(read []byte) {
	owned := append([]byte(nil), read...)
	f.frame, f.off = f.frame[:0], 0
	m, err := f.dec.Decode(io.MultiReader(bytes.NewReader(owned), f.body), f.payload[:0])
	if err != nil {
		f.err = err
		return
	}
	if cap(m.Payload) > cap(f.payload) {
		f.payload = m.Payload[:0]
	}
	if malformedEvent(&m) {
		f.n.Add(1)
		return
	}
	f.out.Reset()
	if err := f.enc.Encode(&f.out, m); err != nil {
		f.err = err
	}
}

// frameHeaders returns the :message-type and :content-type string headers
// of a frame's header block; ok is false when the block is not well formed
// or either header is not a string (the slow path decides then).
func frameHeaders(h []byte) (msgType, contentType []byte, ok bool) {
	for len(h) > 0 {
		nl := int(h[0])
		if len(h) < 1+nl+1 {
			return nil, nil, false
		}
		name := h[1 : 1+nl]
		typ := h[1+nl]
		h = h[2+nl:]
		var size int
		switch typ {
		case 0, 1: // true, false
		case 2:
			size = 1
		case 3:
			size = 2
		case 4:
			size = 4
		case 5, 8: // int64, timestamp
			size = 8
		case 9: // uuid
			size = 16
		case 6, 7: // bytes, string
			if len(h) < 2 {
				return nil, nil, false
			}
			size = 2 + int(binary.BigEndian.Uint16(h))
		default:
			return nil, nil, false
		}
		if len(h) < size {
			return nil, nil, false
		}
		isType, isCT := string(name) == ":message-type", string(name) == ":content-type"
		if isType || isCT {
			if typ != 7 {
				return nil, nil, false
			}
			v := h[2:size]
			if isType {
				msgType = v
			} else {
				contentType = v
			}
		}
		h = h[size:]
	}
	return msgType, contentType, true
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
