package provider

import (
	"context"
	"net/http"
)

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
// non-2xx response is returned for the adapter to read its error body.
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
