package ssmconfig_test

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/llmgw/llmgw/pkg/config"
	"github.com/llmgw/llmgw/pkg/keyledger"
	"github.com/llmgw/llmgw/pkg/ssmconfig"
	"github.com/llmgw/llmgw/pkg/ssmconfig/ssmtest"
	"github.com/llmgw/llmgw/pkg/store"
	"github.com/llmgw/llmgw/pkg/store/embedded"
)

const path = "/llmgw/test/config/"

// counting counts the store calls the last good config costs.
type counting struct {
	store.Store
	gets, puts atomic.Int64
}

func (c *counting) Get(ctx context.Context, k store.Key) (store.Item, bool, error) {
	c.gets.Add(1)
	return c.Store.Get(ctx, k)
}

func (c *counting) Put(ctx context.Context, it store.Item, cond store.Cond) (store.Item, error) {
	c.puts.Add(1)
	return c.Store.Put(ctx, it, cond)
}

func (c *counting) calls() (gets, puts int64) { return c.gets.Swap(0), c.puts.Swap(0) }

func openStore(t *testing.T) *counting {
	t.Helper()
	s, err := embedded.Open(filepath.Join(t.TempDir(), "state.db"), embedded.WithNoSync())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return &counting{Store: s}
}

// instance is one cold start's loader over the shared SSM and table.
type instance struct {
	l      *ssmconfig.Loader
	logs   bytes.Buffer
	errs   atomic.Int32
	served *config.Config
}

func newInstance(t *testing.T, srv *ssmtest.Server, st store.Store) *instance {
	in := &instance{}
	in.l = &ssmconfig.Loader{API: client(t, srv), Path: path, Log: slog.New(slog.NewJSONHandler(&in.logs, nil)),
		OnError: func(error) { in.errs.Add(1) }, LastGood: &ssmconfig.LastGood{Store: st}}
	return in
}

func (in *instance) accept(_ context.Context, c *config.Config) error { in.served = c; return nil }

func TestColdStartOnInvalidSSMBootsOnTheLastGoodConfig(t *testing.T) {
	srv := ssmtest.New()
	defer srv.Close()
	st := openStore(t)
	srv.Put(path+"00-base", "String", base)
	srv.Put(path+"50-teams", "String", "teams: {search: {keys: [{id: k1, sha256: \""+strings.Repeat("ab", 32)+"\"}]}}\n")

	// A first instance accepts the config and stores it: one read, one write.
	a := newInstance(t, srv, st)
	snap, err := a.l.Boot(context.Background(), a.accept)
	if err != nil || a.served == nil || a.errs.Load() != 0 {
		t.Fatalf("boot: %v (errs %d)", err, a.errs.Load())
	}
	if g, p := st.calls(); g != 1 || p != 1 {
		t.Errorf("first cold start: %d gets, %d puts; want 1, 1", g, p)
	}
	// A second cold start on the same config reads once and writes nothing.
	if _, err := newInstance(t, srv, st).l.Boot(context.Background(), a.accept); err != nil {
		t.Fatal(err)
	}
	if g, p := st.calls(); g != 1 || p != 0 {
		t.Errorf("cold start on a stored config: %d gets, %d puts; want 1, 0", g, p)
	}
	stored, found, err := (&ssmconfig.LastGood{Store: st}).Load(context.Background(), path)
	if err != nil || !found || stored.Digest != snap.Digest || stored.Seq != 1 || stored.AcceptedAt.IsZero() {
		t.Fatalf("stored = %+v, %v, %v", stored, found, err)
	}
	if len(stored.Sources) != 2 || stored.Sources[0] != (ssmconfig.Source{Name: path + "00-base", Version: 1, Type: "String"}) ||
		stored.Sources[1].Name != path+"50-teams" {
		t.Errorf("sources = %+v", stored.Sources)
	}
	if !strings.Contains(stored.Document, "ssm: /llmgw/test/keys/b/1") {
		t.Errorf("the stored document should hold the key reference: %s", stored.Document)
	}
	st.calls() // not the gateway's

	// A bad edit, then a new instance: it serves the last good config, logs
	// the validation error and reports it (the metric).
	srv.Put(path+"90-incident", "String", "routes:\n  chat: {targets: [{provider: ghost, model: x}]}\n")
	b := newInstance(t, srv, st)
	got, err := b.l.Boot(context.Background(), b.accept)
	if err != nil || got.Digest != snap.Digest || b.served == nil {
		t.Fatalf("boot on a bad edit: %v", err)
	}
	if b.served.Routes["chat"].Targets[0].Provider != "a" || b.errs.Load() != 1 {
		t.Errorf("served %+v, errs %d", b.served.Routes["chat"].Targets, b.errs.Load())
	}
	if s := b.logs.String(); !strings.Contains(s, "ghost") || !strings.Contains(s, "booting on the last good config") {
		t.Errorf("logs: %s", s)
	}
	if g, p := st.calls(); g != 1 || p != 0 {
		t.Errorf("cold start on a bad edit: %d gets, %d puts; want 1, 0", g, p)
	}

	// Fixed: the next reload applies SSM's config and stores it (one read,
	// one write); unchanged reloads cost nothing.
	srv.Put(path+"90-incident", "String", "routes:\n  chat: {targets: [{provider: b, model: gpt-4.1}]}\n")
	b.l.Reload(context.Background(), b.accept)
	if b.served.Routes["chat"].Targets[0].Provider != "b" {
		t.Fatal("fixed edit not applied")
	}
	if g, p := st.calls(); g != 1 || p != 1 {
		t.Errorf("reload of a changed config: %d gets, %d puts; want 1, 1", g, p)
	}
	b.l.Reload(context.Background(), b.accept)
	if g, p := st.calls(); g != 0 || p != 0 {
		t.Errorf("unchanged reload: %d gets, %d puts; want 0, 0", g, p)
	}
	stored, _, _ = (&ssmconfig.LastGood{Store: st}).Load(context.Background(), path)
	if stored.Seq != 2 || len(stored.Sources) != 3 || !strings.Contains(stored.Document, "gpt-4.1") {
		t.Errorf("after the fix, stored = %+v", stored)
	}
}

