package provider

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"time"

	"github.com/llmgw/llmgw/pkg/exchange"
	"github.com/llmgw/llmgw/pkg/gwerr"
	"github.com/llmgw/llmgw/pkg/wire/chatwire"
)

// CodeProviderCredentials marks an upstream 401/403: the gateway's key was
// rejected. It is the gateway's fault, not the caller's, so it is reported to
// clients as unavailable, does not penalise the target's breaker, and makes
// the key ledger set that key aside.
const CodeProviderCredentials = "provider_credentials"

// CodeUnsupportedFeature marks an invalid_request for a feature a target
// cannot honour (n>1 on Anthropic, audio on Bedrock, ...). Adapters return it
// before any network call. The failover engine skips such a target and
// tries the next one; only when no target of the chain can honour the
// request does the client get this error, naming the feature and target.
const CodeUnsupportedFeature = "unsupported_feature"

// Unsupported is the error for a feature (a request field, named by param)
// that target ("provider/model") cannot honour.
func Unsupported(target, param, feature string) *gwerr.Error {
	return &gwerr.Error{Category: gwerr.InvalidRequest, Param: param, Code: CodeUnsupportedFeature,
		Message: feature + " is not supported by target " + target}
}

// StatusError builds the error for a non-success upstream response: status
// and the provider's error type and code (e.g. "overloaded_error", or
// "invalid_request_error content_policy_violation": pass every word the
// provider gave, separated by spaces) decide the category; detail is
// upstream text that the caller may see only for its own mistakes, so it
// must already be redacted. A request too long for the model's context is
// recognised by code or by the providers' documented messages.
func StatusError(providerID string, status int, errType, detail string, retryAfter time.Duration) *gwerr.Error {
	e := &gwerr.Error{Provider: providerID, Status: status, RetryAfter: retryAfter}
	t := strings.ToLower(errType)
	switch {
	case strings.Contains(t, "overloaded"):
		e.Category, e.Message = gwerr.Overloaded, "provider is overloaded"
	case status == http.StatusUnauthorized || status == http.StatusForbidden:
		e.Category, e.Code = gwerr.Unavailable, CodeProviderCredentials
		e.Message = "provider rejected the gateway's credentials"
	case contextLength(t, detail, status):
		e.Category, e.Code, e.Detail = gwerr.ContextLength, "context_length_exceeded", detail
		e.Message = "the request does not fit the model's context window"
	case strings.Contains(t, "content_filter") || strings.Contains(t, "content_policy") || strings.Contains(t, "safety"):
		e.Category, e.Message, e.Detail = gwerr.ContentPolicy, "provider refused the content", detail
	case status == http.StatusTooManyRequests || strings.Contains(t, "rate_limit") || strings.Contains(t, "throttl"):
		e.Category, e.Message = gwerr.RateLimited, "provider rate limit reached"
	case status == http.StatusRequestTimeout || status == http.StatusGatewayTimeout:
		e.Category, e.Message = gwerr.Timeout, "provider timed out"
	case status == http.StatusServiceUnavailable || status == 529:
		e.Category, e.Message = gwerr.Overloaded, "provider is overloaded"
	case status == http.StatusConflict || status == 425 || status >= 500:
		e.Category, e.Message = gwerr.Unavailable, "provider failed"
	case status == http.StatusNotFound:
		e.Category, e.Message, e.Detail = gwerr.NotFound, "provider does not know the model or path", detail
	case status >= 400:
		e.Category, e.Message, e.Detail = gwerr.InvalidRequest, "provider rejected the request", detail
	default:
		e.Category, e.Message = gwerr.Unavailable, "provider returned an unexpected status"
	}
	return e
}

// contextPhrases are how providers say a prompt is too long when they give
// no code for it (Anthropic "prompt is too long: N tokens > M maximum",
// Bedrock "Input is too long for requested model", Gemini "The input token
// count (N) exceeds the maximum number of tokens allowed (M)", others
// "maximum context length").
var contextPhrases = []string{"context_length", "context length", "context window", "prompt is too long",
	"input is too long", "too many input tokens", "maximum context", "exceeds the context", "input token count"}

