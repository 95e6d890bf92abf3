package app

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"os"
	"sync"
	"sync/atomic"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-lambda-go/lambda"
	"github.com/aws/aws-sdk-go-v2/aws"
	awsconfig "github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/aws-sdk-go-v2/service/ssm"

	"github.com/llmgw/llmgw/pkg/config"
	"github.com/llmgw/llmgw/pkg/deployment"
	"github.com/llmgw/llmgw/pkg/iamcaller"
	"github.com/llmgw/llmgw/pkg/metrics"
	"github.com/llmgw/llmgw/pkg/ssmconfig"
	"github.com/llmgw/llmgw/pkg/store"
	"github.com/llmgw/llmgw/pkg/store/dynamo"
	"github.com/llmgw/llmgw/pkg/store/embedded"
	"github.com/llmgw/llmgw/pkg/usage/sqsspill"
)

// LambdaEnv is the Lambda function's configuration, from its environment
// (the variables of [deployment.GatewayEnv], plus a local config file).
type LambdaEnv struct {
	ConfigPath string        // deployment.EnvConfigPath: SSM path of the config parameters
	ConfigFile string        // deployment.EnvConfigFile: a config file (tests, or no SSM)
	Refresh    time.Duration // deployment.EnvConfigRefresh (default deployment.DefaultConfigRefresh)
	Stage      string        // deployment.EnvStage: the Stage metric dimension
	Table      string        // deployment.EnvTable: the DynamoDB table
	UsageQueue string        // deployment.EnvUsageQueue: the SQS queue URL of the usage spill
	// IAMAuth is deployment.EnvFunctionURLAuthType = AWS_IAM: the caller
	// Lambda verified is trusted and mapped to a team (iam_callers).
	IAMAuth bool
}

// LambdaEnvFromOS reads LambdaEnv from the process environment.
func LambdaEnvFromOS() (LambdaEnv, error) { return LambdaEnvFrom(os.Getenv) }

// LambdaEnvFrom reads LambdaEnv through getenv.
func LambdaEnvFrom(getenv func(string) string) (LambdaEnv, error) {
	e := LambdaEnv{
		ConfigPath: getenv(deployment.EnvConfigPath), ConfigFile: getenv(deployment.EnvConfigFile),
		Stage: getenv(deployment.EnvStage), Table: getenv(deployment.EnvTable), Refresh: deployment.DefaultConfigRefresh,
		UsageQueue: getenv(deployment.EnvUsageQueue),
		IAMAuth:    getenv(deployment.EnvFunctionURLAuthType) == deployment.FunctionURLAuthIAM,
	}
	if v := getenv(deployment.EnvConfigRefresh); v != "" {
		d, err := time.ParseDuration(v)
		if err != nil || d <= 0 {
			return e, fmt.Errorf("%s=%q: want a positive duration like 15s", deployment.EnvConfigRefresh, v)
		}
		e.Refresh = d
	}
	return e, nil
}

// RunLambda serves the gateway through lambdaurl: a Function URL with
// InvokeMode RESPONSE_STREAM, so every write streams to the client; with
// auth type AWS_IAM, the caller Lambda verified is read from each event
// (Invoke).
func RunLambda(ctx context.Context, log *slog.Logger) error {
	env, err := LambdaEnvFromOS()
	if err != nil {
		return err
	}
	lg, err := NewLambdaHandler(ctx, env, log, os.Stdout)
	if err != nil {
		return err
	}
	// WithEnableSIGTERM registers an internal extension, so the runtime
	// sends SIGTERM (with lambdaShutdownTimeout to spare) before it shuts
	// the instance down.
	lambda.StartHandlerFunc(lg.Invoke(env), lambda.WithEnableSIGTERM(lg.OnSIGTERM))
	return nil
}

// Invoke is the Lambda handler of the gateway's Function URL events
// (iamcaller.Handler over lambdaurl): with env.IAMAuth, the caller Lambda
// verified is put in each request's context for the authenticator.
func (l *LambdaGateway) Invoke(env LambdaEnv) func(context.Context, json.RawMessage) (*events.LambdaFunctionURLStreamingResponse, error) {
	return iamcaller.Handler(l, env.IAMAuth)
}

// LambdaGateway is the gateway as Lambda runs it: the handler lambdaurl
// serves, and the shutdown the runtime's SIGTERM runs.
type LambdaGateway struct {
	http.Handler
	// Gateway is the assembled gateway behind Handler.
	Gateway *Gateway
}

