// Command rollup aggregates usage records into per-team per-day rollups
// (package usage, Roller).
//
// Locally:
//
//	go run ./functions/rollup -from 2026-11-01 -to 2026-11-30             # embedded store, .llmgw/state.db
//	go run ./functions/rollup -state FILE -config gateway.yaml            # yesterday and today
//	go run ./functions/rollup -store dynamodb -table T -mode daily
//
// On Lambda (AWS_LAMBDA_RUNTIME_API set) it serves EventBridge schedules.
// The event is either the rule's constant input, {"mode":"hourly"} or
// {"mode":"daily"} (what the stack's rules send), or a plain scheduled-event
// envelope ({"detail-type":"Scheduled Event","resources":[rule ARN],...}),
// whose mode is taken from the rule's name ("daily" in it: daily, else
// hourly) and whose "time" is the run's clock. Hourly recomputes today and
// yesterday; daily (the close) the two days before today. The table is
// $LLMGW_TABLE; the config comes from loadConfig. -h prints all of this
// (usagecli.RollupHelp).
//
// Every run first drains the usage spill into the table - on Lambda the SQS
// queue $LLMGW_USAGE_QUEUE, locally the spill file next to the state
// (-spill) - and recomputes from the earliest day it drained, so the totals
// are exact once the store is back.
package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"os"
	"strings"
	"time"

	"github.com/aws/aws-lambda-go/lambda"
	awsconfig "github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/service/sqs"

	"github.com/llmgw/llmgw/pkg/cmdhelp"
	"github.com/llmgw/llmgw/pkg/config"
	"github.com/llmgw/llmgw/pkg/deployment"
	"github.com/llmgw/llmgw/pkg/metrics"
	"github.com/llmgw/llmgw/pkg/store"
	"github.com/llmgw/llmgw/pkg/store/dynamo"
	"github.com/llmgw/llmgw/pkg/usage"
	"github.com/llmgw/llmgw/pkg/usage/sqsspill"
	"github.com/llmgw/llmgw/pkg/usage/usagecli"
)

// loadConfig is THE place the rollup gets its config from (teams to roll
// up, usage.ttl): $LLMGW_CONFIG_FILE, else the SSM path $LLMGW_CONFIG_PATH
// (pkg/ssmconfig), else the demo config; the environment is read through
// getenv. From SSM it is the gateway's config: when the parameters do not
// validate (a bad edit) or cannot be read, the error is logged and passed to
// onError, and the last good config the gateway stored in st is used, so
// cost reports go on during the incident the edit was made for.
func loadConfig(ctx context.Context, path string, getenv func(string) string, st usagecli.ConfigStore, log *slog.Logger, onError func(error)) (*config.Config, error) {
	return usagecli.LoadConfigWith(ctx, usagecli.ConfigOptions{Path: path, Getenv: getenv, LastGood: st, Log: log, OnError: onError})
}

func main() {
	log := slog.New(slog.NewJSONHandler(os.Stderr, nil))
	if os.Getenv("AWS_LAMBDA_RUNTIME_API") != "" {
		lambda.Start(lambdaHandler(log, os.Getenv))
		return
	}
	if err := runLocal(context.Background(), os.Args[1:], log); cmdhelp.ExitCode(err) != 0 {
		fmt.Fprintln(os.Stderr, "rollup:", err)
		os.Exit(cmdhelp.ExitCode(err))
	}
}

