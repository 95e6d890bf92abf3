package app

import (
	"context"
	"sync/atomic"
	"time"

	"github.com/llmgw/llmgw/pkg/config"
)

// liveConfig is the one holder of the config in force. Build hands every
// component either its Get (the authenticator, the limiter, the usage
// recorder, rollups and the /v1/usage handler read the config through it
// on every use) or the config itself (the HTTP handler, given each new one
// by Gateway.Reload, from which it derives its providers and keys). No
// component loads, watches or stores a config of its own: the config
// sources (the local file watcher, the Lambda SSM refresher) hand what
// they load to Gateway.Reload.
type liveConfig struct {
	cur atomic.Pointer[config.Config]
}

// Get returns the config in force.
func (l *liveConfig) Get() *config.Config { return l.cur.Load() }

// Config returns the config in force.
func (g *Gateway) Config() *config.Config { return g.live.Get() }

// Reload makes cfg the config in force for every component: the handler
// applies it first (it builds the providers and resolves the keys; an
// error keeps the config in force), then it is published to the
// components that read it through the live getter. Reloads are
// serialized. A config without teams replacing one that started the
// gateway with team keys is refused (ErrKeylessReload). Every outcome is
// recorded for the admin view of /healthz.
func (g *Gateway) Reload(ctx context.Context, cfg *config.Config) error {
	g.reload.Lock()
	defer g.reload.Unlock()
	err := g.refuseReload(cfg)
	if err == nil {
		err = g.Handler.Reload(ctx, cfg)
	}
	if err != nil {
		g.cfgState.failed(err, time.Now())
		return err
	}
	g.live.cur.Store(cfg)
	g.cfgState.applied(cfg, time.Now())
	return nil
}