// contextLength reports whether an upstream error says the request does not
// fit the model's context window.
func contextLength(t, detail string, status int) bool {
	if strings.Contains(t, "context_length") || strings.Contains(t, "context_window") {
		return true
	}
	if status != 0 && status != http.StatusBadRequest && status != http.StatusRequestEntityTooLarge {
		return false
	}
	d := strings.ToLower(detail)
	for _, p := range contextPhrases {
		if strings.Contains(d, p) {
			return true
		}
	}
	return false
}

// TransportError classifies an error from sending a request or reading a
// response. A cancelled context is returned as it is (its cause tells the
// failover engine which timeout fired, or that the client left).
func TransportError(ctx context.Context, providerID string, err error) error {
	if ctx.Err() != nil {
		return context.Cause(ctx)
	}
	var ge *gwerr.Error
	if errors.As(err, &ge) {
		return err
	}
	c := gwerr.Unavailable
	msg := "provider connection failed"
	if errors.Is(err, context.DeadlineExceeded) {
		c, msg = gwerr.Timeout, "provider timed out"
	}
	return &gwerr.Error{Category: c, Message: msg, Provider: providerID, Cause: err}
}

// Interrupted is the error for a stream that ended without its terminal event.
func Interrupted(providerID, why string, cause error) *gwerr.Error {
	return &gwerr.Error{Category: gwerr.Interrupted, Message: "provider stream " + why, Provider: providerID, Cause: cause}
}

// EmptyResponse is the error for a success that carried no content, no tool
// call and no output tokens: it counts as a provider failure.
func EmptyResponse(providerID string) *gwerr.Error {
	return &gwerr.Error{Category: gwerr.Unavailable, Message: "provider returned an empty response", Provider: providerID, Code: "empty_response"}
}

// InBandError is the error for a failure the upstream reported inside a
// success response (an SSE error event, or an error object in a 200 body).
func InBandError(providerID, errType string) *gwerr.Error {
	e := StatusError(providerID, 0, errType, "", 0)
	if e.Message == "provider returned an unexpected status" {
		e.Message = "provider reported an error in the stream"
	}
	return e
}

// RefuseUntranslated returns the unsupported-feature error for an attempt
// at target whose provider does not speak the request's API natively
// (native false) while the request holds a feature only such an upstream
// can honour (exchange.Request.Untranslated); nil when the attempt may go
// ahead. The provider registry applies it to every adapter.
func RefuseUntranslated(req *exchange.Request, target string, native bool) *gwerr.Error {
	if native || len(req.Untranslated) == 0 {
		return nil
	}
	refused := req.RefusedFeatures(req.Policy.TranslateWithout)
	if len(refused) == 0 {
		return nil // the route lets translating targets serve without them
	}
	f := refused[0]
	e := Unsupported(target, f.Param, f.What)
	if f.Why == "" {
		f.Why = "only an upstream that speaks the " + string(req.API) + " API natively can honour it"
	}
	e.Message += ": " + f.Why
	return e
}

// UnknownChatField returns the first top-level member of a Chat
// Completions body that a translating adapter cannot carry: legacy function
// calling (functions, function_call) or a field outside known. It reads the
// bytes (chatwire.Members), decoding nothing; ok is false when every
// member is known. what describes the field for the refusal.
func UnknownChatField(body []byte, known map[string]bool) (param, what string, ok bool) {
	_ = chatwire.Members(body, func(k string, _ []byte) bool {
		switch {
		case k == "functions" || k == "function_call":
			param, what, ok = k, "legacy function calling ("+k+"; use tools)", true
		case !known[k]:
			param, what, ok = k, fmt.Sprintf("field %q", k), true
		}
		return !ok
	})
	return param, what, ok
}
