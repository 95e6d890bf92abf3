package fakellm

import (
	"bytes"
	"io"
	"net/http"
	"strconv"
)

// Transport is an http.RoundTripper that answers every request with its
// script, in process, in the wire format of the request's path (as
// Handler does). The fake provider kind uses it under the openai adapter, and
// under the anthropic adapter for Messages when it lists messages in apis.
type Transport struct {
	Script *Script
}

var _ http.RoundTripper = (*Transport)(nil)

// RoundTrip implements http.RoundTripper.
func (t *Transport) RoundTrip(req *http.Request) (*http.Response, error) {
	ctx := req.Context()
	body, err := io.ReadAll(req.Body)
	req.Body.Close()
	if err != nil {
		return nil, err
	}
	s := t.Script
	rq := parseRequest(body)
	api := apiOf(req.URL.Path)
	if api == apiCountTokens {
		b := countTokensBody(rq)
		return response(req, 200, http.Header{"Content-Type": {"application/json"}}, io.NopCloser(bytes.NewReader(b)), len(b)), nil
	}
	switch s.Fail {
	case "reset":
		return nil, errReset
	case "stall":
		<-ctx.Done()
		return nil, ctx.Err()
	case "status":
		if err := sleep(ctx, s.FirstTokenDelay.D()); err != nil {
			return nil, err
		}
		h := http.Header{"Content-Type": {"application/json"}}
		if s.Status == 429 {
			h.Set("Retry-After", "1")
		}
		b := api.errorBody(s.Status)
		return response(req, s.Status, h, io.NopCloser(bytes.NewReader(b)), len(b)), nil
	}
	if !rq.stream {
		if err := sleep(ctx, s.FirstTokenDelay.D()); err != nil {
			return nil, err
		}
		b := api.completion(s, rq)
		if s.Fail == "after_chunks" {
			return response(req, 200, http.Header{"Content-Type": {"application/json"}},
				io.NopCloser(io.MultiReader(bytes.NewReader(b[:len(b)/2]), errReader{})), len(b)), nil
		}
		return response(req, 200, http.Header{"Content-Type": {"application/json"}}, io.NopCloser(bytes.NewReader(b)), len(b)), nil
	}
	pr, pw := io.Pipe()
	go func() {
		err := api.writeStream(ctx, s, rq, pw, func() {})
		if err == nil {
			err = io.EOF
		}
		pw.CloseWithError(err)
	}()
	return response(req, 200, http.Header{"Content-Type": {"text/event-stream"}}, &ctxBody{pr, req}, -1), nil
}

// ctxBody closes the pipe when the reader closes it, ending the writer.
type ctxBody struct {
	*io.PipeReader
	req *http.Request
}

func (b *ctxBody) Close() error { return b.PipeReader.CloseWithError(io.ErrClosedPipe) }

type errReader struct{}

func (errReader) Read([]byte) (int, error) { return 0, errReset }

func response(req *http.Request, status int, h http.Header, body io.ReadCloser, n int) *http.Response {
	return &http.Response{
		Status: strconv.Itoa(status) + " " + http.StatusText(status), StatusCode: status,
		Proto: "HTTP/1.1", ProtoMajor: 1, ProtoMinor: 1,
		Header: h, Body: body, ContentLength: int64(n), Request: req,
	}
}
