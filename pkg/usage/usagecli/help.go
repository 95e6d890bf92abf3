package usagecli

import (
	"github.com/llmgw/llmgw/pkg/cmdhelp"
	"github.com/llmgw/llmgw/pkg/deployment"
)

// EnvStage names the Stage dimension of the rollup's metrics on Lambda.
const EnvStage = deployment.EnvStage

// ConfigEnv documents how the usage commands find the gateway's config
// (LoadConfig), for their -h.
var ConfigEnv = []cmdhelp.Env{
	{Name: EnvConfigFile, About: "the gateway's config file, when -config is not given"},
	{Name: EnvConfigPath, About: "else the SSM path of the config parameters (e.g. /llmgw/prod/config/; while they do not validate, the gateway's last good config in the store is used and the error reported); neither: the demo config"},
	{Name: EnvTable, About: "the DynamoDB table of -store dynamodb when -table is not given (else " + DefaultTable + ")"},
}

// RollupHelp is the -h of functions/rollup.
var RollupHelp = cmdhelp.Command{
	Name:  "rollup",
	Short: "aggregate usage records into per-team, per-day rollups",
	Synopsis: `go run ./functions/rollup [-from DAY] [-to DAY] [-config FILE] [-store embedded|dynamodb] [-state FILE] [-table NAME] [-spill FILE]
go run ./functions/rollup -mode hourly|daily [...]
bootstrap        (on AWS Lambda, invoked by EventBridge schedules)`,
	About: `Recomputes, for every team of the config (and "anonymous"), each day's
rollup from that team-day's usage records: requests, tokens, cost, errors and
fallbacks, per route and per tag. It is idempotent (a day is recomputed, never
added to) and reads one partition per team-day, never the whole table. It
prints a JSON summary of the run.

Every run first drains the usage spill - records the gateway could not
write to the store - into the store (idempotently: a record already there is
not counted twice), and recomputes from the earliest day it drained: locally
the spill file (-spill, default usage-spill.jsonl next to -state), on Lambda
the SQS queue LLMGW_USAGE_QUEUE (at most half the invocation's time).`,
	Modes: `Local: one run over -from..-to (default yesterday and today), or over the
window of -mode. The store is the embedded file of a local gateway (-state;
stop the gateway first, it holds the file) or DynamoDB (-store dynamodb).

Lambda: when AWS_LAMBDA_RUNTIME_API is set, flags are ignored; each
invocation is one scheduled run. The event is the rule's constant input,
{"mode":"hourly"} or {"mode":"daily"}, or a scheduled-event envelope, whose
mode comes from the rule's name ("daily" in it: daily, else hourly) and whose
"time" is the run's clock. Hourly recomputes today and yesterday; daily (the
close) the two days before today. The table is LLMGW_TABLE (required), the
config comes from LLMGW_CONFIG_FILE or LLMGW_CONFIG_PATH, and a failed run
returns its error (EventBridge retries) and emits the RollupFailures metric.
A config from SSM that does not validate (a bad edit) does not stop it: the
error is logged, ConfigReloadErrors is emitted (the config-reload alarm), and
the last good config the gateway stored in the table is used.`,
	Env: append([]cmdhelp.Env{
		{Name: "AWS_LAMBDA_RUNTIME_API", About: "set by AWS Lambda: serve scheduled invocations instead of running once"},
		{Name: EnvStage, About: "Lambda: the Stage dimension of the RollupFailures metric"},
		{Name: deployment.EnvUsageQueue, About: "Lambda: the URL of the SQS queue of spilled usage records, drained before every run"},
	}, ConfigEnv...),
	Examples: `go run ./functions/rollup -config gw.yaml                             # yesterday and today, .llmgw/state.db
go run ./functions/rollup -config gw.yaml -from 2026-11-01 -to 2026-11-30
go run ./functions/rollup -store dynamodb -table llmgw-prod -mode daily`,
}
