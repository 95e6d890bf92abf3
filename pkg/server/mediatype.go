package server

import (
	"mime"
	"net/http"
	"strconv"
	"strings"

	"github.com/llmgw/llmgw/pkg/gwerr"
	"github.com/llmgw/llmgw/pkg/ingress"
)

// checkContentType refuses a client-API body that is not declared as JSON:
// Content-Type must be application/json or a +json type (any parameters,
// e.g. charset). A missing Content-Type is refused too.
//
// This is what keeps web pages out: a browser sends a cross-site POST
// without asking the server first (a CORS "simple request") only when its
// Content-Type is text/plain, application/x-www-form-urlencoded or
// multipart/form-data, or when it has none (a Blob body without a type).
// Refusing all of those means no page the operator visits can spend the
// gateway's provider credits through the operator's browser (in local mode
// without team keys, 127.0.0.1 answers every caller). The OpenAI and
// Anthropic SDKs always send application/json; `curl -d` sends
// application/x-www-form-urlencoded unless told otherwise, hence the hint.
// An ingress with rules of its own (ingress.HeaderChecker) checks instead.
func checkContentType(in ingress.Ingress, r *http.Request) *gwerr.Error {
	if hc, ok := in.(ingress.HeaderChecker); ok {
		return hc.CheckContentType(r)
	}
	ct := r.Header.Get("Content-Type")
	if jsonMediaType(ct) {
		return nil
	}
	e := gwerr.New(gwerr.InvalidRequest, "the request body must be JSON sent with Content-Type: application/json (got %s); with curl, add -H 'content-type: application/json'", describeContentType(ct))
	return e.WithCode(ingress.CodeUnsupportedMediaType).WithParam("Content-Type")
}

// jsonMediaType reports whether a Content-Type value names JSON.
func jsonMediaType(ct string) bool {
	if ct == "" {
		return false
	}
	mt, _, err := mime.ParseMediaType(ct)
	if err != nil {
		return false
	}
	typ, sub, _ := strings.Cut(mt, "/")
	return typ == "application" && (sub == "json" || strings.HasSuffix(sub, "+json"))
}

// describeContentType names a refused Content-Type in an error message,
// bounded and quoted (it is the client's own text).
func describeContentType(ct string) string {
	if ct == "" {
		return "no Content-Type"
	}
	if len(ct) > 100 {
		ct = ct[:100] + "..."
	}
	return "Content-Type " + strconv.Quote(ct)
}
