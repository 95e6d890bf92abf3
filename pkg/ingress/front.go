package ingress

import (
	"net/http"

	"github.com/llmgw/llmgw/pkg/config"
	"github.com/llmgw/llmgw/pkg/gwerr"
)

// HeaderChecker is implemented by an ingress whose API has its own rules
// for a request's headers (the Bedrock Runtime API: a SigV4 signature the
// gateway cannot verify, and InvokeModel bodies sent without a
// Content-Type).
type HeaderChecker interface {
	// CheckAuthorization runs before the front authenticates the
	// request: an error refuses it with a message saying what to send
	// instead.
	CheckAuthorization(r *http.Request) *gwerr.Error
	// CheckContentType replaces the front's JSON Content-Type check.
	CheckContentType(r *http.Request) *gwerr.Error
}

// RouteNamer is implemented by an ingress whose clients may name a route
// by another id (a Bedrock model or inference-profile id a route lists):
// the front replaces the name Decode set (exchange.Request.Route) with
// the route it names in cfg before routing.
type RouteNamer interface {
	RouteName(cfg *config.Config, name string) string
}