// lambdaShutdownTimeout bounds the shutdown on SIGTERM: Lambda gives a
// runtime with an internal extension 500 ms before it kills the process.
const lambdaShutdownTimeout = 450 * time.Millisecond

// OnSIGTERM flushes and closes every component of the gateway
// (Gateway.Shutdown) within lambdaShutdownTimeout.
func (l *LambdaGateway) OnSIGTERM() {
	ctx, cancel := context.WithTimeout(context.Background(), lambdaShutdownTimeout)
	defer cancel()
	l.Gateway.Shutdown(ctx)
}

// NewLambdaHandler builds the Lambda-side handler: config from SSM (or a
// file), refreshed in the background while requests are served; shared
// state and usage in DynamoDB (the table in deployment.EnvTable; without
// it, a store local to this instance, with a warning); usage records the
// table does not take spilled to the SQS queue of deployment.EnvUsageQueue
// (the rollup drains it); EMF metrics on metricsOut.
//
// Every config accepted from SSM is stored in the table as the last good
// one. A cold start whose SSM parameters do not validate (or cannot be
// read) boots on that stored config, logs why and emits the
// ConfigReloadErrors metric; it fails only when no good config was ever
// stored. A key reference that does not resolve skips that key (logged,
// ProviderKeyErrors metric, listed in /healthz) and is retried every
// keyRetryPeriods refresh periods while the rest serves.
func NewLambdaHandler(ctx context.Context, env LambdaEnv, log *slog.Logger, metricsOut io.Writer) (*LambdaGateway, error) {
	return newLambdaGateway(ctx, env, log, metricsOut, nil)
}

// newLambdaGateway is NewLambdaHandler with extra components (tests).
func newLambdaGateway(ctx context.Context, env LambdaEnv, log *slog.Logger, metricsOut io.Writer, extra []Component) (*LambdaGateway, error) {
	emf := &metrics.EMF{W: metricsOut, Stage: env.Stage}
	// The Function URL answers CORS preflights and adds the CORS headers.
	bo := BuildOptions{Logger: log, Metrics: emf, ExternalCORS: true, ConfigPath: env.ConfigPath, extra: extra}
	// One AWS config for every client (loading it reads the environment
	// and the shared config files: once per cold start, not per client).
	var awsCfg aws.Config
	var err error
	if env.Table != "" || env.ConfigPath != "" || env.UsageQueue != "" {
		if awsCfg, err = awsconfig.LoadDefaultConfig(ctx); err != nil {
			return nil, fmt.Errorf("aws config: %w", err)
		}
	}
	// The state and spill clients are made while SSM is read (the cold
	// start's one network wait); the gateway is built once both are there.
	var st store.Store
	ready := make(chan struct{})
	go func() {
		defer close(ready)
		if env.Table == "" {
			// In memory, not a file at a fixed path: two local runs of the
			// bootstrap (lambdainvoke, tests) must not share or lock one file.
			log.Warn(deployment.EnvTable + " is not set: breaker, key and usage state stay in this instance's memory")
			st = embedded.OpenMemory()
		} else {
			st = dynamo.New(dynamodb.NewFromConfig(awsCfg), env.Table)
		}
		if env.UsageQueue != "" {
			bo.Spill = sqsspill.New(sqs.NewFromConfig(awsCfg), env.UsageQueue)
		} else {
			log.Warn(deployment.EnvUsageQueue + " is not set: usage records the table does not take are lost")
		}
	}()
	if env.ConfigPath == "" {
		cfg, err := LoadConfig(env.ConfigFile)
		<-ready
		if err != nil {
			return nil, err
		}
		g, err := Build(ctx, cfg, st, bo)
		if err != nil {
			return nil, err
		}
		return &LambdaGateway{Handler: g.Handler, Gateway: g}, nil
	}
	// Storing the booted config as the last good one is the cold start's
	// only store call; nothing served needs it, so it runs in the
	// background (Flush waits for it).
	var boot sync.WaitGroup
	var booted atomic.Pointer[Gateway] // set by Boot; OnError may run on another goroutine
	loader := &ssmconfig.Loader{API: ssm.NewFromConfig(awsCfg), Path: env.ConfigPath, Refresh: env.Refresh, Log: log,
		OnError: func(err error) {
			emf.Count(deployment.MetricConfigReloadErrors, 1)
			if g := booted.Load(); g != nil {
				g.ReloadFailed(err) // /healthz (admin) shows the last one
			}
		},
		LastGood:   &ssmconfig.LastGood{Store: readyStore{ready, &st}},
		Background: func(f func()) { boot.Go(f) }}
	bo.ResolveKey = func(ctx context.Context, ref config.KeyRef) (string, bool, error) {
		return loader.ResolveKey(ctx, ref, os.Getenv)
	}
	var g *Gateway
	_, err = loader.Boot(ctx, func(ctx context.Context, cfg *config.Config) error {
		<-ready
		built, err := Build(ctx, cfg, st, bo)
		g = built
		if built != nil {
			booted.Store(built)
		}
		return err
	})
	if err != nil {
		<-ready
		return nil, err
	}
	rh := &refreshing{g: g, loader: loader, keyRetry: keyRetryPeriods * env.Refresh}
	rh.appliedAt.Store(time.Now().UnixNano())
	g.add(part{name: "ssm refresher", flush: rh.wait, close: rh.close})
	g.add(part{name: "last good config", flush: func(ctx context.Context) error { return waitGroup(ctx, &boot) }})
	return &LambdaGateway{Handler: rh, Gateway: g}, nil
}

