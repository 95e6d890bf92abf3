package app

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"log/slog"
	"sync"
	"time"

	"github.com/llmgw/llmgw/pkg/config"
	"github.com/llmgw/llmgw/pkg/gwerr"
	"github.com/llmgw/llmgw/pkg/server"
	"github.com/llmgw/llmgw/pkg/status"
)

// ErrKeylessReload refuses a config reload that would leave a gateway
// started with team keys without any (every caller anonymous): a live edit
// to `teams: {}` must never open a keyed gateway to everyone. The config
// in force stays; restart the gateway to serve keyless on purpose.
var ErrKeylessReload = errors.New("config reload refused: the gateway started with team keys and the new config has no teams, which would serve every caller without a key; the config in force stays (restart to run keyless)")

// configState is what the gateway knows about its config for /healthz
// (server.ConfigStatus): the version in force, when it was applied, and
// the last failed reload.
type configState struct {
	mu     sync.Mutex
	status server.ConfigStatus
}

// applied records cfg as the config in force.
func (s *configState) applied(cfg *config.Config, now time.Time) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.status.Version, s.status.LoadedAt = configVersion(cfg), now
}

// failed records a failed reload; the error text is redacted.
func (s *configState) failed(err error, now time.Time) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.status.LastFailedReload = &server.FailedReload{At: now, Error: gwerr.Redact(err.Error())}
}

// get returns the status (server.Front.ConfigStatus).
func (s *configState) get() server.ConfigStatus {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := s.status
	if f := out.LastFailedReload; f != nil {
		c := *f
		out.LastFailedReload = &c
	}
	return out
}

// configVersion names a config by the SHA-256 of its JSON form (key
// references and key hashes only: the config never holds a secret).
func configVersion(cfg *config.Config) string {
	b, err := json.Marshal(cfg)
	if err != nil {
		return "unknown"
	}
	sum := sha256.Sum256(b)
	return "sha256:" + hex.EncodeToString(sum[:8])
}

// ReloadFailed records a reload that failed before reaching Reload (the
// source could not load or parse the new config), for /healthz, and logs
// nothing (the source logs it).
func (g *Gateway) ReloadFailed(err error) { g.cfgState.failed(err, time.Now()) }

// refuseReload reports why cfg may not replace the config in force.
func (g *Gateway) refuseReload(cfg *config.Config) error {
	if g.keyed && len(cfg.Teams) == 0 {
		g.logger().Error("config reload refused", slog.String("reason", "the new config has no teams; the gateway started with team keys"))
		return ErrKeylessReload
	}
	return nil
}

// configVersion is the status page's view of the same state
// (status.Options.Version).
func (g *Gateway) configVersion() status.ConfigState {
	s := g.cfgState.get()
	out := status.ConfigState{Version: s.Version, AppliedAt: s.LoadedAt}
	if f := s.LastFailedReload; f != nil {
		out.LastFailed = &status.Failure{At: f.At, Error: f.Error}
	}
	return out
}
