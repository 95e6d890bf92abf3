package ssmconfig

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/url"
	"regexp"
	"strings"
	"sync"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/ssm/types"

	"github.com/llmgw/llmgw/pkg/config"
	"github.com/llmgw/llmgw/pkg/store"
)

// Snapshot is one config as read from SSM: what the last good item holds.
// It never holds a secret: provider keys are references ({ssm: name} or
// {env: VAR}), team keys are SHA-256 hashes, and a config that would put
// anything credential-shaped in the table is not stored (see CheckNoSecrets).
type Snapshot struct {
	// Path is the SSM path the config was read from.
	Path string `json:"path"`
	// Digest is the hex SHA-256 of Document: the config's version.
	Digest string `json:"digest"`
	// Document is the merged YAML document, as validated.
	Document string `json:"document"`
	// Sources are the parameters merged into it, in merge (name) order.
	Sources []Source `json:"sources"`
	// ReadAt is when the parameters were read.
	ReadAt time.Time `json:"read_at"`
	// AcceptedAt is when the config was accepted and stored.
	AcceptedAt time.Time `json:"accepted_at,omitzero"`
	// Seq is the stored item's version: 1 for the first config ever stored
	// under Path, +1 for each later one. Set by LastGood.
	Seq int64 `json:"-"`
}

// Source is one config parameter of a Snapshot.
type Source struct {
	// Name is the parameter's full name.
	Name string `json:"name"`
	// Version is the parameter's version when it was read.
	Version int64 `json:"version"`
	// Type is String, StringList or SecureString.
	Type string `json:"type"`
}

// LastGood keeps the last accepted config of each SSM path in the table
// (one item, [store.ConfigLastGoodKey]).
type LastGood struct {
	// Store is the table. Required.
	Store interface {
		store.Getter
		store.Putter
	}
	// Timeout bounds each store call (default 1s): a slow table never
	// holds up a cold start for long.
	Timeout time.Duration
	// Now is the clock (nil: time.Now).
	Now func() time.Time
}

func (lg *LastGood) call(ctx context.Context) (context.Context, context.CancelFunc) {
	d := lg.Timeout
	if d <= 0 {
		d = time.Second
	}
	return context.WithTimeout(ctx, d)
}

// Load returns the last good config stored for path; found is false when
// none ever was. One store read.
func (lg *LastGood) Load(ctx context.Context, path string) (snap *Snapshot, found bool, err error) {
	ctx, cancel := lg.call(ctx)
	defer cancel()
	it, found, err := lg.Store.Get(ctx, store.ConfigLastGoodKey(path))
	if err != nil || !found {
		return nil, false, err
	}
	snap = &Snapshot{}
	if err := json.Unmarshal(it.Data, snap); err != nil {
		return nil, false, fmt.Errorf("last good config of %s: %w", path, err)
	}
	snap.Seq = it.Version
	return snap, true, nil
}

// Save stores snap as the last good config of its path, unless the stored
// one already is the same document or was read from SSM later (another
// instance got there first). It reads once and writes at most once (a
// conditional write; a lost race reads again). stored reports a write.
func (lg *LastGood) Save(ctx context.Context, snap *Snapshot) (stored bool, err error) {
	now := time.Now
	if lg.Now != nil {
		now = lg.Now
	}
	for range 3 {
		cur, found, err := lg.Load(ctx, snap.Path)
		if err != nil {
			return false, err
		}
		cond := store.IfAbsent()
		if found {
			if cur.Digest == snap.Digest || cur.ReadAt.After(snap.ReadAt) {
				return false, nil
			}
			cond = store.IfVersion(cur.Seq)
		}
		rec := *snap
		rec.AcceptedAt = now().UTC()
		data, err := json.Marshal(rec)
		if err != nil {
			return false, err
		}
		pctx, cancel := lg.call(ctx)
		it, err := lg.Store.Put(pctx, store.Item{Key: store.ConfigLastGoodKey(snap.Path), Data: data}, cond)
		cancel()
		if errors.Is(err, store.ErrConflict) {
			continue
		}
		if err != nil {
			return false, err
		}
		snap.AcceptedAt, snap.Seq = rec.AcceptedAt, it.Version
		return true, nil
	}
	return false, fmt.Errorf("last good config of %s: %w", snap.Path, store.ErrConflict)
}

// credentialish matches values that look like credentials (bearer tokens,
// provider key prefixes, AWS access key ids, long opaque tokens).
var credentialish = sync.OnceValue(func() *regexp.Regexp {
	return regexp.MustCompile(`(?i)(bearer\s+\S|\b(sk|gsk|xai|rk)-[A-Za-z0-9_\-]{6,}|\bsk-ant-|\bA(KIA|SIA)[A-Z0-9]{12,}|[A-Za-z0-9_\-+/]{32,})`)
})

// secretQuery matches URL query parameter names that carry credentials.
var secretQuery = sync.OnceValue(func() *regexp.Regexp {
	return regexp.MustCompile(`(?i)(key|token|secret|signature|password|credential)`)
})

