package openaicompat

import (
	"context"
	"io"
	"net/http"
	"net/url"

	"github.com/llmgw/llmgw/pkg/gwerr"
	"github.com/llmgw/llmgw/pkg/provider"
	"github.com/llmgw/llmgw/pkg/wire/chatwire"
)

// ResponsesResource makes one call on the Responses API state the
// provider keeps, for a provider that speaks the Responses API natively
// (apis: [responses]): method on {base_url}/responses + path, with
// query's parameters added to the base URL's own (Azure's api-version):
//
//	GET    /{id}              a stored response
//	DELETE /{id}              delete it
//	GET    /{id}/input_items  its input items (query: after, limit, order, include)
//	POST   /{id}/cancel       cancel a background response
//	POST   /compact           compact a conversation (body: the client's, model rewritten)
//
// The answer's body comes back whole and untouched. A provider that does
// not speak the Responses API refuses without a network call
// (provider.Unsupported: the failover engine passes it over).
func (a *Adapter) ResponsesResource(ctx context.Context, call *provider.Call, method, path string, query url.Values, body []byte) ([]byte, error) {
	if !a.responses {
		return nil, provider.Unsupported(call.Step.ID, "", "the Responses API's stored responses")
	}
	u, err := url.Parse(a.responsesEndpoint)
	if err != nil {
		return nil, &gwerr.Error{Category: gwerr.Internal, Message: "bad responses endpoint", Provider: a.id, Cause: err}
	}
	u.Path += path
	if len(query) > 0 {
		q := u.Query()
		for k, vs := range query {
			q[k] = vs
		}
		u.RawQuery = q.Encode()
	}
	if body != nil {
		if body, err = chatwire.Rewrite(make([]byte, 0, len(body)+32), body, chatwire.RewriteOptions{Model: call.Model()}); err != nil {
			return nil, err
		}
	}
	resp, err := a.send.Send(ctx, call, method, u.String(), body, false, nil)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(resp.Body) // bounded by the client (provider.LimitTransport)
	if err != nil {
		return nil, provider.TransportError(ctx, a.id, err)
	}
	if resp.StatusCode == http.StatusNoContent || len(data) == 0 {
		return []byte("{}"), nil
	}
	return data, nil
}
