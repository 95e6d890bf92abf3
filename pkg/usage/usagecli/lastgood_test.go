package usagecli

import (
	"context"
	"log/slog"
	"path/filepath"
	"strings"
	"testing"

	"github.com/llmgw/llmgw/pkg/deployment"
	"github.com/llmgw/llmgw/pkg/ssmconfig/ssmtest"
	"github.com/llmgw/llmgw/pkg/store/embedded"
)

// TestSSMConfigFallsBackToTheLastGoodConfig: the usage commands read the
// gateway's config from SSM as a gateway cold start does. An accepted
// config is stored as the last good one; while a bad edit is live, the
// error is reported (log and OnError) and the last good config is used.
// Without a store, or with none stored, the bad edit is an error.
func TestSSMConfigFallsBackToTheLastGoodConfig(t *testing.T) {
	srv := ssmtest.New()
	defer srv.Close()
	for k, v := range map[string]string{"AWS_ENDPOINT_URL_SSM": srv.URL, "AWS_REGION": "us-east-1", "AWS_ACCESS_KEY_ID": "fake",
		"AWS_SECRET_ACCESS_KEY": "fake", "AWS_CONFIG_FILE": "/dev/null", "AWS_SHARED_CREDENTIALS_FILE": "/dev/null"} {
		t.Setenv(k, v)
	}
	path := deployment.ConfigPath("test")
	srv.Put(path+"00-base", "String", "providers: {a: {kind: fake}}\nroutes: {m: {targets: [{provider: a, model: x}]}}\nteams: {search: {}, ads: {}}\n")
	st, err := embedded.Open(filepath.Join(t.TempDir(), "state.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	env := func(k string) string { return map[string]string{EnvConfigPath: path}[k] }
	var logs strings.Builder
	var reported []error
	opts := ConfigOptions{Getenv: env, LastGood: st, Log: slog.New(slog.NewTextHandler(&logs, nil)), OnError: func(err error) { reported = append(reported, err) }}
	ctx := context.Background()
	if cfg, err := LoadConfigWith(ctx, opts); err != nil || len(cfg.Teams) != 2 {
		t.Fatalf("good config: %v %v", cfg, err)
	}

	srv.Put(path+"90-incident", "String", "routes: [demo, {targets: ")
	cfg, err := LoadConfigWith(ctx, opts)
	if err != nil || len(cfg.Teams) != 2 {
		t.Fatalf("bad edit: got %v, %v; want the last good config", cfg, err)
	}
	if len(reported) != 1 || !strings.Contains(reported[0].Error(), "90-incident") || !strings.Contains(logs.String(), "last good config") {
		t.Errorf("the bad edit is not reported: %v\n%s", reported, logs.String())
	}

	if _, err := LoadConfigWith(ctx, ConfigOptions{Getenv: env}); err == nil {
		t.Error("without a store the bad edit was accepted")
	}
	other, _ := embedded.Open(filepath.Join(t.TempDir(), "other.db"))
	defer other.Close()
	if _, err := LoadConfigWith(ctx, ConfigOptions{Getenv: env, LastGood: other, Log: slog.New(slog.DiscardHandler)}); err == nil ||
		!strings.Contains(err.Error(), "no good config has ever been stored") {
		t.Errorf("nothing stored: err = %v", err)
	}
}
