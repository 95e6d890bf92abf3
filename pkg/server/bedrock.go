package server

import (
	"net/http"

	"github.com/llmgw/llmgw/pkg/config"
	"github.com/llmgw/llmgw/pkg/exchange"
	"github.com/llmgw/llmgw/pkg/gwerr"
	"github.com/llmgw/llmgw/pkg/iamcaller"
	"github.com/llmgw/llmgw/pkg/ingress"
	"github.com/llmgw/llmgw/pkg/ingress/bedrock"
	ingressregistry "github.com/llmgw/llmgw/pkg/ingress/registry"
)

// The front's part of the client APIs served at paths with parameters and
// of their headers (the Bedrock Runtime API, pkg/ingress/bedrock).

// lookup returns the ingress (or token counter) serving path: an exact
// path of the registry, else a pattern's (ingressregistry.Match).
func (h *Handler) lookup(path string) (in, counter ingress.Ingress) {
	if in, counter = h.ingresses[path], h.counters[path]; in != nil || counter != nil {
		return in, counter
	}
	return ingressregistry.Match(path)
}

// checkAuthorization runs the path's API's own check of the Authorization
// header before authentication (ingress.HeaderChecker): Bedrock refuses a
// SigV4 signature with a message saying what to send instead.
//
// A caller the Function URL verified (auth type AWS_IAM: iamcaller put its
// identity in the context) signed its request with SigV4 for Lambda; that
// signature is the Function URL's to check, and it is not refused here.
func checkAuthorization(shape ingress.Ingress, r *http.Request) *gwerr.Error {
	if _, verified := iamcaller.FromContext(r.Context()); verified {
		return nil
	}
	if hc, ok := shape.(ingress.HeaderChecker); ok {
		return hc.CheckAuthorization(r)
	}
	return nil
}

// routeName maps the route name a client sent to the config's route when
// its API names routes otherwise too (ingress.RouteNamer: a Bedrock model
// id a route lists).
func routeName(in ingress.Ingress, cfg *config.Config, name string) string {
	if rn, ok := in.(ingress.RouteNamer); ok {
		return rn.RouteName(cfg, name)
	}
	return name
}

// inferenceProfiles answers GET /inference-profiles, Bedrock's
// ListInferenceProfiles as Claude Code's Bedrock mode reads it, from the
// routes the caller may use.
func (h *Handler) inferenceProfiles(w http.ResponseWriter, r *http.Request, rid string, shape ingress.Ingress) {
	if r.Method != http.MethodGet {
		methodNotAllowed(w, r, shape, rid, getMethods)
		return
	}
	bedrock.WriteInferenceProfiles(w, r, h.current.Load().cfg, exchange.CallerFrom(r.Context()), h.now())
}
