package bedrock

import (
	"errors"
	"net/http"

	"github.com/llmgw/llmgw/pkg/exchange"
	"github.com/llmgw/llmgw/pkg/gwerr"
	"github.com/llmgw/llmgw/pkg/ingress"
	"github.com/llmgw/llmgw/pkg/wire/bedrockwire"
)

// WriteError implements ingress.Ingress: Bedrock's error shape, the
// exception type in x-amzn-ErrorType, the request id in
// x-amzn-RequestId, the body {"message": ...}.
func (Ingress) WriteError(w http.ResponseWriter, req *exchange.Request, e *gwerr.Error) int {
	return WriteError(w, e, req.ID)
}

// WriteError writes e as Bedrock answers errors and returns the status.
func WriteError(w http.ResponseWriter, e *gwerr.Error, rid string) int {
	typ, status := Exception(e)
	h := w.Header()
	h.Set("Content-Type", "application/json")
	h.Set(bedrockwire.ErrorTypeHeader, typ)
	if rid != "" {
		h.Set(bedrockwire.RequestIDHeader, rid)
	}
	ingress.SetErrorHeaders(h, e)
	w.WriteHeader(status)
	w.Write(bedrockwire.AppendErrorBody(nil, message(e)))
	return status
}

// message is the client's message for e, with the trace id when known.
func message(e *gwerr.Error) string {
	m := gwerr.ClientMessage(e)
	if e.TraceID != "" {
		m += " (trace id " + e.TraceID + ")"
	}
	return m
}

// Exception is the exception type and HTTP status of e, as Bedrock answers
// them (and the SDKs map them: which they retry follows from the type).
//
// A Bedrock upstream's own exception (gwerr.Upstream, the error of the
// last target tried) comes back as it is, with the status the service
// model gives it, so the client's SDK raises and retries as Bedrock would
// have made it: ThrottlingException, ModelNotReadyException,
// ServiceUnavailableException, InternalServerException,
// ModelTimeoutException, ModelErrorException, ValidationException,
// ResourceNotFoundException, ServiceQuotaExceededException - never
// AccessDeniedException (the gateway's own credentials, not the
// caller's). A request none of whose targets was tried, every circuit
// breaker open (gwerr.Untried), is ServiceUnavailableException 503: every
// AWS SDK backs off and retries it (the Go SDK does not retry
// ModelNotReadyException). Otherwise by category:
//
//	invalid_request, content_policy, context_length -> ValidationException 400
//	authentication, permission                      -> AccessDeniedException 403
//	not_found                                       -> ResourceNotFoundException 404
//	timeout                                         -> ModelTimeoutException 408
//	rate_limited                                    -> ThrottlingException 429
//	budget_exceeded                                 -> ThrottlingException 429, the message
//	                                                   naming the budget (as every ingress
//	                                                   answers 429; ServiceQuotaExceededException
//	                                                   is not an error of Converse or InvokeModel)
//	overloaded, unavailable (no target could serve) -> ServiceUnavailableException 503
//	internal, and any other                         -> InternalServerException 500
func Exception(e *gwerr.Error) (string, int) {
	if typ := upstreamException(e); typ != "" {
		return typ, bedrockwire.ExceptionStatus[typ]
	}
	var untried *gwerr.Untried
	if errors.As(e, &untried) {
		return bedrockwire.ServiceUnavailableException, http.StatusServiceUnavailable
	}
	switch e.Category {
	case gwerr.InvalidRequest, gwerr.ContentPolicy, gwerr.ContextLength:
		return bedrockwire.ValidationException, http.StatusBadRequest
	case gwerr.Authentication, gwerr.Permission:
		return bedrockwire.AccessDeniedException, http.StatusForbidden
	case gwerr.NotFound:
		return bedrockwire.ResourceNotFoundException, http.StatusNotFound
	case gwerr.Timeout:
		return bedrockwire.ModelTimeoutException, http.StatusRequestTimeout
	case gwerr.RateLimited, gwerr.BudgetExceeded:
		return bedrockwire.ThrottlingException, http.StatusTooManyRequests
	case gwerr.Overloaded, gwerr.Unavailable:
		return bedrockwire.ServiceUnavailableException, http.StatusServiceUnavailable
	}
	return bedrockwire.InternalServerException, http.StatusInternalServerError
}

// upstreamException is the Bedrock exception type e carries from a
// Bedrock upstream when the gateway answers with it as it is ("" for
// none; see Exception).
func upstreamException(e *gwerr.Error) string {
	var up *gwerr.Upstream
	if !errors.As(e, &up) || up.Service != bedrockwire.Service {
		return ""
	}
	switch up.Type {
	case bedrockwire.AccessDeniedException, bedrockwire.ModelStreamErrorException:
		return ""
	}
	if _, ok := bedrockwire.ExceptionStatus[up.Type]; !ok {
		return ""
	}
	return up.Type
}

// streamException is the exception frame type for a stream that failed
// after its first byte: a Bedrock upstream's own in-stream exception as it
// is (when the stream has that member); else throttling, service
// unavailable, a model timeout (InvokeModelWithResponseStream only:
// ConverseStream has no such member), validation, internal errors by
// their category; a stream the upstream cut, and anything else,
// modelStreamErrorException.
func streamException(e *gwerr.Error, invoke bool) string {
	var up *gwerr.Upstream
	if errors.As(e, &up) && up.Service == bedrockwire.Service {
		if m := bedrockwire.StreamMember(up.Type, invoke); m != "" {
			return m
		}
	}
	c := e.Category
	var cause *gwerr.Error
	if c == gwerr.Interrupted && errors.As(e.Cause, &cause) {
		c = cause.Category
	}
	switch c {
	case gwerr.RateLimited:
		return bedrockwire.StreamThrottling
	case gwerr.Overloaded, gwerr.Unavailable:
		return bedrockwire.StreamServiceUnavailable
	case gwerr.Timeout:
		if invoke {
			return bedrockwire.StreamModelTimeout
		}
	case gwerr.InvalidRequest, gwerr.ContentPolicy, gwerr.ContextLength:
		return bedrockwire.StreamValidation
	case gwerr.Internal:
		return bedrockwire.StreamInternalServer
	}
	return bedrockwire.StreamModelStreamError
}