func runLocal(ctx context.Context, args []string, log *slog.Logger) error {
	fs := flag.NewFlagSet("rollup", flag.ContinueOnError)
	var sf usagecli.StoreFlags
	sf.Register(fs)
	cfgPath := fs.String("config", "", "gateway config file (its teams are rolled up); default $"+deployment.EnvConfigFile+", $"+deployment.EnvConfigPath+" (SSM) or the demo config")
	from := fs.String("from", "", "first UTC day YYYY-MM-DD (default: yesterday)")
	to := fs.String("to", "", "last UTC day YYYY-MM-DD, included (default: today)")
	mode := fs.String("mode", "", "hourly or daily: the scheduled window instead of -from/-to")
	spillPath := fs.String("spill", "", "usage spill file to drain into the store first (default: "+deployment.SpillFileName+" next to -state)")
	if err := usagecli.RollupHelp.Parse(fs, args, os.Stdout); err != nil {
		return err // flag.ErrHelp after -h: exit 0
	}
	if *spillPath == "" {
		*spillPath = usage.DefaultSpillFile(sf.State)
	}
	st, err := sf.Open(ctx)
	if err != nil {
		return err
	}
	defer st.Close()
	cfg, err := loadConfig(ctx, *cfgPath, os.Getenv, st, log, nil)
	if err != nil {
		return err
	}
	if len(cfg.Teams) == 0 {
		log.Warn("the config has no teams: only anonymous usage is rolled up; pass the gateway's -config FILE")
	}
	r := usage.NewRoller(st, func() *config.Config { return cfg })
	r.Log = log
	now := time.Now()
	var lo, hi time.Time
	if *mode != "" {
		if lo, hi, err = usage.Mode(*mode).Window(now); err != nil {
			return err
		}
	} else {
		lo, hi, err = dayRange(*from, *to, now)
		if err != nil {
			return err
		}
	}
	drained, derr := drain(ctx, st, cfg, usage.NewFileSpill(*spillPath), log)
	if !drained.Earliest.IsZero() && drained.Earliest.Before(lo) {
		lo = drained.Earliest
	}
	sum, err := r.Run(ctx, lo, hi)
	out, _ := json.MarshalIndent(sum, "", "  ")
	fmt.Println(string(out))
	return errors.Join(derr, err)
}

// drain writes the spilled usage records into st before a rollup (see the
// package comment).
func drain(ctx context.Context, st store.Putter, cfg *config.Config, spill usage.Spill, log *slog.Logger) (usage.DrainSummary, error) {
	rec := usage.NewRecorder(st, func() *config.Config { return cfg }, log)
	rec.Spill = spill
	sum, err := rec.Drain(ctx)
	if err != nil {
		log.Error("usage spill not fully drained; the rest waits for the next run", slog.Int("drained", sum.Records), slog.Any("error", err))
		return sum, fmt.Errorf("rollup: drain the usage spill: %w", err)
	}
	if sum.Records > 0 {
		log.Info("usage spill drained", slog.Int("records", sum.Records), slog.String("earliest", store.Day(sum.Earliest)))
	}
	return sum, nil
}

func dayRange(from, to string, now time.Time) (lo, hi time.Time, err error) {
	if from == "" {
		from = "yesterday"
	}
	if to == "" {
		to = "today"
	}
	if lo, err = usagecli.ParseDay(from, now); err != nil {
		return lo, hi, fmt.Errorf("-from: %w", err)
	}
	if hi, err = usagecli.ParseDay(to, now); err != nil {
		return lo, hi, fmt.Errorf("-to: %w", err)
	}
	if hi.Before(lo) {
		return lo, hi, fmt.Errorf("-to %s is before -from %s", store.Day(hi), store.Day(lo))
	}
	return lo, hi, nil
}

// event is what EventBridge delivers: the rule's constant input (mode), or
// the scheduled-event envelope (time, resources, detail).
type event struct {
	Mode       string          `json:"mode"`
	DetailType string          `json:"detail-type"`
	Time       time.Time       `json:"time"`
	Resources  []string        `json:"resources"`
	Detail     json.RawMessage `json:"detail"`
}

