package usage

import (
	"encoding/json"
	"errors"
	"net/http"
	"time"

	"github.com/llmgw/llmgw/pkg/config"
	"github.com/llmgw/llmgw/pkg/gwerr"
	"github.com/llmgw/llmgw/pkg/store"
	"github.com/llmgw/llmgw/pkg/wire/chatwire"
)

// Viewer is who asks for usage: a team, and whether it may see every team.
type Viewer struct {
	Team  string
	Admin bool
}

// HandlerOptions configure [NewHandler].
type HandlerOptions struct {
	// Viewer identifies the caller of a request (required); ok false
	// answers 401. teams.UsageViewer adapts the server's authenticated
	// caller.
	Viewer func(r *http.Request) (v Viewer, ok bool)
	// Roller, when set, lets admins ask for refresh=true: the requested
	// team-days are recomputed before they are read.
	Roller *Roller
	// Now is the clock (nil: time.Now).
	Now func() time.Time
	// MaxDays caps the range of one request (default 366); refresh is
	// capped at 31 days.
	MaxDays int
}

// maxRefreshDays caps how many days one refresh=true request recomputes.
const maxRefreshDays = 31

// NewHandler serves GET /v1/usage?from=YYYY-MM-DD&to=YYYY-MM-DD[&team=T]
// [&refresh=true]: a [Report] of the rollups, as JSON. A team key sees its
// own team only; an admin key sees every team (the configured ones and
// "anonymous"), or the one named by team=. from defaults to the first day
// of the current UTC month, to to today. Errors use the OpenAI error shape.
func NewHandler(q store.Querier, cfg func() *config.Config, o HandlerOptions) http.Handler {
	if o.Now == nil {
		o.Now = time.Now
	}
	if o.MaxDays <= 0 {
		o.MaxDays = 366
	}
	return &handler{q: q, cfg: cfg, o: o}
}

type handler struct {
	q   store.Querier
	cfg func() *config.Config
	o   HandlerOptions
}

func (h *handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodGet {
		w.Header().Set("Allow", "GET, HEAD") // the server front answers HEAD through GET
		writeErr(w, gwerr.New(gwerr.InvalidRequest, "method not allowed; use GET or HEAD").WithCode("method_not_allowed"), http.StatusMethodNotAllowed)
		return
	}
	v, ok := h.o.Viewer(r)
	if !ok {
		writeErr(w, gwerr.New(gwerr.Authentication, "missing, invalid or revoked API key").WithCode("invalid_api_key"), 0)
		return
	}
	qs := r.URL.Query()
	today := dayStart(h.o.Now())
	from, to := time.Date(today.Year(), today.Month(), 1, 0, 0, 0, 0, time.UTC), today
	for _, p := range []struct {
		name string
		dst  *time.Time
	}{{"from", &from}, {"to", &to}} {
		if s := qs.Get(p.name); s != "" {
			t, err := time.Parse(time.DateOnly, s)
			if err != nil {
				writeErr(w, gwerr.New(gwerr.InvalidRequest, "%s must be a date YYYY-MM-DD (UTC)", p.name).WithParam(p.name), 0)
				return
			}
			*p.dst = t
		}
	}
	days := int(to.Sub(from)/(24*time.Hour)) + 1
	if days < 1 || days > h.o.MaxDays {
		writeErr(w, gwerr.New(gwerr.InvalidRequest, "from..to must be 1 to %d days with from <= to", h.o.MaxDays).WithParam("from"), 0)
		return
	}
	cfg := h.cfg()
	var teams []string
	switch team := qs.Get("team"); {
	case team != "" && team != v.Team && !v.Admin:
		writeErr(w, gwerr.New(gwerr.Permission, "this key may read only its own team's usage").WithParam("team"), 0)
		return
	case team != "" && team != v.Team && team != config.AnonymousTeam && cfg.Teams[team] == nil:
		writeErr(w, gwerr.New(gwerr.NotFound, "unknown team %q", team).WithParam("team"), 0)
		return
	case team != "":
		teams = []string{team}
	case v.Admin:
		teams = append(cfg.TeamNames(), config.AnonymousTeam)
	default:
		teams = []string{v.Team}
	}
	if refresh := qs.Get("refresh"); refresh == "true" || refresh == "1" {
		if !v.Admin || h.o.Roller == nil {
			writeErr(w, gwerr.New(gwerr.Permission, "refresh needs an admin key on a gateway that can run the rollup").WithParam("refresh"), 0)
			return
		}
		if days > maxRefreshDays {
			writeErr(w, gwerr.New(gwerr.InvalidRequest, "refresh covers at most %d days", maxRefreshDays).WithParam("refresh"), 0)
			return
		}
		for d := from; !d.After(to); d = d.AddDate(0, 0, 1) {
			for _, team := range teams {
				if _, _, err := h.o.Roller.RollupDay(r.Context(), team, d); err != nil && !errors.Is(err, ErrExpired) {
					writeErr(w, gwerr.New(gwerr.Unavailable, "the usage rollup failed; try again").WithCode("usage_store_unavailable"), 0)
					return
				}
			}
		}
	}
	rep, err := BuildReport(r.Context(), h.q, teams, from, to, len(teams) == 1)
	if err != nil {
		writeErr(w, gwerr.New(gwerr.Unavailable, "usage could not be read; try again").WithCode("usage_store_unavailable"), 0)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-store")
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	_ = enc.Encode(rep)
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
	_, _ = w.Write(chatwire.NewErrorEnvelope(e, h.Get("x-request-id"), nil).Marshal())
}
