// Package status is the gateway's status and cost page for admin keys: one
// self-contained HTML page (no build step, no external assets, no
// framework) and the JSON it reads and refreshes. It shows every route's
// chain with each target's breaker state, recent error categories and
// p50/p95 time to first token; the key pool of each provider; each team's
// spend today against its budgets; the config version in force and the
// last failed reload; and, per target and team, the runbook's
// `aws ssm put-parameter` command to pull, reorder, force a breaker or
// revoke, ready to copy.
//
// The HTML holds no data and is served without authentication (Page);
// the JSON (Handler) answers admin callers only: a team with admin: true,
// or the anonymous caller of a local gateway without teams (loopback
// only).
package status

import (
	"context"
	_ "embed"
	"encoding/json"
	"net/http"
	"sort"
	"time"

	"github.com/llmgw/llmgw/pkg/breaker"
	"github.com/llmgw/llmgw/pkg/config"
	"github.com/llmgw/llmgw/pkg/exchange"
	"github.com/llmgw/llmgw/pkg/gwerr"
	"github.com/llmgw/llmgw/pkg/keyledger"
	"github.com/llmgw/llmgw/pkg/wire/chatwire"
)

// Paths the page and its data are served on.
const (
	PagePath = "/admin/status"
	DataPath = "/admin/status.json"
)

// TeamSpend is one team's spend today (UTC), from the usage rollups.
type TeamSpend struct {
	CostUSD float64 `json:"cost_usd"`
	// Tags is the spend per feature tag.
	Tags map[string]float64 `json:"tags,omitempty"`
	// AsOf is when the newest rollup counted was computed (usage after it
	// is not counted yet).
	AsOf time.Time `json:"as_of,omitzero"`
}

// Options are where the page's facts live.
type Options struct {
	// Config returns the config in force. Required.
	Config func() *config.Config
	// Breaker returns a target's breaker state. Required.
	Breaker func(target string) breaker.Snapshot
	// Keys returns the key pool of a provider's model (fingerprints and
	// references only). Required.
	Keys func(provider, model string) []keyledger.Status
	// Spend returns today's spend per team (nil: not shown).
	Spend func(ctx context.Context, teams []string, day time.Time) (map[string]TeamSpend, error)
	// Version returns the config version in force and the last failed
	// reload, as the gateway's /healthz admin view has them (nil: not
	// shown).
	Version func() ConfigState
	// Recent holds this instance's recent attempts (nil: none shown).
	Recent *Recent
	// ConfigPath is the SSM path of the config parameters ("":
	// DefaultConfigPath, the gateway reads no SSM).
	ConfigPath string
	// Extra, when set, adds fields to the JSON (telemetry export counts).
	Extra func() map[string]any
	// Now is the clock (nil: time.Now).
	Now func() time.Time
}

// Failure is a reload that did not apply.
type Failure struct {
	At    time.Time `json:"at"`
	Error string    `json:"error"`
}

// ConfigState is the config part of the snapshot.
type ConfigState struct {
	Version    string    `json:"version,omitempty"`
	AppliedAt  time.Time `json:"applied_at,omitzero"`
	LastFailed *Failure  `json:"last_failed_reload,omitempty"`
	// Path is the SSM path the commands write under.
	Path string `json:"path"`
}

// Snapshot is the page's data.
type Snapshot struct {
	Object      string          `json:"object"` // "gateway.status"
	GeneratedAt time.Time       `json:"generated_at"`
	Config      ConfigState     `json:"config"`
	Routes      []RouteState    `json:"routes"`
	Providers   []ProviderState `json:"providers"`
	Teams       []TeamState     `json:"teams"`
	// SpendError says why spend is missing, if it is.
	SpendError string         `json:"spend_error,omitempty"`
	Extra      map[string]any `json:"extra,omitempty"`
}

// RouteState is one route's chain.
type RouteState struct {
	Name    string        `json:"name"`
	Targets []TargetState `json:"targets"`
}

// TargetState is one step of a chain.
type TargetState struct {
	ID       string           `json:"id"`
	Provider string           `json:"provider"`
	Model    string           `json:"model"`
	Depth    int              `json:"depth"`
	Disabled bool             `json:"disabled,omitempty"` // its provider is pulled
	Breaker  breaker.Snapshot `json:"breaker"`
	Recent   TargetRecent     `json:"recent"`
	Commands []Command        `json:"commands"`
}

