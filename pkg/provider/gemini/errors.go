package gemini

import (
	"encoding/json"
	"net/http"
	"strings"
	"time"

	"github.com/llmgw/llmgw/pkg/gwerr"
	"github.com/llmgw/llmgw/pkg/provider"
	"github.com/llmgw/llmgw/pkg/retryafter"
)

// Errors: the Gemini API answers a failure with a google.rpc.Status
// envelope, {"error": {"code", "message", "status", "details"}}, with the
// HTTP status equal to code:
//
//	429 RESOURCE_EXHAUSTED   -> rate_limited, RetryAfter from RetryInfo.retryDelay
//	                            ("37s", a protobuf Duration) or Retry-After, the longer
//	503 UNAVAILABLE          -> overloaded
//	500 INTERNAL             -> unavailable
//	504 DEADLINE_EXCEEDED    -> timeout
//	400 INVALID_ARGUMENT     -> invalid_request with the redacted message; "The input
//	                            token count (N) exceeds the maximum number of tokens
//	                            allowed (M)" -> context_length
//	400 with ErrorInfo reason API_KEY_INVALID, 401, 403 -> the gateway's credentials
//	400 FAILED_PRECONDITION  -> unavailable (the API will not serve this deployment:
//	                            unsupported location, billing)
//	404 NOT_FOUND            -> not_found
//
// The same envelope inside a success (an SSE data frame, or the body of a
// 200) is an in-band error, classified by its code the same way.

// statusCodes maps the canonical status names to their HTTP status, for an
// error object that gives no code.
var statusCodes = map[string]int{
	"INVALID_ARGUMENT": 400, "FAILED_PRECONDITION": 400, "OUT_OF_RANGE": 400, "UNAUTHENTICATED": 401,
	"PERMISSION_DENIED": 403, "NOT_FOUND": 404, "ABORTED": 409, "ALREADY_EXISTS": 409,
	"RESOURCE_EXHAUSTED": 429, "CANCELLED": 499, "INTERNAL": 500, "UNKNOWN": 500, "DATA_LOSS": 500,
	"UNIMPLEMENTED": 501, "UNAVAILABLE": 503, "DEADLINE_EXCEEDED": 504,
}

// classify builds the gateway error for an API error object received with
// HTTP status (0: in band). secret is redacted from the message.
func classify(prov string, status int, e apiError, h http.Header, secret string) *gwerr.Error {
	if e.Code != 0 && (status == 0 || status == http.StatusOK) {
		status = e.Code
	}
	if status == 0 || status == http.StatusOK {
		status = statusCodes[e.Status]
	}
	var retry time.Duration
	if h != nil {
		retry = retryafter.Parse(h, timeNow())
	}
	words := []string{strings.ToLower(e.Status)}
	keyInvalid := false
	for _, d := range e.Details {
		if strings.HasSuffix(d.Type, "google.rpc.RetryInfo") {
			if v, err := time.ParseDuration(d.RetryDelay); err == nil && v > retry {
				retry = v
			}
		}
		if d.Reason != "" {
			words = append(words, strings.ToLower(d.Reason))
			keyInvalid = keyInvalid || d.Reason == "API_KEY_INVALID"
		}
	}
	classAs := status
	if keyInvalid { // Gemini answers a bad key with 400 INVALID_ARGUMENT
		classAs = http.StatusUnauthorized
	}
	ge := provider.StatusError(prov, classAs, strings.Join(words, " "), gwerr.Redact(e.Message, secret), retry)
	ge.Status = status
	if e.Status == "FAILED_PRECONDITION" && ge.Category == gwerr.InvalidRequest {
		ge.Category, ge.Message, ge.Detail = gwerr.Unavailable, "provider will not serve this request (FAILED_PRECONDITION)", ""
	}
	return ge
}

// statusError reads a non-success response's body and classifies it.
func statusError(prov string, resp *http.Response, raw []byte, secret string) *gwerr.Error {
	var b errorBody
	if json.Unmarshal(raw, &b) != nil {
		// A list holding the envelope, as some Google front ends send.
		var list []errorBody
		if json.Unmarshal(raw, &list) == nil && len(list) > 0 {
			b = list[0]
		}
	}
	return classify(prov, resp.StatusCode, b.Error, resp.Header, secret)
}