func TestColdStartFailsOnlyWhenNoGoodConfigWasEverStored(t *testing.T) {
	srv := ssmtest.New()
	defer srv.Close()
	srv.Put(path+"00-base", "String", "routes:\n  chat: {targets: [{provider: ghost, model: x}]}\n")
	in := newInstance(t, srv, openStore(t))
	_, err := in.l.Boot(context.Background(), in.accept)
	if !errors.Is(err, ssmconfig.ErrNoConfig) || !strings.Contains(err.Error(), "no good config has ever been stored") || in.errs.Load() != 1 {
		t.Fatalf("err = %v, errs %d", err, in.errs.Load())
	}
	// SSM unreachable at start is the same case as an invalid edit.
	srv.Fail.Store(true)
	if _, err := in.l.Boot(context.Background(), in.accept); !errors.Is(err, ssmconfig.ErrNoConfig) {
		t.Fatalf("err = %v", err)
	}
}

func TestBootFallsBackWhenTheGatewayRefusesSSMConfig(t *testing.T) {
	srv := ssmtest.New()
	defer srv.Close()
	st := openStore(t)
	srv.Put(path+"00-base", "String", base)
	a := newInstance(t, srv, st)
	if _, err := a.l.Boot(context.Background(), a.accept); err != nil {
		t.Fatal(err)
	}
	srv.Put(path+"50-more", "String", "routes:\n  extra: {targets: [{provider: a, model: y}]}\n")
	b := newInstance(t, srv, st)
	refused := errors.New("cannot build")
	snap, err := b.l.Boot(context.Background(), func(ctx context.Context, c *config.Config) error {
		if _, ok := c.Routes["extra"]; ok {
			return refused
		}
		return b.accept(ctx, c)
	})
	if err != nil || b.served == nil || len(snap.Sources) != 1 || b.errs.Load() != 1 {
		t.Fatalf("boot = %+v, %v", snap, err)
	}
}

