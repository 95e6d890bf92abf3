package server

import (
	"net/http"
	"runtime/debug"
	"sync"
	"time"

	"github.com/llmgw/llmgw/pkg/breaker"
	"github.com/llmgw/llmgw/pkg/config"
)

// ConfigStatus is what the admin view of GET /healthz says about the
// config: the version in force, when it was applied, and the last reload
// that failed (when and why). It never holds a secret: Error is redacted
// (gwerr.Redact) by whoever fills it.
type ConfigStatus struct {
	// Version identifies the config in force (a digest of it).
	Version string `json:"version"`
	// LoadedAt is when it was applied.
	LoadedAt time.Time `json:"loaded_at"`
	// LastFailedReload is the last reload that was refused or failed to
	// load, nil when none has since the gateway started.
	LastFailedReload *FailedReload `json:"last_failed_reload,omitempty"`
}

// FailedReload is one failed config reload.
type FailedReload struct {
	At    time.Time `json:"at"`
	Error string    `json:"error"`
}

// healthAdmin reports whether r may see the admin view of /healthz: a
// caller authenticated with a key of an `admin: true` team, or the
// anonymous caller of a gateway without authentication (no Authenticator,
// or keyless local mode, where the Authenticator accepts only requests
// addressed to the machine itself: whoever it serves may spend the
// gateway's credits anyway).
func (h *Handler) healthAdmin(r *http.Request) bool {
	c, err := h.authenticate(r)
	return err == nil && (c.Admin || c.Team == "")
}

// buildVersion is the gateway's version: the module version and the VCS
// revision it was built from, when the build recorded them.
var buildVersion = sync.OnceValue(func() string {
	bi, ok := debug.ReadBuildInfo()
	if !ok {
		return "unknown"
	}
	v := bi.Main.Version
	for _, s := range bi.Settings {
		if s.Key == "vcs.revision" && len(s.Value) >= 12 {
			v += "+" + s.Value[:12]
		}
	}
	if v == "" {
		v = "unknown"
	}
	return v
})

// health serves GET /healthz. Anyone learns whether the gateway serves
// ({"status":"ok"|"degraded","version":...}: degraded when a target's
// provider has keys configured and none is usable); the admin view
// (healthAdmin) adds the routes, every target's breaker and key state
// (keys by fingerprint only, including configured keys not in service
// because their reference did not resolve), and the config status
// (Front.ConfigStatus).
func (h *Handler) health(w http.ResponseWriter, r *http.Request) {
	type public struct {
		Status  string `json:"status"`
		Version string `json:"version"`
	}
	rt := h.current.Load()
	out := struct {
		public
		Config  *ConfigStatus  `json:"config,omitempty"`
		Routes  []string       `json:"routes"`
		Targets []targetHealth `json:"targets"`
	}{public: public{Status: "ok", Version: buildVersion()}, Routes: rt.cfg.RouteNames(), Targets: []targetHealth{}}
	seen := map[string]bool{}
	for _, name := range rt.cfg.RouteNames() {
		for _, t := range rt.cfg.Routes[name].Targets {
			if t.Route != "" {
				continue
			}
			id := t.ID()
			if seen[id] {
				continue
			}
			seen[id] = true
			p := rt.cfg.Providers[t.Provider]
			th := targetHealth{ID: id, Provider: t.Provider, Kind: p.Kind, Model: t.Model, Disabled: p.Disabled,
				Breaker: h.up.Breakers.Snapshot(id), Keys: append(h.up.Keys.Statuses(t.Provider, config.LedgerModel(t.Model, t.ServiceTier)), rt.unresolved[t.Provider]...)}
			if t.Breaker != "" {
				th.Breaker.Forced = breaker.Force(t.Breaker)
			}
			if th.Status, th.Reason = keyHealth(p, th.Keys); th.Status != "" {
				out.Status = th.Status
			}
			out.Targets = append(out.Targets, th)
		}
	}
	if !h.healthAdmin(r) {
		writeJSON(w, http.StatusOK, out.public)
		return
	}
	if h.front.ConfigStatus != nil {
		cs := h.front.ConfigStatus()
		out.Config = &cs
	}
	writeJSON(w, http.StatusOK, out)
}
