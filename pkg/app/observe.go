package app

import (
	"context"
	"log/slog"
	"net/http"
	"time"

	"github.com/llmgw/llmgw/pkg/config"
	"github.com/llmgw/llmgw/pkg/exchange"
	"github.com/llmgw/llmgw/pkg/keyledger"
	"github.com/llmgw/llmgw/pkg/server"
	"github.com/llmgw/llmgw/pkg/status"
	"github.com/llmgw/llmgw/pkg/store"
	"github.com/llmgw/llmgw/pkg/telemetry"
	"github.com/llmgw/llmgw/pkg/usage"
)

// observability is what watches the gateway serve: the OpenTelemetry
// traces and metrics (off unless the config's telemetry section names an
// endpoint) and the admin status page's recent attempts and config
// versions.
type observability struct {
	tel    *telemetry.Telemetry // nil: off
	recent *status.Recent
}

// newObservability starts the export cfg.Telemetry asks for. The
// endpoint in force at start stays for the process's life.
func newObservability(cfg *config.Config, current func() *config.Config, log *slog.Logger) *observability {
	ob := &observability{recent: status.NewRecent()}
	ob.tel = telemetry.New(cfg.Telemetry, telemetry.Options{Config: current, OnError: func(err error) {
		if log != nil {
			log.Warn("telemetry export failed", slog.String("error", err.Error()))
		}
	}})
	return ob
}

// observe is the server's Reporting.Observe.
func (ob *observability) observe(ctx context.Context, req *exchange.Request, rec *exchange.Record) {
	ob.recent.Observe(rec)
	ob.tel.Observe(ctx, req, rec)
}

// tap is the server's Reporting.Tap (nil when traces are off).
func (ob *observability) tap() func(*exchange.Request) func(*exchange.Event) {
	if ob.tel == nil {
		return nil
	}
	return ob.tel.Tap
}

// statusOptions are the status page's sources: the config, the breaker and
// key ledger of the gateway, today's rollups, and this instance's recent
// attempts.
func (ob *observability) statusOptions(g *Gateway, q store.Querier, configPath string) status.Options {
	return status.Options{
		Config:  g.live.Get,
		Breaker: g.Breaker.Snapshot,
		Keys:    func(p, m string) []keyledger.Status { return g.Handler.KeyStatuses(p, m) },
		Spend: func(ctx context.Context, teams []string, day time.Time) (map[string]status.TeamSpend, error) {
			return spendToday(ctx, q, teams, day)
		},
		Version:    g.configVersion,
		Recent:     ob.recent,
		ConfigPath: configPath,
		Extra: func() map[string]any {
			if ob.tel == nil {
				return nil
			}
			return map[string]any{"telemetry": ob.tel.Stats()}
		},
	}
}

// spendToday reads today's rollups of teams.
func spendToday(ctx context.Context, q store.Querier, teams []string, day time.Time) (map[string]status.TeamSpend, error) {
	ctx, cancel := context.WithTimeout(ctx, 3*time.Second)
	defer cancel()
	rep, err := usage.BuildReport(ctx, q, teams, day, day, true)
	if err != nil {
		return nil, err
	}
	out := map[string]status.TeamSpend{}
	for _, t := range rep.Teams {
		s := status.TeamSpend{CostUSD: t.CostUSD, AsOf: t.ComputedAt, Tags: map[string]float64{}}
		for tag, tt := range t.Tags {
			s.Tags[tag] = tt.CostUSD
		}
		out[t.Team] = s
	}
	return out, nil
}

// statusPaths adds the status page to the front: the page (static, no
// key needed) and its data (admin keys).
func (ob *observability) statusPaths(f *server.Front, data http.Handler) {
	if f.Extra == nil {
		f.Extra = map[string]http.Handler{}
	}
	f.Extra[status.DataPath] = data
	f.Public = map[string]http.Handler{status.PagePath: status.Page()}
}

// component flushes and closes the export (nil when telemetry is off).
func (ob *observability) component() Component {
	if ob.tel == nil {
		return nil
	}
	return part{name: "telemetry exporter", flush: ob.tel.Flush, close: ob.tel.Close}
}