// ProviderState is one provider's key pool.
type ProviderState struct {
	ID        string     `json:"id"`
	Kind      string     `json:"kind"`
	Disabled  bool       `json:"disabled,omitempty"`
	Keys      []KeyState `json:"keys"`
	Available int        `json:"available"`
	Command   Command    `json:"command"`
}

// KeyState is one key of a provider, for one of its models.
type KeyState struct {
	Model string `json:"model"`
	keyledger.Status
}

// TeamState is one team's spend against its budgets.
type TeamState struct {
	Name     string `json:"name"`
	Admin    bool   `json:"admin,omitempty"`
	Disabled bool   `json:"disabled,omitempty"`
	// SpentUSD is today's spend; BudgetUSD the team's cost_per_day_usd
	// (0: none).
	SpentUSD  float64      `json:"spent_today_usd"`
	BudgetUSD float64      `json:"budget_per_day_usd,omitempty"`
	HourUSD   float64      `json:"budget_per_hour_usd,omitempty"`
	Tags      []TagBudget  `json:"tags,omitempty"`
	AsOf      time.Time    `json:"as_of,omitzero"`
	Commands  []Command    `json:"commands"`
	Keys      []KeySummary `json:"keys"`
}

// TagBudget is one feature tag's spend today against its day budget.
type TagBudget struct {
	Tag       string  `json:"tag"`
	SpentUSD  float64 `json:"spent_today_usd"`
	BudgetUSD float64 `json:"budget_per_day_usd,omitempty"`
}

// KeySummary names a team key by id (never the key).
type KeySummary struct {
	ID      string `json:"id"`
	Revoked bool   `json:"revoked,omitempty"`
}

// Build gathers the snapshot.
func Build(ctx context.Context, o Options) *Snapshot {
	now := time.Now
	if o.Now != nil {
		now = o.Now
	}
	at := now()
	cfg := o.Config()
	path := o.ConfigPath
	if path == "" {
		path = DefaultConfigPath
	}
	snap := &Snapshot{Object: "gateway.status", GeneratedAt: at.UTC(), Config: o.configState(),
		Routes: []RouteState{}, Providers: []ProviderState{}, Teams: []TeamState{}}
	snap.Config.Path = path
	models := map[string][]string{} // provider -> models its targets use
	for _, name := range cfg.RouteNames() {
		rs := RouteState{Name: name, Targets: []TargetState{}}
		steps, route, _ := cfg.Chain(name)
		for d, st := range steps {
			ts := TargetState{ID: st.ID, Provider: st.Provider, Model: st.Model, Depth: d, Breaker: o.Breaker(st.ID), Commands: []Command{}}
			if st.Breaker != "" {
				ts.Breaker.Forced = breaker.Force(st.Breaker)
			}
			if p := cfg.Providers[st.Provider]; p != nil {
				ts.Disabled = p.Disabled
			}
			if o.Recent != nil {
				ts.Recent = o.Recent.Target(st.ID, at)
			} else {
				ts.Recent = TargetRecent{Errors: map[string]int{}}
			}
			// Commands edit the route's own list: a target spliced in from
			// another route is edited there.
			if i := ownIndex(route.Targets, st); i >= 0 {
				ts.Commands = append(ts.Commands, targetCommands(path, name, route.Targets, i)...)
			}
			ts.Commands = append(ts.Commands, pullCommand(path, st.Provider))
			rs.Targets = append(rs.Targets, ts)
			if !contains(models[st.Provider], st.Model) {
				models[st.Provider] = append(models[st.Provider], st.Model)
			}
		}
		snap.Routes = append(snap.Routes, rs)
	}
	for _, id := range cfg.ProviderIDs() {
		p := cfg.Providers[id]
		ps := ProviderState{ID: id, Kind: p.Kind, Disabled: p.Disabled, Keys: []KeyState{}, Command: pullCommand(path, id)}
		seen := map[string]bool{}
		for _, model := range models[id] {
			for _, k := range o.Keys(id, model) {
				ps.Keys = append(ps.Keys, KeyState{Model: model, Status: k})
				name := k.Fingerprint + k.Ref
				if k.Available && !seen[name] {
					seen[name] = true
					ps.Available++
				}
			}
		}
		snap.Providers = append(snap.Providers, ps)
	}
	teams := cfg.TeamNames()
	var spend map[string]TeamSpend
	if o.Spend != nil && len(teams) > 0 {
		var err error
		if spend, err = o.Spend(ctx, teams, at.UTC()); err != nil {
			snap.SpendError = "spend could not be read: " + err.Error()
		}
	}
	for _, name := range teams {
		t := cfg.Teams[name]
		sp := spend[name]
		ts := TeamState{Name: name, Admin: t.Admin, Disabled: t.Disabled, SpentUSD: sp.CostUSD, BudgetUSD: t.Limits.CostPerDayUSD,
			HourUSD: t.Limits.CostPerHourUSD, AsOf: sp.AsOf, Commands: teamCommands(path, name, t), Keys: []KeySummary{}}
		tags := make([]string, 0, len(t.Tags))
		for tag := range t.Tags {
			tags = append(tags, tag)
		}
		sort.Strings(tags)
		for _, tag := range tags {
			ts.Tags = append(ts.Tags, TagBudget{Tag: tag, SpentUSD: sp.Tags[tag], BudgetUSD: t.Tags[tag].CostPerDayUSD})
		}
		for _, k := range t.Keys {
			ts.Keys = append(ts.Keys, KeySummary{ID: k.ID, Revoked: k.Revoked})
		}
		snap.Teams = append(snap.Teams, ts)
	}
	if o.Extra != nil {
		snap.Extra = o.Extra()
	}
	return snap
}

