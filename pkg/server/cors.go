package server

import (
	"log/slog"
	"net/http"
	"slices"
	"strconv"
	"strings"

	"github.com/llmgw/llmgw/pkg/config"
	"github.com/llmgw/llmgw/pkg/deployment"
	"github.com/llmgw/llmgw/pkg/gwerr"
	"github.com/llmgw/llmgw/pkg/ingress"
	"github.com/llmgw/llmgw/pkg/wire/jsonb"
)

// CORS (server.cors; off unless it lists origins). A request from a page
// on an allowed origin gets Access-Control-Allow-Origin with that origin and
// Access-Control-Expose-Headers (deployment.CORSExposeHeaders), on every
// response: errors, bodies and streams alike, since they are set before
// anything is written. A preflight (OPTIONS with Origin and
// Access-Control-Request-Method) is answered 204 when the origin, the
// method (deployment.CORSMethods) and every requested header are allowed,
// and refused with a 403 carrying no CORS headers otherwise. Preflights
// carry no credentials, so they are answered before authentication.
//
// With Options.ExternalCORS (Lambda: the Function URL answers preflights
// and adds the headers, configured by the stack from the same server.cors),
// the handler adds no CORS headers: a second Access-Control-Allow-Origin
// would make browsers refuse the response.

// cors applies the CORS policy of the config in force to r. It reports
// whether it answered the request (a preflight).
func (h *Handler) cors(w http.ResponseWriter, r *http.Request, rid string, shape ingress.Ingress) bool {
	origin := r.Header.Get("Origin")
	preflight := r.Method == http.MethodOptions && origin != "" && r.Header.Get("Access-Control-Request-Method") != ""
	c := h.current.Load().cfg.Server.CORS
	if h.front.ExternalCORS || !c.Enabled() {
		if preflight {
			why := "cross-origin requests are not enabled on this gateway (server.cors)"
			if h.front.ExternalCORS {
				why = "CORS is answered in front of the gateway (on AWS: the Function URL, set from server.cors of the seed config), which has none"
			}
			h.refusePreflight(w, r, rid, shape, why)
			return true
		}
		return false
	}
	w.Header().Add("Vary", "Origin")
	if !preflight {
		if origin != "" && c.AllowsOrigin(origin) {
			w.Header().Set("Access-Control-Allow-Origin", origin)
			w.Header().Set("Access-Control-Expose-Headers", strings.Join(deployment.CORSExposeHeaders(), ", "))
		}
		return false
	}
	if why := preflightRefusal(c, origin, r); why != "" {
		h.refusePreflight(w, r, rid, shape, why)
		return true
	}
	hd := w.Header()
	hd.Set("Access-Control-Allow-Origin", origin)
	hd.Set("Access-Control-Allow-Methods", strings.Join(deployment.CORSMethods(), ", "))
	hd.Set("Access-Control-Allow-Headers", strings.Join(c.AllowHeaders, ", "))
	hd.Set("Access-Control-Max-Age", strconv.Itoa(int(c.MaxAge.D().Seconds())))
	w.WriteHeader(http.StatusNoContent)
	return true
}

// preflightRefusal says why a preflight is refused ("" when it is not).
func preflightRefusal(c config.CORS, origin string, r *http.Request) string {
	if !c.AllowsOrigin(origin) {
		return "origin " + strconv.Quote(clip(origin)) + " is not in server.cors.allow_origins"
	}
	if m := r.Header.Get("Access-Control-Request-Method"); !slices.Contains(deployment.CORSMethods(), m) {
		return "method " + strconv.Quote(clip(m)) + " is not one of " + strings.Join(deployment.CORSMethods(), ", ")
	}
	for _, v := range r.Header.Values("Access-Control-Request-Headers") {
		for _, name := range strings.Split(v, ",") {
			if name = strings.TrimSpace(name); name != "" && !c.AllowsHeader(name) {
				return "header " + strconv.Quote(clip(name)) + " is not in server.cors.allow_headers"
			}
		}
	}
	return ""
}

// refusePreflight answers a preflight with a 403 and no CORS headers (the
// browser then refuses the request it was asking about), in the path's
// error shape, and logs why.
func (h *Handler) refusePreflight(w http.ResponseWriter, r *http.Request, rid string, shape ingress.Ingress, why string) {
	h.log.LogAttrs(r.Context(), slog.LevelInfo, "cors preflight refused", slog.String("request_id", rid),
		slog.String("origin", clip(r.Header.Get("Origin"))), slog.String("path", clip(r.URL.Path)), slog.String("reason", why))
	writeErrorIn(w, r, shape, gwerr.New(gwerr.Permission, "CORS preflight refused: %s", why).WithCode("cors_refused"), rid)
}

// clip bounds a client-supplied value quoted in a message.
func clip(s string) string { return jsonb.Truncate(s, 100) }