// parseEvent returns the mode and the reference time of a scheduled run.
func parseEvent(raw json.RawMessage, now time.Time) (usage.Mode, time.Time, error) {
	var ev event
	if len(raw) > 0 && string(raw) != "null" {
		if err := json.Unmarshal(raw, &ev); err != nil {
			return "", now, fmt.Errorf("rollup: event is not a JSON object: %w", err)
		}
	}
	at := now
	if !ev.Time.IsZero() {
		at = ev.Time
	}
	if ev.Mode == "" && len(ev.Detail) > 0 {
		var d struct {
			Mode string `json:"mode"`
		}
		_ = json.Unmarshal(ev.Detail, &d)
		ev.Mode = d.Mode
	}
	if ev.Mode == "" {
		ev.Mode = string(usage.Hourly)
		for _, r := range ev.Resources {
			if name := r[strings.LastIndex(r, "/")+1:]; strings.Contains(strings.ToLower(name), "daily") {
				ev.Mode = string(usage.Daily)
			}
		}
	}
	m := usage.Mode(strings.ToLower(ev.Mode))
	if _, _, err := m.Window(at); err != nil {
		return "", at, err
	}
	return m, at, nil
}

// lambdaHandler runs one scheduled rollup per invocation. A failed run
// returns its error (EventBridge retries the async invocation) and emits
// the RollupFailures metric that the stack alarms on. The environment is
// read through getenv: the variables of deployment.RollupEnv (and the
// local config-file override).
func lambdaHandler(log *slog.Logger, getenv func(string) string) func(ctx context.Context, raw json.RawMessage) (usage.RunSummary, error) {
	emf := &metrics.EMF{W: os.Stdout, Stage: getenv(deployment.EnvStage)}
	var st store.Store
	var queue usage.Spill
	return func(ctx context.Context, raw json.RawMessage) (usage.RunSummary, error) {
		sum, err := func() (usage.RunSummary, error) {
			mode, at, err := parseEvent(raw, time.Now())
			if err != nil {
				return usage.RunSummary{}, err
			}
			if st == nil {
				table := getenv(deployment.EnvTable)
				if table == "" {
					return usage.RunSummary{}, errors.New("rollup: " + deployment.EnvTable + " is not set")
				}
				client, err := dynamo.LoadClient(ctx)
				if err != nil {
					return usage.RunSummary{}, err
				}
				st = dynamo.New(client, table)
			}
			cfg, err := loadConfig(ctx, "", getenv, st, log, func(error) {
				emf.Count(deployment.MetricConfigReloadErrors, 1) // the config-reload alarm
			})
			if err != nil {
				return usage.RunSummary{}, err
			}
			from, to, _ := mode.Window(at)
			var derr error
			if url := getenv(deployment.EnvUsageQueue); url != "" {
				if queue == nil {
					awsCfg, err := awsconfig.LoadDefaultConfig(ctx)
					if err != nil {
						return usage.RunSummary{}, fmt.Errorf("rollup: aws config: %w", err)
					}
					queue = sqsspill.New(sqs.NewFromConfig(awsCfg), url)
				}
				// Half the invocation's time at most: the rollup needs the rest.
				dctx, cancel := drainContext(ctx)
				drained, err := drain(dctx, st, cfg, queue, log)
				cancel()
				derr = err
				if !drained.Earliest.IsZero() && drained.Earliest.Before(from) {
					from = drained.Earliest
				}
			}
			r := usage.NewRoller(st, func() *config.Config { return cfg })
			r.Log = log
			if d, ok := ctx.Deadline(); ok {
				r.QueryTimeout = max(time.Until(d)-5*time.Second, time.Second)
			}
			log.Info("rollup", slog.String("mode", string(mode)), slog.String("from", store.Day(from)), slog.String("to", store.Day(to)))
			sum, err := r.Run(ctx, from, to)
			return sum, errors.Join(derr, err)
		}()
		if err != nil {
			emf.Count(deployment.MetricRollupFailures, float64(max(sum.Failed, 1)))
			log.Error("rollup failed", slog.Any("error", err), slog.Any("summary", sum))
			return sum, err
		}
		log.Info("rollup done", slog.Any("summary", sum))
		return sum, nil
	}
}

// drainContext bounds a drain to half of ctx's remaining time (no bound
// without a deadline).
func drainContext(ctx context.Context) (context.Context, context.CancelFunc) {
	d, ok := ctx.Deadline()
	if !ok {
		return context.WithCancel(ctx)
	}
	return context.WithTimeout(ctx, time.Until(d)/2)
}