// ownIndex is the index of step in a route's own target list (-1 when it
// comes from a route the list references).
func ownIndex(targets []config.Target, st config.Step) int {
	for i, t := range targets {
		if t.Route == "" && t.Provider == st.Provider && t.Model == st.Model {
			return i
		}
	}
	return -1
}

func contains(l []string, s string) bool {
	for _, x := range l {
		if x == s {
			return true
		}
	}
	return false
}

// Admin reports whether the caller in ctx may see the page's data: an
// admin team's key, or the anonymous caller of a gateway without teams
// (local mode, loopback only).
func Admin(ctx context.Context, cfg *config.Config) bool {
	c := exchange.CallerFrom(ctx)
	if c == nil {
		return false
	}
	return c.Admin || c.Team == "" && len(cfg.Teams) == 0
}

// Handler serves the snapshot as JSON (GET; HEAD through the front), to
// admin callers only.
func Handler(o Options) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodGet {
			w.Header().Set("Allow", "GET, HEAD")
			writeErr(w, gwerr.New(gwerr.InvalidRequest, "method not allowed; use GET or HEAD").WithCode("method_not_allowed"), http.StatusMethodNotAllowed)
			return
		}
		if !Admin(r.Context(), o.Config()) {
			writeErr(w, gwerr.New(gwerr.Permission, "the status page needs an admin team's key (a team with admin: true)").WithCode("admin_required"), 0)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		w.Header().Set("Cache-Control", "no-store")
		json.NewEncoder(w).Encode(Build(r.Context(), o))
	})
}

//go:embed page.html
var page []byte

// Page serves the HTML page: static, holding no data, so it needs no key
// (it asks for one and sends it to DataPath).
func Page() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodGet {
			w.Header().Set("Allow", "GET, HEAD")
			writeErr(w, gwerr.New(gwerr.InvalidRequest, "method not allowed; use GET or HEAD").WithCode("method_not_allowed"), http.StatusMethodNotAllowed)
			return
		}
		h := w.Header()
		h.Set("Content-Type", "text/html; charset=utf-8")
		h.Set("Cache-Control", "no-store")
		h.Set("Content-Security-Policy", "default-src 'none'; script-src 'unsafe-inline'; style-src 'unsafe-inline'; connect-src 'self'; img-src data:; base-uri 'none'; form-action 'none'; frame-ancestors 'none'")
		h.Set("X-Content-Type-Options", "nosniff")
		h.Set("Referrer-Policy", "no-referrer")
		w.Write(page)
	})
}

// writeErr writes e in the OpenAI error shape (status 0: the category's).
func writeErr(w http.ResponseWriter, e *gwerr.Error, status int) {
	if status == 0 {
		status = e.Category.Status()
	}
	h := w.Header()
	h.Set("Content-Type", "application/json")
	h.Set("x-gateway-error-category", string(e.Category))
	w.WriteHeader(status)
	w.Write(chatwire.NewErrorEnvelope(e, h.Get("x-request-id"), nil).Marshal())
}

// configState is the config part of the snapshot, without its path.
func (o Options) configState() ConfigState {
	if o.Version == nil {
		return ConfigState{}
	}
	return o.Version()
}