func TestSecretsAreNeverStored(t *testing.T) {
	const secret = "sk-SENTINEL-0123456789abcdef"
	srv := ssmtest.New()
	defer srv.Close()
	st := openStore(t)
	// A SecureString under the config path: its decrypted text would be
	// stored in clear, so the config serves but is not stored.
	srv.Put(path+"00-base", "String", base)
	srv.Put(path+"60-secret", "SecureString", "providers:\n  b: {headers: {X-Note: plain}}\n# "+secret+"\n")
	in := newInstance(t, srv, st)
	if _, err := in.l.Boot(context.Background(), in.accept); err != nil || in.served == nil {
		t.Fatal(err)
	}
	if _, found, _ := (&ssmconfig.LastGood{Store: st}).Load(context.Background(), path); found {
		t.Fatal("a config with a SecureString source was stored")
	}
	if !strings.Contains(in.logs.String(), "not stored as the last good config") || strings.Contains(in.logs.String(), "SENTINEL") {
		t.Errorf("logs: %s", in.logs.String())
	}

	cfg, _ := config.Parse([]byte(base))
	snap := &ssmconfig.Snapshot{Sources: []ssmconfig.Source{{Name: "x", Type: "String"}}}
	if err := ssmconfig.CheckNoSecrets(snap, cfg); err != nil {
		t.Fatalf("a config of references only refused: %v", err)
	}
	for name, edit := range map[string]func(p *config.Provider){
		"header value":    func(p *config.Provider) { p.Headers = map[string]string{"X-Note": "Bearer " + secret} },
		"header name":     func(p *config.Provider) { p.Headers = map[string]string{"X-Upstream-Token": "abc"} },
		"option":          func(p *config.Provider) { p.Options = map[string]string{"anthropic_version": secret} },
		"url password":    func(p *config.Provider) { p.BaseURL = "https://u:pw@api.example.com/v1" },
		"url query token": func(p *config.Provider) { p.BaseURL = "https://api.example.com/v1?api_key=abc" },
		"inline key":      func(p *config.Provider) { p.Keys = []config.KeyRef{{}} },
	} {
		c, _ := config.Parse([]byte(base))
		edit(c.Providers["b"])
		if err := ssmconfig.CheckNoSecrets(snap, c); err == nil {
			t.Errorf("%s: not refused", name)
		}
	}
}

func TestMissingKeyParameterIsNotFoundAndTransientErrorsKeepTheCachedKey(t *testing.T) {
	srv := ssmtest.New()
	defer srv.Close()
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	l := &ssmconfig.Loader{API: client(t, srv), Path: path, Now: func() time.Time { return now }, Log: slog.New(slog.DiscardHandler)}
	_, _, err := l.ResolveKey(context.Background(), config.KeyRef{SSM: "/llmgw/test/keys/none"}, nil)
	if !errors.Is(err, keyledger.ErrNotFound) {
		t.Fatalf("missing parameter: %v", err)
	}
	srv.Put("/llmgw/test/keys/b/1", "SecureString", "sk-cached")
	if v, ok, err := l.ResolveKey(context.Background(), config.KeyRef{SSM: "/llmgw/test/keys/b/1"}, nil); v != "sk-cached" || !ok || err != nil {
		t.Fatalf("resolve = %q %v %v", v, ok, err)
	}
	now = now.Add(time.Hour)
	srv.Fail.Store(true)
	if v, ok, err := l.ResolveKey(context.Background(), config.KeyRef{SSM: "/llmgw/test/keys/b/1"}, nil); v != "sk-cached" || !ok || err != nil {
		t.Fatalf("SSM down: resolve = %q %v %v (the cached key should stay)", v, ok, err)
	}
	if _, _, err := l.ResolveKey(context.Background(), config.KeyRef{SSM: "/llmgw/test/keys/other"}, nil); err == nil || errors.Is(err, keyledger.ErrNotFound) {
		t.Fatalf("SSM down, nothing cached: %v", err)
	}
}

// TestBootStoresTheLastGoodConfigInTheBackground: with Background set,
// Boot returns before the booted config is stored, and the work it hands
// to Background stores it.
func TestBootStoresTheLastGoodConfigInTheBackground(t *testing.T) {
	srv := ssmtest.New()
	defer srv.Close()
	st := openStore(t)
	srv.Put(path+"00-base", "String", base)
	in := newInstance(t, srv, st)
	var later []func()
	in.l.Background = func(f func()) { later = append(later, f) }
	if _, err := in.l.Boot(context.Background(), in.accept); err != nil || in.served == nil {
		t.Fatal(err)
	}
	lg := &ssmconfig.LastGood{Store: st}
	if _, found, _ := lg.Load(context.Background(), path); found || len(later) != 1 {
		t.Fatalf("stored during Boot (found %v), or %d background jobs; want not yet, and 1", found, len(later))
	}
	later[0]()
	if _, found, err := lg.Load(context.Background(), path); !found || err != nil {
		t.Fatalf("not stored by the background job: found %v, %v", found, err)
	}
}