// CheckNoSecrets reports why snap must not be stored in the table, or nil:
// a source parameter is a SecureString (its decrypted value would be
// stored in clear), or a provider's headers, options, base URL or endpoint
// carry something credential-shaped. Keys are references by construction
// (config.Parse refuses inline keys); this re-checks it.
func CheckNoSecrets(snap *Snapshot, cfg *config.Config) error {
	for _, s := range snap.Sources {
		if s.Type == string(types.ParameterTypeSecureString) {
			return fmt.Errorf("config parameter %s is a SecureString: keep secrets under the keys path and reference them", s.Name)
		}
	}
	for _, id := range cfg.ProviderIDs() {
		p := cfg.Providers[id]
		for i, k := range p.Keys {
			if (k.Env == "") == (k.SSM == "") {
				return fmt.Errorf("providers.%s.keys[%d] is not a reference", id, i)
			}
		}
		for h, v := range p.Headers {
			if credentialish().MatchString(v) || secretQuery().MatchString(h) {
				return fmt.Errorf("providers.%s.headers.%s looks like a credential", id, h)
			}
		}
		for o, v := range p.Options {
			if credentialish().MatchString(v) {
				return fmt.Errorf("providers.%s.options.%s looks like a credential", id, o)
			}
		}
		for field, raw := range map[string]string{"base_url": p.BaseURL, "endpoint": p.Endpoint} {
			if raw == "" {
				continue
			}
			u, err := url.Parse(raw)
			if err != nil {
				return fmt.Errorf("providers.%s.%s does not parse", id, field)
			}
			if _, ok := u.User.Password(); ok {
				return fmt.Errorf("providers.%s.%s holds a password", id, field)
			}
			for q := range u.Query() {
				if secretQuery().MatchString(q) {
					return fmt.Errorf("providers.%s.%s has a credential-like query parameter %q", id, field, q)
				}
			}
		}
	}
	return nil
}

// save stores an accepted config as the last good one (no-op without
// LastGood). Failures are logged: the config is in force either way.
func (l *Loader) save(ctx context.Context, snap *Snapshot, cfg *config.Config) {
	if l.LastGood == nil || snap == nil {
		return
	}
	attrs := []any{slog.String("path", l.Path), slog.String("digest", snap.Digest)}
	if err := CheckNoSecrets(snap, cfg); err != nil {
		l.log().Error("config accepted but not stored as the last good config", append(attrs, slog.String("reason", err.Error()))...)
		return
	}
	stored, err := l.LastGood.Save(ctx, snap)
	if err != nil {
		l.log().Error("storing the last good config failed", append(attrs, slog.String("error", err.Error()))...)
		return
	}
	if stored {
		l.log().Info("last good config stored", append(attrs, slog.Int64("seq", snap.Seq))...)
	}
}

// Boot loads the config of a cold start and hands it to accept (which
// builds the gateway on it). It uses SSM when the parameters validate and
// accept takes them, and stores that config as the last good one.
// Otherwise the failure is logged and reported to OnError (the metric the
// config-reload alarm watches), and Boot falls back to the last good config
// stored in the table. It fails, with ErrNoConfig, only when neither works:
// typically when no good config has ever been stored. Boot marks the
// config loaded (see Stale); a config from the table leaves the next
// refresh free to apply SSM's as soon as it validates.
func (l *Loader) Boot(ctx context.Context, accept func(context.Context, *config.Config) error) (*Snapshot, error) {
	defer l.Loaded()
	cfg, snap, _, err := l.LoadSnapshot(ctx)
	if err == nil {
		if err = accept(ctx, cfg); err == nil {
			if l.Background != nil {
				// Nothing served needs it: off the cold start (a copy, so
				// the snapshot returned is not written behind its reader).
				rec, bctx := *snap, context.WithoutCancel(ctx)
				l.Background(func() { l.save(bctx, &rec, cfg) })
				return snap, nil
			}
			l.save(ctx, snap, cfg)
			return snap, nil
		}
	}
	l.forget()
	l.log().Error("config from SSM unusable at start; booting on the last good config",
		slog.String("path", l.Path), slog.String("error", err.Error()))
	if l.OnError != nil {
		l.OnError(err)
	}
	if l.LastGood == nil {
		return nil, fmt.Errorf("%w: %v", ErrNoConfig, err)
	}
	last, found, lerr := l.LastGood.Load(ctx, l.Path)
	switch {
	case lerr != nil:
		return nil, fmt.Errorf("%w: %v; reading the last good config: %v", ErrNoConfig, err, lerr)
	case !found:
		return nil, fmt.Errorf("%w: %v; and no good config has ever been stored for %s", ErrNoConfig, err, l.Path)
	}
	cfg, perr := config.Parse([]byte(last.Document))
	if perr == nil {
		perr = accept(ctx, cfg)
	}
	if perr != nil {
		return nil, fmt.Errorf("%w: %v; the last good config (%s) is unusable too: %v", ErrNoConfig, err, last.Digest, perr)
	}
	names := make([]string, len(last.Sources))
	for i, s := range last.Sources {
		names[i] = fmt.Sprintf("%s@%d", s.Name, s.Version)
	}
	l.log().Warn("serving the last good config until SSM validates again", slog.String("path", l.Path),
		slog.String("digest", last.Digest), slog.Int64("seq", last.Seq), slog.Time("accepted_at", last.AcceptedAt),
		slog.String("sources", strings.Join(names, ",")))
	return last, nil
}
