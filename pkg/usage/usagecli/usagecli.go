// Package usagecli is the shared plumbing of the usage commands
// (functions/rollup, scripts/costs): store flags (-state FILE for the
// embedded bbolt file shared with a local gateway, -store dynamodb with
// -table), config loading, and date flags.
package usagecli

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"os"
	"strings"
	"time"

	awsconfig "github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/service/ssm"

	"github.com/llmgw/llmgw/pkg/config"
	"github.com/llmgw/llmgw/pkg/deployment"
	"github.com/llmgw/llmgw/pkg/ssmconfig"
	"github.com/llmgw/llmgw/pkg/store"
	"github.com/llmgw/llmgw/pkg/store/dynamo"
	"github.com/llmgw/llmgw/pkg/store/embedded"
)

// Environment variables read by the usage commands (the same as the
// gateway's; see package deployment).
const (
	EnvTable      = deployment.EnvTable      // DynamoDB table name
	EnvConfigFile = deployment.EnvConfigFile // a config file
	EnvConfigPath = deployment.EnvConfigPath // an SSM parameter path holding the config
)

// DefaultStateFile is the embedded store file used when -state is not
// given: the local gateway's default (pkg/app.DefaultStatePath), so both
// read and write the same file.
const DefaultStateFile = deployment.DefaultStateFile

// DefaultTable is the DynamoDB table used when neither -table nor
// $LLMGW_TABLE is set (the local gateway's default).
const DefaultTable = deployment.DefaultTable

// StoreFlags select the store: the embedded bbolt file (default) or a
// DynamoDB table.
type StoreFlags struct {
	Kind  string // "embedded" or "dynamodb"
	State string // bbolt file, for embedded
	Table string // table name, for dynamodb
}

// Register adds -store, -state and -table to fs.
func (f *StoreFlags) Register(fs *flag.FlagSet) {
	fs.StringVar(&f.Kind, "store", "embedded", "store backend: embedded (a local bbolt file, see -state) or dynamodb (see -table)")
	fs.StringVar(&f.State, "state", DefaultStateFile, "embedded store file, shared with a local gateway run with the same -state")
	table := os.Getenv(EnvTable)
	if table == "" {
		table = DefaultTable
	}
	fs.StringVar(&f.Table, "table", table, "DynamoDB table (default $"+EnvTable+", else "+DefaultTable+"); the AWS SDK's usual environment applies (AWS_REGION, AWS_ENDPOINT_URL_DYNAMODB, ...)")
}

// Open opens the selected store.
func (f *StoreFlags) Open(ctx context.Context) (store.Store, error) {
	switch f.Kind {
	case "", "embedded":
		if _, err := os.Stat(f.State); errors.Is(err, os.ErrNotExist) {
			return nil, fmt.Errorf("no store file %s: run the gateway with -state %s first, or pass -state FILE", f.State, f.State)
		}
		s, err := embedded.Open(f.State)
		if err != nil {
			return nil, fmt.Errorf("%w (a running gateway holds the file: stop it, or read usage through it with -url)", err)
		}
		return s, nil
	case "dynamodb":
		if f.Table == "" {
			return nil, fmt.Errorf("-store dynamodb needs -table or $%s", EnvTable)
		}
		client, err := dynamo.LoadClient(ctx)
		if err != nil {
			return nil, err
		}
		return dynamo.New(client, f.Table), nil
	}
	return nil, fmt.Errorf("-store %q: want embedded or dynamodb", f.Kind)
}

// LoadConfig loads the gateway config: the file path when set, else the
// file in $LLMGW_CONFIG_FILE, else the SSM path in $LLMGW_CONFIG_PATH, else
// the built-in demo config (no teams: only "anonymous" usage). It has no
// last good config to fall back on: see LoadConfigWith.
func LoadConfig(ctx context.Context, path string) (*config.Config, error) {
	return LoadConfigWith(ctx, ConfigOptions{Path: path})
}

// The programs reading configs here use their teams only and build no
// provider, so they link no adapter: provider kinds are not checked.
func init() { config.AcceptAnyKind() }

// LoadConfigFrom is LoadConfig with the environment read through getenv.
func LoadConfigFrom(ctx context.Context, path string, getenv func(string) string) (*config.Config, error) {
	return LoadConfigWith(ctx, ConfigOptions{Path: path, Getenv: getenv})
}

// ConfigStore holds the gateway's last good config (the table; see
// ssmconfig.LastGood).
type ConfigStore interface {
	store.Getter
	store.Putter
}

// ConfigOptions say where a usage command reads the gateway config.
type ConfigOptions struct {
	// Path is a config file (the -config flag); empty: $LLMGW_CONFIG_FILE,
	// else the SSM path $LLMGW_CONFIG_PATH, else the demo config.
	Path string
	// Getenv reads the environment (nil: os.Getenv).
	Getenv func(string) string
	// LastGood is the store the gateway keeps its last good config in.
	// With it, a config from SSM that does not validate (or cannot be read)
	// is reported and the last good config is used, as a gateway cold start
	// does; nil: such a config is an error.
	LastGood ConfigStore
	// Log receives the report of a bad SSM config (nil: slog.Default()).
	Log *slog.Logger
	// OnError is called with the error of a bad SSM config, also when the
	// last good one replaced it (the rollup's ConfigReloadErrors metric).
	OnError func(error)
}

// LoadConfigWith loads the gateway config as o says.
func LoadConfigWith(ctx context.Context, o ConfigOptions) (*config.Config, error) {
	getenv := o.Getenv
	if getenv == nil {
		getenv = os.Getenv
	}
	path := o.Path
	if path == "" {
		path = getenv(EnvConfigFile)
	}
	if path != "" {
		return config.LoadFile(path)
	}
	if p := getenv(EnvConfigPath); p != "" {
		return loadSSMConfig(ctx, p, o)
	}
	return config.Demo(), nil
}

// loadSSMConfig reads the config from SSM Parameter Store under path
// (package ssmconfig: every parameter under it, merged in name order) the
// way a gateway cold start does (ssmconfig.Loader.Boot): a config that
// validates is used and stored as the last good one; otherwise the error is
// logged and the last good config in o.LastGood is used.
func loadSSMConfig(ctx context.Context, path string, o ConfigOptions) (*config.Config, error) {
	awsCfg, err := awsconfig.LoadDefaultConfig(ctx)
	if err != nil {
		return nil, err
	}
	l := &ssmconfig.Loader{API: ssm.NewFromConfig(awsCfg), Path: path, Log: o.Log, OnError: o.OnError}
	if o.LastGood == nil {
		cfg, _, err := l.Load(ctx)
		if err != nil && o.OnError != nil {
			o.OnError(err)
		}
		return cfg, err
	}
	l.LastGood = &ssmconfig.LastGood{Store: o.LastGood}
	var cfg *config.Config
	if _, err := l.Boot(ctx, func(_ context.Context, c *config.Config) error {
		cfg = c
		return nil
	}); err != nil {
		return nil, err
	}
	return cfg, nil
}

// ParseDay parses a YYYY-MM-DD UTC day; "today" and "yesterday" are
// relative to now.
func ParseDay(s string, now time.Time) (time.Time, error) {
	today := now.UTC().Truncate(24 * time.Hour)
	switch strings.ToLower(s) {
	case "today":
		return today, nil
	case "yesterday":
		return today.AddDate(0, 0, -1), nil
	}
	t, err := time.Parse(time.DateOnly, s)
	if err != nil {
		return time.Time{}, fmt.Errorf("%q is not a day YYYY-MM-DD", s)
	}
	return t, nil
}
