package openaicompat_test

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/llmgw/llmgw/pkg/config"
	"github.com/llmgw/llmgw/pkg/exchange"
	"github.com/llmgw/llmgw/pkg/gwerr"
	"github.com/llmgw/llmgw/pkg/provider/openaicompat"
)

// TestAWSErrorShape: an OpenAI-compatible endpoint that answers errors in
// AWS's shape (Bedrock's: the type in x-amzn-ErrorType, a top-level
// message) is classified by them, as OpenAI's error object is.
func TestAWSErrorShape(t *testing.T) {
	for _, tc := range []struct {
		name, errType, body string
		status              int
		want                gwerr.Category
	}{
		{"throttling by type", "ThrottlingException:http://internal.amazon.com/coral/com.amazon.bedrock/", `{"message":"Too many tokens, please wait before trying again."}`, 400, gwerr.RateLimited},
		{"context by message", "ValidationException", `{"message":"Input is too long for requested model."}`, 400, gwerr.ContextLength},
		{"openai object wins", "ThrottlingException", `{"error":{"message":"bad","type":"invalid_request_error"}}`, 400, gwerr.InvalidRequest},
	} {
		t.Run(tc.name, func(t *testing.T) {
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				io.Copy(io.Discard, r.Body)
				w.Header().Set("Content-Type", "application/json")
				w.Header().Set("x-amzn-ErrorType", tc.errType)
				w.WriteHeader(tc.status)
				io.WriteString(w, tc.body)
			}))
			defer srv.Close()
			a, err := openaicompat.NewAt("br", &config.Provider{Kind: "openai"}, srv.Client(), openaicompat.Upstream{BaseURL: srv.URL + "/openai/v1"})
			if err != nil {
				t.Fatal(err)
			}
			call := promptCall(exchange.Chat, nil)
			call.Req.Body = []byte(`{"model":"m","messages":[{"role":"user","content":"hi"}]}`)
			_, err = a.Send(context.Background(), call)
			if ge := gwerr.As(err); ge == nil || ge.Category != tc.want {
				t.Errorf("error %v, want category %s", err, tc.want)
			}
		})
	}
}