// readyStore is the table for the last good config before its client is
// made: each call waits until ready is closed, then uses *st.
type readyStore struct {
	ready <-chan struct{}
	st    *store.Store
}

func (r readyStore) Get(ctx context.Context, k store.Key) (store.Item, bool, error) {
	<-r.ready
	return (*r.st).Get(ctx, k)
}

func (r readyStore) Put(ctx context.Context, it store.Item, c store.Cond) (store.Item, error) {
	<-r.ready
	return (*r.st).Put(ctx, it, c)
}

// waitGroup waits for wg, or until ctx ends.
func waitGroup(ctx context.Context, wg *sync.WaitGroup) error {
	done := make(chan struct{})
	go func() { wg.Wait(); close(done) }()
	select {
	case <-done:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// keyRetryPeriods is how many refresh periods pass between two retries of
// key references that did not resolve (1 minute by default).
const keyRetryPeriods = 4

// refreshing serves requests and, when the config is older than the
// refresh period, reloads it in the background (stale-while-revalidate):
// no request waits on SSM. It hands every config it loads to the app
// (Gateway.Reload). While some keys of the config in force did not
// resolve, it re-applies the config every keyRetry (so a key parameter
// created after the fact comes into service without a config edit). As a
// component, its Flush waits for a reload under way and its Close stops
// new ones.
type refreshing struct {
	g         *Gateway
	loader    *ssmconfig.Loader
	keyRetry  time.Duration
	appliedAt atomic.Int64 // unix nanoseconds of the last applied config

	mu     sync.Mutex
	closed bool
	done   chan struct{} // closed when the last reload started has ended
}

func (rh *refreshing) apply(ctx context.Context, cfg *config.Config) error {
	if err := rh.g.Reload(ctx, cfg); err != nil {
		return err
	}
	rh.appliedAt.Store(time.Now().UnixNano())
	return nil
}

func (rh *refreshing) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if rh.loader.Stale() {
		rh.mu.Lock()
		if rh.closed {
			rh.loader.Loaded()
		} else {
			done := make(chan struct{})
			rh.done = done
			go func() {
				defer close(done)
				defer rh.loader.Loaded()
				ctx := context.Background()
				rh.loader.Reload(ctx, rh.apply)
				if rh.g.Handler.UnresolvedKeys() > 0 && time.Since(time.Unix(0, rh.appliedAt.Load())) >= rh.keyRetry {
					rh.apply(ctx, rh.g.Config())
				}
			}()
		}
		rh.mu.Unlock()
	}
	rh.g.Handler.ServeHTTP(w, r)
}

// wait waits for the reload under way (Stale lets one run at a time), or
// until ctx ends.
func (rh *refreshing) wait(ctx context.Context) error {
	rh.mu.Lock()
	done := rh.done
	rh.mu.Unlock()
	if done == nil {
		return nil
	}
	select {
	case <-done:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// close stops new reloads.
func (rh *refreshing) close() error {
	rh.mu.Lock()
	rh.closed = true
	rh.mu.Unlock()
	return nil
}
