package app

import (
	"flag"
	"io"

	"github.com/llmgw/llmgw/pkg/cmdhelp"
	"github.com/llmgw/llmgw/pkg/deployment"
)

// The environment the gateway reads, named here for its help (the names
// are read in lambda.go and store.go).
const (
	envLambdaRuntime       = "AWS_LAMBDA_RUNTIME_API"
	envConfigPath          = deployment.EnvConfigPath
	envConfigFile          = deployment.EnvConfigFile
	envConfigRefresh       = deployment.EnvConfigRefresh
	envStage               = deployment.EnvStage
	envFunctionURLAuthType = deployment.EnvFunctionURLAuthType
	envTable               = deployment.EnvTable
)

// GatewayHelp is the -h of functions/gateway.
var GatewayHelp = cmdhelp.Command{
	Name:  "gateway",
	Short: "the llmgw LLM gateway: one OpenAI-compatible endpoint, failover across providers",
	Synopsis: `go run ./functions/gateway [-config FILE] [-addr HOST:PORT] [-store embedded|dynamodb] [-state FILE] [-table NAME]
bootstrap        (on AWS Lambda: no flags, configured by its environment)`,
	About: `Serves, in front of the providers and routes of its config, these endpoints
(POST unless marked GET):

  /v1/chat/completions        OpenAI Chat Completions, streaming and not (also /chat/completions)
  /v1/responses               OpenAI Responses: Codex CLI, the AI SDK, the Agents SDK (also /responses)
  /v1/messages                Anthropic Messages: Claude Code, the Anthropic SDKs
  /v1/messages/count_tokens   Anthropic token counting
  /v1/embeddings              OpenAI embeddings (also /embeddings)
  GET /v1/models              the routes (logical models); GET /v1/models/{id} one of them
  GET /v1/usage               usage and cost per team and day (?from=&to=, an admin's &team=)
  GET /healthz                every target's breaker and key state; "degraded" when a
                              provider has no usable key (HEAD works wherever GET does)

Bedrock Runtime paths (/model/{id}/converse, ...) come with the Bedrock
ingress: see docs/bedrock-clients.md.

Each route is an ordered chain of provider/model targets, with retries,
timeouts, circuit breakers and failover before the first token. With teams
configured, every call needs a team key (scripts/newkey) and is admitted
against the team's limits and budgets; usage is recorded per request.`,
	Modes: `Local (the default): an HTTP server on -addr. The config is -config FILE
(YAML or JSON; re-read within 2s when it changes) or, without it, the built-in
demo config (fake providers: no keys, no network). Without teams every caller
is served as "anonymous", on loopback addresses only. Breaker, key and usage
state live in -store: an embedded file (-state) or DynamoDB (-table).

Lambda: when AWS_LAMBDA_RUNTIME_API is set (the Lambda runtime sets it) flags
are ignored and the gateway serves a Function URL with InvokeMode
RESPONSE_STREAM. The config comes from SSM Parameter Store (every parameter
under LLMGW_CONFIG_PATH, merged in name order, refreshed every
LLMGW_CONFIG_REFRESH) or from LLMGW_CONFIG_FILE; state from DynamoDB
(LLMGW_TABLE).`,
	Env: []cmdhelp.Env{
		{Name: envLambdaRuntime, About: "set by AWS Lambda: run as a Lambda function instead of a local server"},
		{Name: envConfigPath, About: "Lambda: the SSM path of the config parameters, e.g. /llmgw/prod/config/"},
		{Name: envConfigFile, About: "Lambda: a config file instead of SSM (tests, scripts/lambdainvoke); neither: the demo config"},
		{Name: envConfigRefresh, About: "Lambda: how old the SSM config may get before it is reloaded (default 15s)"},
		{Name: envStage, About: "Lambda: the Stage dimension of the CloudWatch (EMF) metrics"},
		{Name: envFunctionURLAuthType, About: "Lambda: the Function URL's auth type, NONE (team keys) or AWS_IAM (the verified caller,\nmapped to a team by iam_callers); set by the stack"},
		{Name: envTable, About: "Lambda: the DynamoDB table of breaker, key and usage state (unset: this instance's memory);\nlocally, the table of -store dynamodb when -table is empty"},
		{Name: "provider keys", About: "the variables the config names in providers.*.keys ({env: OPENAI_API_KEY}); keys are never in the config"},
		{Name: "AWS_REGION, AWS_ENDPOINT_URL_*, credentials", About: "the AWS SDK's usual environment, for DynamoDB, SSM and Bedrock"},
	},
	Examples: `go run ./functions/gateway                           # the demo config on 127.0.0.1:8080
go run ./functions/gateway -config gw.yaml -addr 0.0.0.0:8080
go run ./functions/gateway -config gw.yaml -store dynamodb -table llmgw   # AWS_ENDPOINT_URL_DYNAMODB for a local DynamoDB
scripts/invoke-local.sh                              # the Lambda bootstrap against an emulated runtime`,
}

// ParseLocalFlags parses the gateway's local-mode flags. On -h it prints
// GatewayHelp on out and returns flag.ErrHelp (exit 0, see
// cmdhelp.ExitCode).
func ParseLocalFlags(args []string, out io.Writer) (LocalOptions, error) {
	var o LocalOptions
	fs := flag.NewFlagSet("gateway", flag.ContinueOnError)
	registerLocalFlags(fs, &o)
	if err := GatewayHelp.Parse(fs, args, out); err != nil {
		return o, err
	}
	if fs.NArg() > 0 {
		return o, cmdhelp.Usagef("unexpected argument %q (run gateway -h for help)", fs.Arg(0))
	}
	return o, nil
}

func registerLocalFlags(fs *flag.FlagSet, o *LocalOptions) {
	fs.StringVar(&o.ConfigPath, "config", "", "config file (YAML or JSON), re-read when it changes; empty runs the built-in demo config")
	fs.StringVar(&o.Addr, "addr", "127.0.0.1:8080", "listen address; without teams in the config the gateway serves on loopback only (127.0.0.1, same port)")
	fs.StringVar(&o.Store.Kind, "store", "embedded", "state store: embedded (a local file, no AWS) or dynamodb (AWS_ENDPOINT_URL_DYNAMODB, AWS_REGION, credentials chain)")
	fs.StringVar(&o.Store.StatePath, "state", DefaultStatePath, "embedded store file")
	fs.StringVar(&o.Store.Table, "table", "llmgw", "DynamoDB table (created if missing)")
}
