package provider

import (
	"context"
	"encoding/binary"
	"io"
	"net/http"
	"strconv"
	"strings"

	"github.com/llmgw/llmgw/pkg/config"
	"github.com/llmgw/llmgw/pkg/gwerr"
)

// Upstream body bounds. A whole (non-streaming) upstream body is read
// through a LimitBody reader (server.max_upstream_body_bytes), an error
// body up to MaxErrBody; a stream is bounded per frame (sse.Reader's
// maximum, LimitFrames for AWS event streams), never in total. The HTTP
// adapters get the bound from their client's transport (LimitTransport,
// installed by the registry); Bedrock's SDK client wraps its bodies the
// same way.

// CodeUpstreamBodyTooLarge marks an upstream answer longer than the
// gateway holds in memory. Its category is unavailable, so the failover
// engine tries the next target; the body is never logged.
const CodeUpstreamBodyTooLarge = "upstream_body_too_large"

// MaxEventFrame caps one AWS event-stream frame, the Bedrock streams'
// counterpart of sse.Reader's default per-frame maximum.
const MaxEventFrame = 4 << 20

// BodyTooLarge is the error for an upstream body of provider providerID
// longer than limit bytes.
func BodyTooLarge(providerID string, limit int64) *gwerr.Error {
	return &gwerr.Error{Category: gwerr.Unavailable, Code: CodeUpstreamBodyTooLarge, Provider: providerID,
		Message: "provider's response is larger than the gateway's limit of " + strconv.FormatInt(limit, 10) + " bytes"}
}

// bodyLimitKey carries the configured bound to adapter construction.
type bodyLimitKey struct{}

// WithBodyLimit returns ctx carrying server.max_upstream_body_bytes, for
// the registry to hand to the adapters it builds (their New reads it with
// BodyLimit).
func WithBodyLimit(ctx context.Context, n int64) context.Context {
	return context.WithValue(ctx, bodyLimitKey{}, n)
}

// BodyLimit returns the bound WithBodyLimit put in ctx, or
// config.DefaultMaxUpstreamBodyBytes.
func BodyLimit(ctx context.Context) int64 {
	if n, _ := ctx.Value(bodyLimitKey{}).(int64); n > 0 {
		return n
	}
	return config.DefaultMaxUpstreamBodyBytes
}

// LimitBody returns body, failing a Read with BodyTooLarge once more than
// limit bytes come. Close closes body (the connection is dropped, so an
// endless upstream stops being read).
func LimitBody(providerID string, body io.ReadCloser, limit int64) io.ReadCloser {
	return &limitedBody{body: body, left: limit, limit: limit, id: providerID}
}

// limitedBody is LimitBody's reader.
type limitedBody struct {
	body  io.ReadCloser
	left  int64
	limit int64
	id    string
	err   error
}

// Read implements io.Reader.
func (l *limitedBody) Read(p []byte) (int, error) {
	if l.err != nil {
		return 0, l.err
	}
	if int64(len(p)) > l.left+1 {
		p = p[:l.left+1]
	}
	n, err := l.body.Read(p)
	if int64(n) > l.left {
		l.err = BodyTooLarge(l.id, l.limit)
		l.body.Close()
		return int(l.left), l.err
	}
	l.left -= int64(n)
	return n, err
}

// Close implements io.Closer.
func (l *limitedBody) Close() error { return l.body.Close() }

// LimitTransport wraps next so that every whole body an adapter reads is
// read through LimitBody: a non-2xx body with MaxErrBody, any other with
// limit, unless it is a stream. A stream is the answer to a streaming
// request (Accept: text/event-stream, see SetRequestHeaders) that is not
// JSON, the adapters' own test for reading an SSE stream rather than a
// whole body.
func LimitTransport(providerID string, next http.RoundTripper, limit int64) http.RoundTripper {
	return limitTransport{id: providerID, next: next, limit: limit}
}

// limitTransport is LimitTransport's round tripper.
type limitTransport struct {
	id    string
	next  http.RoundTripper
	limit int64
}

// RoundTrip implements http.RoundTripper.
func (t limitTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	resp, err := t.next.RoundTrip(r)
	if err != nil || resp.Body == nil {
		return resp, err
	}
	switch {
	case resp.StatusCode < 200 || resp.StatusCode > 299:
		resp.Body = LimitBody(t.id, resp.Body, MaxErrBody)
	case r.Header.Get("Accept") != "text/event-stream" || strings.HasPrefix(resp.Header.Get("Content-Type"), "application/json"):
		resp.Body = LimitBody(t.id, resp.Body, t.limit)
	}
	return resp, nil
}

// LimitFrames returns body, an AWS event stream, failing a Read with
// BodyTooLarge once a frame's prelude declares more than limit bytes,
// before the frame is read (the SDK's decoder allocates what a frame
// declares). It passes every byte on unchanged.
func LimitFrames(providerID string, body io.ReadCloser, limit int64) io.ReadCloser {
	return &frameLimit{body: body, limit: limit, id: providerID}
}

// frameLimit is LimitFrames's reader: it follows frame boundaries by the
// 4-byte total length that opens each frame.
type frameLimit struct {
	body  io.ReadCloser
	limit int64
	id    string
	left  int64 // bytes of the current frame still to pass, after its length
	hdr   [4]byte
	hn    int // bytes of the next frame's length seen so far
	err   error
}

// Read implements io.Reader.
func (f *frameLimit) Read(p []byte) (int, error) {
	if f.err != nil {
		return 0, f.err
	}
	n, err := f.body.Read(p)
	for b := p[:n]; len(b) > 0; {
		if f.left > 0 {
			k := min(f.left, int64(len(b)))
			f.left -= k
			b = b[k:]
			continue
		}
		f.hdr[f.hn] = b[0]
		f.hn++
		b = b[1:]
		if f.hn == 4 {
			f.hn = 0
			total := int64(binary.BigEndian.Uint32(f.hdr[:]))
			if total > f.limit {
				f.err = BodyTooLarge(f.id, f.limit)
				f.body.Close()
				return 0, f.err
			}
			f.left = max(total-4, 0)
		}
	}
	return n, err
}

// Close implements io.Closer.
func (f *frameLimit) Close() error { return f.body.Close() }
