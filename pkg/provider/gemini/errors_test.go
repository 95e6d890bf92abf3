package gemini

import (
	"context"
	"errors"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/llmgw/llmgw/pkg/gwerr"
	"github.com/llmgw/llmgw/pkg/provider"
)

// TestErrorClassification checks the Gemini API's error envelopes against
// the gateway's categories.
func TestErrorClassification(t *testing.T) {
	cases := []struct {
		name   string
		status int
		header http.Header
		body   string
		cat    gwerr.Category
		code   string
		retry  time.Duration
		detail string
	}{
		{"resource_exhausted_retry_info", 429, nil, `{"error":{"code":429,"message":"You exceeded your current quota, please check your plan and billing details.","status":"RESOURCE_EXHAUSTED","details":[
			{"@type":"type.googleapis.com/google.rpc.QuotaFailure","violations":[{"quotaMetric":"generativelanguage.googleapis.com/generate_content_free_tier_requests","quotaId":"GenerateRequestsPerMinutePerProjectPerModel-FreeTier"}]},
			{"@type":"type.googleapis.com/google.rpc.Help","links":[{"description":"Learn more","url":"https://ai.google.dev/gemini-api/docs/rate-limits"}]},
			{"@type":"type.googleapis.com/google.rpc.RetryInfo","retryDelay":"37s"}]}}`, gwerr.RateLimited, "", 37 * time.Second, ""},
		{"resource_exhausted_fractional_delay_and_header", 429, http.Header{"Retry-After": {"2"}}, `{"error":{"code":429,"message":"Resource has been exhausted (e.g. check quota).","status":"RESOURCE_EXHAUSTED","details":[{"@type":"type.googleapis.com/google.rpc.RetryInfo","retryDelay":"0.5s"}]}}`,
			gwerr.RateLimited, "", 2 * time.Second, ""},
		{"unavailable", 503, nil, `{"error":{"code":503,"message":"The model is overloaded. Please try again later.","status":"UNAVAILABLE"}}`, gwerr.Overloaded, "", 0, ""},
		{"internal", 500, nil, `{"error":{"code":500,"message":"An internal error has occurred.","status":"INTERNAL"}}`, gwerr.Unavailable, "", 0, ""},
		{"deadline", 504, nil, `{"error":{"code":504,"message":"Deadline expired before operation could complete.","status":"DEADLINE_EXCEEDED"}}`, gwerr.Timeout, "", 0, ""},
		{"invalid_argument", 400, nil, `{"error":{"code":400,"message":"* GenerateContentRequest.contents: contents is not specified","status":"INVALID_ARGUMENT"}}`,
			gwerr.InvalidRequest, "", 0, "* GenerateContentRequest.contents: contents is not specified"},
		{"context_length", 400, nil, `{"error":{"code":400,"message":"The input token count (1200293) exceeds the maximum number of tokens allowed (1048576).","status":"INVALID_ARGUMENT"}}`,
			gwerr.ContextLength, "context_length_exceeded", 0, "The input token count (1200293) exceeds the maximum number of tokens allowed (1048576)."},
		{"api_key_invalid", 400, nil, `{"error":{"code":400,"message":"API key not valid. Please pass a valid API key.","status":"INVALID_ARGUMENT","details":[{"@type":"type.googleapis.com/google.rpc.ErrorInfo","reason":"API_KEY_INVALID","domain":"googleapis.com"}]}}`,
			gwerr.Unavailable, provider.CodeProviderCredentials, 0, ""},
		{"permission_denied", 403, nil, `{"error":{"code":403,"message":"Method doesn't allow unregistered callers.","status":"PERMISSION_DENIED"}}`, gwerr.Unavailable, provider.CodeProviderCredentials, 0, ""},
		{"failed_precondition", 400, nil, `{"error":{"code":400,"message":"User location is not supported for the API use.","status":"FAILED_PRECONDITION"}}`, gwerr.Unavailable, "", 0, ""},
		{"not_found", 404, nil, `{"error":{"code":404,"message":"models/gemini-9 is not found for API version v1beta.","status":"NOT_FOUND"}}`, gwerr.NotFound, "", 0, "models/gemini-9 is not found for API version v1beta."},
		{"list_envelope", 503, nil, `[{"error":{"code":503,"message":"overloaded","status":"UNAVAILABLE"}}]`, gwerr.Overloaded, "", 0, ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			f := newFakeAPI(t, func(w http.ResponseWriter, r *http.Request) {
				for k, v := range c.header {
					w.Header()[k] = v
				}
				serveJSON(c.status, c.body)(w, r)
			})
			_, err := newTestAdapter(t, f).Send(context.Background(), newCall(t, `{"model":"m","messages":[{"role":"user","content":"Hi"}]}`))
			var ge *gwerr.Error
			if !errors.As(err, &ge) {
				t.Fatalf("err = %v", err)
			}
			if ge.Category != c.cat || ge.Code != c.code || ge.RetryAfter != c.retry || ge.Detail != c.detail || ge.Status != c.status || ge.Provider != "g" {
				t.Errorf("got category %s code %q retry %s detail %q status %d, want %s %q %s %q %d",
					ge.Category, ge.Code, ge.RetryAfter, ge.Detail, ge.Status, c.cat, c.code, c.retry, c.detail, c.status)
			}
		})
	}
}

// TestErrorDetailRedactsTheKey: an upstream message never carries the
// gateway's key to a client.
func TestErrorDetailRedactsTheKey(t *testing.T) {
	f := newFakeAPI(t, serveJSON(400, `{"error":{"code":400,"message":"bad request for key `+testKey+`","status":"INVALID_ARGUMENT"}}`))
	_, err := newTestAdapter(t, f).Send(context.Background(), newCall(t, `{"model":"m","messages":[{"role":"user","content":"Hi"}]}`))
	var ge *gwerr.Error
	if !errors.As(err, &ge) || strings.Contains(ge.Detail, testKey) || strings.Contains(ge.Error(), testKey) {
		t.Fatalf("the key leaked: %v (detail %q)", err, ge.Detail)
	}
}
