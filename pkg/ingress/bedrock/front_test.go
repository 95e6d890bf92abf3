package bedrock

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/llmgw/llmgw/pkg/gwerr"
	"github.com/llmgw/llmgw/pkg/wire/bedrockwire"
)

func TestCheckContentType(t *testing.T) {
	for _, c := range []struct {
		op         bedrockwire.Operation
		ct, auth   string
		acceptable bool
	}{
		{bedrockwire.Converse, "application/json", "", true},
		{bedrockwire.Converse, "", "Bearer k", false},
		{bedrockwire.Converse, "application/octet-stream", "Bearer k", false},
		{bedrockwire.InvokeModel, "", "Bearer k", true},                 // boto3 without contentType
		{bedrockwire.InvokeModel, "", "", false},                        // a browser's untyped simple request
		{bedrockwire.InvokeModel, "application/octet-stream", "", true}, // aws-sdk-go-v2 without contentType
		{bedrockwire.InvokeModelWithResponseStream, "text/plain", "Bearer k", false},
	} {
		r := httptest.NewRequest(http.MethodPost, "/model/m/"+string(c.op), nil)
		if c.ct != "" {
			r.Header.Set("Content-Type", c.ct)
		}
		if c.auth != "" {
			r.Header.Set("Authorization", c.auth)
		}
		if err := (Ingress{Op: c.op}).CheckContentType(r); (err == nil) != c.acceptable {
			t.Errorf("%s with %q (auth %q): %v", c.op, c.ct, c.auth, err)
		}
	}
}

func TestCheckAuthorizationRefusesSigV4(t *testing.T) {
	r := httptest.NewRequest(http.MethodPost, "/model/m/converse", nil)
	r.Header.Set("Authorization", "AWS4-HMAC-SHA256 Credential=AKIA/20260101/us-east-1/bedrock/aws4_request, SignedHeaders=host, Signature=abc")
	e := Ingress{}.CheckAuthorization(r)
	if e == nil || e.Category != gwerr.Permission || !strings.Contains(e.Message, "Bearer <team key>") {
		t.Fatalf("SigV4: %v", e)
	}
	if typ, status := Exception(e); typ != bedrockwire.AccessDeniedException || status != 403 {
		t.Errorf("SigV4 answered %s %d", typ, status)
	}
	r.Header.Set("Authorization", "Bearer llmgw_x")
	if e := (Ingress{}).CheckAuthorization(r); e != nil {
		t.Errorf("bearer refused: %v", e)
	}
}

func TestErrorShapes(t *testing.T) {
	for _, c := range []struct {
		cat    gwerr.Category
		typ    string
		status int
		stream string
	}{
		{gwerr.InvalidRequest, "ValidationException", 400, "validationException"},
		{gwerr.ContextLength, "ValidationException", 400, "validationException"},
		{gwerr.Authentication, "AccessDeniedException", 403, "modelStreamErrorException"},
		{gwerr.Permission, "AccessDeniedException", 403, "modelStreamErrorException"},
		{gwerr.NotFound, "ResourceNotFoundException", 404, "modelStreamErrorException"},
		{gwerr.RateLimited, "ThrottlingException", 429, "throttlingException"},
		{gwerr.BudgetExceeded, "ThrottlingException", 429, "modelStreamErrorException"},
		{gwerr.Timeout, "ModelTimeoutException", 408, "modelTimeoutException"},
		{gwerr.Overloaded, "ServiceUnavailableException", 503, "serviceUnavailableException"},
		{gwerr.Unavailable, "ServiceUnavailableException", 503, "serviceUnavailableException"},
		{gwerr.Interrupted, "InternalServerException", 500, "modelStreamErrorException"},
		{gwerr.Internal, "InternalServerException", 500, "internalServerException"},
	} {
		e := gwerr.New(c.cat, "x")
		typ, status := Exception(e)
		if typ != c.typ || status != c.status || streamException(e, true) != c.stream {
			t.Errorf("%s: %s %d stream %s; want %s %d %s", c.cat, typ, status, streamException(e, true), c.typ, c.status, c.stream)
		}
	}
	if s := streamException(gwerr.New(gwerr.Timeout, "x"), false); s != "modelStreamErrorException" {
		t.Errorf("ConverseStream timeout: %s (ConverseStream has no modelTimeoutException)", s)
	}
	w := httptest.NewRecorder()
	e := gwerr.New(gwerr.RateLimited, "slow down")
	e.RetryAfter = 2 * time.Second
	if st := WriteError(w, e, "req_1"); st != 429 {
		t.Errorf("status %d", st)
	}
	h := w.Header()
	if h.Get("X-Amzn-Errortype") != "ThrottlingException" || h.Get("X-Amzn-Requestid") != "req_1" || h.Get("Retry-After") != "2" ||
		w.Body.String() != `{"message":"slow down"}` {
		t.Errorf("headers %v body %s", h, w.Body)
	}
}
