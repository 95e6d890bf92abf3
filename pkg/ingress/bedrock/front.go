package bedrock

import (
	"mime"
	"net/http"
	"strings"

	"github.com/llmgw/llmgw/pkg/gwerr"
	"github.com/llmgw/llmgw/pkg/ingress"
)

// CheckAuthorization implements ingress.HeaderChecker: a request signed
// with SigV4 (Authorization: AWS4-HMAC-SHA256 ..., what the SDKs send
// with IAM credentials) is refused with an AccessDeniedException: the
// gateway cannot verify a signature made for Bedrock, and takes the team
// key as a Bedrock API key instead.
func (Ingress) CheckAuthorization(r *http.Request) *gwerr.Error {
	if sigV4(r) {
		return gwerr.New(gwerr.Permission, "this gateway does not accept AWS SigV4 signatures; send your team key as a Bedrock API key "+
			"(Authorization: Bearer <team key>; the AWS SDKs and Claude Code send it when AWS_BEARER_TOKEN_BEDROCK is set)").
			WithCode("sigv4_not_accepted")
	}
	return nil
}

// sigV4 reports whether r is signed with AWS Signature Version 4 (or 4a),
// in its Authorization header or as a presigned query.
func sigV4(r *http.Request) bool {
	a := strings.TrimSpace(r.Header.Get("Authorization"))
	return strings.HasPrefix(a, "AWS4-") || r.URL.Query().Get("X-Amz-Signature") != ""
}

// CheckContentType implements ingress.HeaderChecker: the body must be
// declared as JSON, except that InvokeModel bodies may come as
// application/octet-stream (aws-sdk-go-v2 sends it for a body without a
// contentType; browsers ask before sending that type cross-site) or with
// no Content-Type at all (boto3 sends none unless the caller passes
// contentType) when the request carries an Authorization header: a web
// page cannot send that header without the browser asking the gateway
// first (CORS), so an untyped body is still no cross-site "simple
// request" (see the front's JSON check).
func (i Ingress) CheckContentType(r *http.Request) *gwerr.Error {
	ct := r.Header.Get("Content-Type")
	if ct == "" && i.invoke() && r.Header.Get("Authorization") != "" {
		return nil
	}
	if mt, _, err := mime.ParseMediaType(ct); err == nil {
		typ, sub, _ := strings.Cut(mt, "/")
		if typ == "application" && (sub == "json" || strings.HasSuffix(sub, "+json") || sub == "octet-stream" && i.invoke()) {
			return nil
		}
	}
	got := "no Content-Type"
	if ct != "" {
		got = "Content-Type " + strings.ReplaceAll(ct[:min(len(ct), 100)], "\n", " ")
	}
	return gwerr.New(gwerr.InvalidRequest, "the request body must be JSON sent with Content-Type: application/json (got %s)", got).
		WithCode(ingress.CodeUnsupportedMediaType).WithParam("Content-Type")
}
