package provider

import (
	"bytes"
	"context"
	"io"
	"net/http"

	"github.com/llmgw/llmgw/pkg/gwerr"
)

// MaxErrBody caps how much of an upstream error body is read to classify
// it.
const MaxErrBody = 64 << 10

// Sender is the one HTTP send of every HTTP adapter (openaicompat,
// anthropic, gemini): it posts a JSON body to one upstream with the common
// headers (SetRequestHeaders), reports every response to the call (Do), and
// turns a non-2xx answer into the adapter's classified error.
type Sender struct {
	// Provider is the provider id, named in errors.
	Provider string
	// Client carries the transport; it has no total Timeout (streams are
	// bounded by the failover engine).
	Client *http.Client
	// Headers are the provider's static headers.
	Headers map[string]string
	// AuthHeader is the header the key goes in (SetKeyHeader).
	AuthHeader string
	// StatusError classifies a non-2xx response from its status, headers
	// and the first MaxErrBody bytes of its body; secret is the key that
	// was sent, to be redacted from any message. Nil classifies by status
	// alone.
	StatusError func(resp *http.Response, body []byte, secret string) error
	// Authorize, when set, authenticates each request once its headers
	// and body are final (Bedrock's OpenAI-compatible endpoints: a SigV4
	// signature, or a Bedrock API key as a Bearer token); body is the
	// bytes sent. Nil: the call's provider key in AuthHeader. Its error
	// fails the attempt before any byte is sent (unavailable, unless it
	// is a *gwerr.Error already).
	Authorize func(req *http.Request, body []byte) error
}

// Post sends body to url and returns the success response, whose body the
// caller reads and closes. header, when set, adds the adapter's own
// headers first (the static headers, trace context and key are set after
// it). A failure is classified: TransportError, or StatusError for a
// non-2xx status.
func (s *Sender) Post(ctx context.Context, call *Call, url string, body []byte, stream bool, header func(http.Header)) (*http.Response, error) {
	return s.Send(ctx, call, http.MethodPost, url, body, stream, header)
}

// Send is Post with another method (GET, DELETE: the Responses API's
// stored responses); a nil body sends none.
func (s *Sender) Send(ctx context.Context, call *Call, method, url string, body []byte, stream bool, header func(http.Header)) (*http.Response, error) {
	var rd io.Reader
	if body != nil {
		rd = bytes.NewReader(body)
	}
	req, err := http.NewRequestWithContext(ctx, method, url, rd)
	if err != nil {
		return nil, &gwerr.Error{Category: gwerr.Internal, Message: "could not build upstream request", Provider: s.Provider, Cause: err}
	}
	if header != nil {
		header(req.Header)
	}
	SetRequestHeaders(req.Header, call, stream, s.Headers, s.AuthHeader)
	if s.Authorize != nil {
		if err := s.Authorize(req, body); err != nil {
			if ge, ok := err.(*gwerr.Error); ok {
				return nil, ge
			}
			return nil, &gwerr.Error{Category: gwerr.Unavailable, Message: "could not authenticate the upstream request", Provider: s.Provider, Cause: err}
		}
	}
	resp, err := Do(ctx, s.Client, s.Provider, call, req)
	if err != nil {
		return nil, err
	}
	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		defer resp.Body.Close()
		raw, _ := io.ReadAll(io.LimitReader(resp.Body, MaxErrBody))
		if s.StatusError == nil {
			return nil, StatusError(s.Provider, resp.StatusCode, "", "", 0)
		}
		return nil, s.StatusError(resp, raw, call.Key.Secret)
	}
	return resp, nil
}

// SetRequestHeaders sets the headers every HTTP adapter sends on an
// upstream request: a JSON body, the Accept of a stream (SSE, no
// compression, so frames arrive as they are written) or of a whole body,
// the provider's static headers, the trace context and the provider key
// (in authHeader; see SetKeyHeader). Adapter-specific headers are set by
// the adapter around it.
func SetRequestHeaders(h http.Header, call *Call, stream bool, static map[string]string, authHeader string) {
	h.Set("Content-Type", "application/json")
	h.Set("User-Agent", "llmgw")
	if stream {
		h.Set("Accept", "text/event-stream")
		h.Set("Accept-Encoding", "identity")
	} else {
		h.Set("Accept", "application/json")
	}
	for k, v := range static {
		h.Set(k, v)
	}
	SetTraceHeader(h, call.Req)
	SetKeyHeader(h, authHeader, call.Key)
}

// Do sends an upstream request and reports the response (success or not)
// to call.OnResponse, so the key ledger sees every status and rate-limit
// header. A transport failure comes back classified (TransportError); a
// non-2xx response is returned for the caller to read its error body.
func Do(ctx context.Context, client *http.Client, providerID string, call *Call, req *http.Request) (*http.Response, error) {
	resp, err := client.Do(req)
	if err != nil {
		return nil, TransportError(ctx, providerID, err)
	}
	if call.OnResponse != nil {
		call.OnResponse(resp.StatusCode, resp.Header)
	}
	return resp, nil
}

// NoRedirects is the CheckRedirect of every upstream client: a redirect is
// never followed. The 3xx answer comes back as it is, a provider error
// (StatusError: unavailable, so the engine moves on), and neither a
// credential header of any kind (Authorization, x-api-key, x-goog-api-key,
// api-key, a SigV4 signature) nor the prompt reaches the host it names.
func NoRedirects(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }
