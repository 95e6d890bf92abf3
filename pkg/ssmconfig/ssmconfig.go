// Package ssmconfig loads the gateway config from SSM Parameter Store and
// keeps it fresh. Every parameter under a path is read (GetParametersByPath,
// paginated), the YAML documents are deep-merged in name order ("00-base",
// then "50-teams", ...), validated, and swapped in only when valid: an edit
// that fails validation, or an SSM error, keeps the last good config and is
// logged and counted. Every accepted config is also stored in the table as
// the last good one (see [LastGood]), so an instance that starts while the
// parameters do not validate boots on it ([Loader.Boot]). Provider keys
// referenced as {ssm: /name} are SecureString parameters, decrypted at load
// and cached.
//
// A config error names the parameter that holds the offending value and
// the line and column within its value (see attribute.go).
package ssmconfig

import (
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"log/slog"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/ssm"
	"github.com/aws/aws-sdk-go-v2/service/ssm/types"

	"github.com/llmgw/llmgw/pkg/config"
	"github.com/llmgw/llmgw/pkg/deployment"
	"github.com/llmgw/llmgw/pkg/keyledger"
)

// API is the part of the SSM client the loader uses.
type API interface {
	GetParametersByPath(ctx context.Context, in *ssm.GetParametersByPathInput, opts ...func(*ssm.Options)) (*ssm.GetParametersByPathOutput, error)
	GetParameter(ctx context.Context, in *ssm.GetParameterInput, opts ...func(*ssm.Options)) (*ssm.GetParameterOutput, error)
}

var _ API = (*ssm.Client)(nil)

// Loader reads the config under Path and refreshes it.
type Loader struct {
	// API is the SSM client. Required.
	API API
	// Path is the parameter path, e.g. /llmgw/prod/config/. Required.
	Path string
	// Refresh is how old the config may get before a request triggers a
	// reload (default deployment.DefaultConfigRefresh).
	Refresh time.Duration
	// KeyTTL is how long decrypted keys are cached (default 5m), so a
	// rotated SecureString value is picked up without a config edit.
	KeyTTL time.Duration
	// Timeout bounds one load (default 5s).
	Timeout time.Duration
	// Log receives reload failures and changes (nil: slog.Default()).
	Log *slog.Logger
	// OnError, when set, is called for every failed reload, and for a cold
	// start that could not use SSM (the metric).
	OnError func(err error)
	// LastGood, when set, stores every accepted config and gives Boot the
	// last one when SSM does not validate (nil: nothing is stored).
	LastGood *LastGood
	// Now is the clock (nil: time.Now).
	Now func() time.Time
	// Background, when set, runs what a cold start need not wait for: the
	// store of the booted config as the last good one (Boot then returns
	// before it, without its Seq and AcceptedAt). nil: inline.
	Background func(f func())

	mu       sync.Mutex
	loading  bool
	loadedAt time.Time
	digest   [32]byte
	keys     map[string]cachedKey
}

type cachedKey struct {
	value string
	at    time.Time
}

func (l *Loader) now() time.Time {
	if l.Now != nil {
		return l.Now()
	}
	return time.Now()
}

func (l *Loader) log() *slog.Logger {
	if l.Log != nil {
		return l.Log
	}
	return slog.Default()
}

// Load reads, merges and validates the config. It returns the config, and
// changed=false when the merged document is the same as last time.
func (l *Loader) Load(ctx context.Context) (cfg *config.Config, changed bool, err error) {
	cfg, _, changed, err = l.LoadSnapshot(ctx)
	return cfg, changed, err
}

// LoadSnapshot is Load, also returning what was read: the merged document,
// its digest and its source parameters (what [LastGood] stores once the
// config is accepted).
func (l *Loader) LoadSnapshot(ctx context.Context) (cfg *config.Config, snap *Snapshot, changed bool, err error) {
	timeout := l.Timeout
	if timeout == 0 {
		timeout = 5 * time.Second
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	readAt := l.now()
	params, err := l.read(ctx)
	if err != nil {
		return nil, nil, false, err
	}
	docs := make([]string, len(params))
	snap = &Snapshot{Path: l.Path, ReadAt: readAt.UTC()}
	for i, p := range params {
		docs[i] = p.value
		snap.Sources = append(snap.Sources, Source{Name: p.name, Version: p.version, Type: p.typ})
	}
	merged, err := mergeParams(params)
	if err != nil {
		return nil, nil, false, err
	}
	sum := sha256.Sum256(merged)
	cfg, err = config.Parse(merged)
	if err != nil {
		// Name the parameter that holds the offending value, and the
		// line and column in it.
		return nil, nil, false, attribute(err, params, l.Path)
	}
	snap.Document, snap.Digest = string(merged), fmt.Sprintf("%x", sum)
	l.mu.Lock()
	changed = sum != l.digest
	l.digest = sum
	l.mu.Unlock()
	return cfg, snap, changed, nil
}

// forget makes the next load count as changed (after a failed apply).
func (l *Loader) forget() {
	l.mu.Lock()
	l.digest = [32]byte{}
	l.mu.Unlock()
}

// read returns the parameters under Path, sorted by name.
func (l *Loader) read(ctx context.Context) ([]param, error) {
	var params []param
	in := &ssm.GetParametersByPathInput{Path: aws.String(l.Path), Recursive: aws.Bool(true), WithDecryption: aws.Bool(true)}
	for {
		out, err := l.API.GetParametersByPath(ctx, in)
		if err != nil {
			return nil, fmt.Errorf("ssm: reading %s: %w", l.Path, err)
		}
		for _, p := range out.Parameters {
			params = append(params, param{name: aws.ToString(p.Name), value: aws.ToString(p.Value), typ: string(p.Type), version: p.Version})
		}
		if out.NextToken == nil || *out.NextToken == "" {
			break
		}
		in.NextToken = out.NextToken
	}
	if len(params) == 0 {
		return nil, fmt.Errorf("ssm: no parameters under %s", l.Path)
	}
	sort.Slice(params, func(i, j int) bool { return params[i].name < params[j].name })
	return params, nil
}

// Merge deep-merges YAML documents in order: maps merge key by key, any
// other value (lists included) is replaced by the later document's. An
// error names the document by its index.
func Merge(docs []string) ([]byte, error) {
	params := make([]param, len(docs))
	for i, d := range docs {
		params[i] = param{name: strconv.Itoa(i), value: d}
	}
	return mergeParams(params)
}

func mergeMaps(dst, src map[string]any) map[string]any {
	if dst == nil {
		dst = map[string]any{}
	}
	for k, v := range src {
		if sm, ok := v.(map[string]any); ok {
			if dm, ok := dst[k].(map[string]any); ok {
				dst[k] = mergeMaps(dm, sm)
				continue
			}
		}
		dst[k] = v
	}
	return dst
}

// ResolveKey resolves a key reference: {ssm: name} from Parameter Store
// (decrypted, cached for KeyTTL), {env: VAR} from the environment. A
// parameter that does not exist is an error wrapping [keyledger.ErrNotFound];
// when reading fails otherwise (throttling, a timeout) a value cached
// earlier is kept, however old.
func (l *Loader) ResolveKey(ctx context.Context, ref config.KeyRef, env func(string) string) (string, bool, error) {
	if ref.Env != "" {
		v := env(ref.Env)
		return v, v != "", nil
	}
	ttl := l.KeyTTL
	if ttl == 0 {
		ttl = 5 * time.Minute
	}
	now := l.now()
	l.mu.Lock()
	c, cached := l.keys[ref.SSM]
	l.mu.Unlock()
	if cached && now.Sub(c.at) < ttl {
		return c.value, c.value != "", nil
	}
	out, err := l.API.GetParameter(ctx, &ssm.GetParameterInput{Name: aws.String(ref.SSM), WithDecryption: aws.Bool(true)})
	if err != nil {
		// Never include the value; the name is not secret.
		var nf *types.ParameterNotFound
		if errors.As(err, &nf) {
			return "", false, fmt.Errorf("ssm: key parameter %s: %w", ref.SSM, keyledger.ErrNotFound)
		}
		if cached {
			l.log().Warn("provider key could not be re-read; keeping the cached value",
				slog.String("parameter", ref.SSM), slog.String("error", err.Error()))
			return c.value, c.value != "", nil
		}
		return "", false, fmt.Errorf("ssm: key parameter %s: %w", ref.SSM, err)
	}
	v := strings.TrimSpace(aws.ToString(out.Parameter.Value))
	l.mu.Lock()
	if l.keys == nil {
		l.keys = map[string]cachedKey{}
	}
	l.keys[ref.SSM] = cachedKey{value: v, at: now}
	l.mu.Unlock()
	return v, v != "", nil
}

// Stale reports whether the config is older than the refresh period, and
// claims the reload if so (only one caller gets true at a time).
func (l *Loader) Stale() bool {
	refresh := l.Refresh
	if refresh == 0 {
		refresh = deployment.DefaultConfigRefresh
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.loading || l.now().Sub(l.loadedAt) < refresh {
		return false
	}
	l.loading = true
	return true
}

// Loaded records the end of a reload attempt started after Stale.
func (l *Loader) Loaded() {
	l.mu.Lock()
	l.loading = false
	l.loadedAt = l.now()
	l.mu.Unlock()
}

// RefreshIfStale reloads if stale and hands a changed, valid config to
// apply. Failures keep the last good config: they are logged and reported
// to OnError. It is safe to call on every request; at most one reload runs.
func (l *Loader) RefreshIfStale(ctx context.Context, apply func(context.Context, *config.Config) error) {
	if !l.Stale() {
		return
	}
	defer l.Loaded()
	l.Reload(ctx, apply)
}

// Reload loads now and applies a changed, valid config, then stores it as
// the last good one; failures keep the last good one (logged, counted).
// Callers that claimed the reload with Stale must call Loaded afterwards.
func (l *Loader) Reload(ctx context.Context, apply func(context.Context, *config.Config) error) {
	cfg, snap, changed, err := l.LoadSnapshot(ctx)
	if err == nil && changed {
		err = apply(ctx, cfg)
		if err == nil {
			l.log().Info("config reloaded", slog.String("path", l.Path), slog.String("digest", snap.Digest),
				slog.Any("models", cfg.RouteNames()))
			l.save(ctx, snap, cfg)
		}
	}
	if err != nil {
		l.forget() // retry the same document next time
		l.log().Error("config reload failed; keeping the last good config", slog.String("path", l.Path), slog.String("error", err.Error()))
		if l.OnError != nil {
			l.OnError(err)
		}
	}
}

// ErrNoConfig is returned when no config could be loaded at cold start.
var ErrNoConfig = errors.New("ssmconfig: no valid config")
