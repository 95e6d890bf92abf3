package bedrock

import (
	"context"
	"errors"
	"net/http"

	"github.com/aws/smithy-go"
	smithyhttp "github.com/aws/smithy-go/transport/http"

	"github.com/llmgw/llmgw/pkg/gwerr"
	"github.com/llmgw/llmgw/pkg/provider"
	"github.com/llmgw/llmgw/pkg/retryafter"
	"github.com/llmgw/llmgw/pkg/wire/bedrockwire"
)

// isA reports whether err's chain holds a T (one of the SDK's exception types).
func isA[T error](err error) bool {
	var t T
	return errors.As(err, &t)
}

// httpResponse returns the status and headers of the HTTP response behind
// an SDK error, if there was one.
func httpResponse(err error) (int, http.Header) {
	var re *smithyhttp.ResponseError
	if errors.As(err, &re) && re.Response != nil && re.Response.Response != nil {
		return re.Response.StatusCode, re.Response.Header
	}
	return 0, nil
}

// detail is the exception's message, redacted, for the caller's own mistakes.
func detail(err error) string {
	var ae smithy.APIError
	if errors.As(err, &ae) {
		return gwerr.Redact(ae.ErrorMessage())
	}
	return ""
}

// callError classifies an error from Converse or ConverseStream itself
// (before any event):
//
//	ThrottlingException, ServiceQuotaExceededException -> rate_limited
//	ServiceUnavailableException, ModelNotReadyException -> unavailable
//	ModelErrorException, InternalServerException        -> unavailable
//	ModelTimeoutException                               -> timeout
//	ValidationException                                 -> invalid_request (redacted detail)
//	ResourceNotFoundException                           -> not_found (redacted detail)
//	AccessDeniedException                               -> provider credentials (as an HTTP 403)
//	a body over the gateway's bound                     -> unavailable, upstream_body_too_large
//	any other HTTP error                                -> provider.StatusError by status
//	no HTTP response                                    -> provider.TransportError
func callError(ctx context.Context, id string, err error) error {
	if ctx.Err() != nil {
		return provider.TransportError(ctx, id, err)
	}
	status, h := httpResponse(err)
	if e := classify(id, err, false); e != nil {
		e.Status = status
		if e.Category == gwerr.RateLimited && h != nil {
			e.RetryAfter = retryafter.Parse(h, timeNow())
		}
		return e
	}
	if status != 0 {
		var ae smithy.APIError
		code := ""
		if errors.As(err, &ae) {
			code = ae.ErrorCode()
		}
		e := provider.StatusError(id, status, code, detail(err), retryafter.Parse(h, timeNow()))
		e.Cause = err
		return e
	}
	return provider.TransportError(ctx, id, err)
}

// streamError classifies an error that ended the event stream:
//
//	modelStreamErrorException, internalServerException -> interrupted (a provider fault)
//	throttlingException                                -> rate_limited
//	serviceUnavailableException                        -> unavailable
//	validationException                                -> invalid_request (redacted detail)
//	a frame over the gateway's bound                   -> unavailable, upstream_body_too_large
//	anything else (a broken frame, a reset)            -> interrupted
//
// Before the first content the failover engine may retry or fall back on
// these; after it, the client gets an error event, never a clean finish.
func streamError(id string, err error) error {
	if e := classify(id, err, true); e != nil {
		return e
	}
	return provider.Interrupted(id, "broke off", err)
}

// classify maps the SDK's exception types (by their exception name, so
// an exception the SDK did not model for the operation is mapped too); nil
// when err is none of them.
func classify(id string, err error, inStream bool) *gwerr.Error {
	var ge *gwerr.Error
	if errors.As(err, &ge) && ge.Code == provider.CodeUpstreamBodyTooLarge {
		return ge // the body bound (plainBodies), as it is
	}
	var ae smithy.APIError
	if !errors.As(err, &ae) {
		return nil
	}
	return classifyException(id, ae.ErrorCode(), gwerr.Redact(ae.ErrorMessage()), err, inStream)
}

// classifyException maps a Bedrock exception type (name, as the SDKs and
// x-amzn-ErrorType name it: ThrottlingException, ...) with its message
// (redacted) to the gateway's error; nil for a name it does not know.
// The error's chain holds a gwerr.Upstream naming the exception (and the
// upstream error err under it), so a Bedrock client is answered with the
// same type. inStream: the exception ended an event stream.
func classifyException(id, name, msg string, err error, inStream bool) *gwerr.Error {
	cause := &gwerr.Upstream{Service: bedrockwire.Service, Type: name, Err: err}
	mk := func(c gwerr.Category, msg string) *gwerr.Error {
		return &gwerr.Error{Category: c, Message: msg, Provider: id, Cause: cause}
	}
	switch name {
	case bedrockwire.ModelStreamErrorException:
		if inStream {
			return provider.Interrupted(id, "failed: the model reported an error (modelStreamErrorException)", cause)
		}
		return mk(gwerr.Unavailable, "provider model failed (ModelStreamErrorException)")
	case bedrockwire.InternalServerException:
		if inStream {
			return provider.Interrupted(id, "failed: the provider reported an internal error (internalServerException)", cause)
		}
		return mk(gwerr.Unavailable, "provider failed (InternalServerException)")
	case bedrockwire.ThrottlingException:
		return mk(gwerr.RateLimited, "provider rate limit reached (ThrottlingException)")
	case bedrockwire.ServiceQuotaExceededException:
		return mk(gwerr.RateLimited, "provider quota exceeded (ServiceQuotaExceededException)")
	case bedrockwire.ServiceUnavailableException:
		return mk(gwerr.Unavailable, "provider is unavailable (ServiceUnavailableException)")
	case bedrockwire.ModelNotReadyException:
		return mk(gwerr.Unavailable, "provider model is not ready (ModelNotReadyException)")
	case bedrockwire.ModelErrorException:
		return mk(gwerr.Unavailable, "provider model failed (ModelErrorException)")
	case bedrockwire.ModelTimeoutException:
		return mk(gwerr.Timeout, "provider model timed out (ModelTimeoutException)")
	case bedrockwire.ValidationException:
		e := mk(gwerr.InvalidRequest, "provider rejected the request (ValidationException)")
		e.Detail = msg
		return e
	case bedrockwire.ResourceNotFoundException:
		e := mk(gwerr.NotFound, "provider does not know the model (ResourceNotFoundException)")
		e.Detail = msg
		return e
	case bedrockwire.AccessDeniedException:
		// The gateway's own credentials: never the caller's exception.
		e := provider.StatusError(id, http.StatusForbidden, "", "", 0)
		e.Cause = err
		return e
	}
	return nil
}
