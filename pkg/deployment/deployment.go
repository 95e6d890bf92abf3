// Package deployment is the contract between the CDK stack (infra/) and the
// code it deploys: the environment variables each function reads, the SSM
// parameter paths, the table's attribute names, the CloudWatch metric names
// the alarms watch, and the defaults both sides must agree on. Both sides
// import these names; no other package spells them out.
//
// It is a leaf: standard library only, constants and tiny functions, so
// every command links it for free.
package deployment

import (
	"strconv"
	"time"
)

// Environment variables. The stack sets exactly [GatewayEnv] on the gateway
// function and [RollupEnv] on the rollup function.
const (
	// EnvTable is the DynamoDB table of shared state, usage and the last
	// good config.
	EnvTable = "LLMGW_TABLE"
	// EnvConfigPath is the SSM path of the config parameters, with a
	// trailing slash (see [ConfigPath]).
	EnvConfigPath = "LLMGW_CONFIG_PATH"
	// EnvConfigRefresh is how old the gateway's config may get before a
	// request starts a reload (a Go duration; default [DefaultConfigRefresh]).
	EnvConfigRefresh = "LLMGW_CONFIG_REFRESH"
	// EnvStage is the stage name, the Stage dimension of every metric.
	EnvStage = "LLMGW_STAGE"
	// EnvUsageQueue is the URL of the SQS queue that keeps usage records
	// the table did not take: the gateway sends to it, the rollup drains
	// it into the table before every run.
	EnvUsageQueue = "LLMGW_USAGE_QUEUE"
	// EnvFunctionURLAuthType is the auth type of the gateway's Function
	// URL, NONE or AWS_IAM. With AWS_IAM the gateway trusts the caller
	// Lambda verified (the event's requestContext.authorizer.iam) and maps
	// it to a team by the config's iam_callers; otherwise it never reads
	// that context.
	EnvFunctionURLAuthType = "LLMGW_FUNCTION_URL_AUTH_TYPE"
	// EnvConfigFile is a config file read instead of SSM: local runs and
	// tests only, never set by the stack.
	EnvConfigFile = "LLMGW_CONFIG_FILE"
	// EnvKey is a team API key for the commands that call a running
	// gateway (scripts/costs -url); never set by the stack.
	EnvKey = "LLMGW_KEY"
)

// GatewayEnv returns the variables the stack sets on the gateway function,
// which are the ones it reads on Lambda (besides [EnvConfigFile], a local
// override).
func GatewayEnv() []string {
	return []string{EnvTable, EnvConfigPath, EnvConfigRefresh, EnvStage, EnvUsageQueue, EnvFunctionURLAuthType}
}

// The Go runtime's own variables the stack sets on the gateway function
// (GoRuntimeEnv): read by the runtime at process start, before any package
// is initialized, so no code of ours can set them in time.
const (
	EnvGOGC       = "GOGC"
	EnvGOMEMLIMIT = "GOMEMLIMIT"
)

// GatewayGCPercent is the gateway function's GOGC. With Go's default
// (100) the first collection is due at a 4 MB heap, and the AWS SDK
// packages' own initialization (their schema tables) leaves about 3.5 MB
// before main runs: every cold start collected once while starting, a
// third of its start-up time on the benchmark's machine. At 400 the first
// collection is due at 16 MB, after the function is ready; the steady
// state heap stays within 5x the live heap, bounded by GOMEMLIMIT.
const GatewayGCPercent = 400

// DefaultGatewayMemoryMB is the gateway function's memory size when the
// stack's context does not set one (gatewayMemorySize).
const DefaultGatewayMemoryMB = 1024

// GoRuntimeEnv returns the Go runtime variables the stack sets on the
// gateway function of memoryMB MB: GOGC at [GatewayGCPercent], and a soft
// memory limit at three quarters of the function's memory (GOMEMLIMIT, in
// MiB), so a large live heap (whole upstream bodies) is collected before
// the function runs out of memory whatever GOGC allows.
func GoRuntimeEnv(memoryMB int) map[string]string {
	return map[string]string{
		EnvGOGC:       strconv.Itoa(GatewayGCPercent),
		EnvGOMEMLIMIT: strconv.Itoa(memoryMB*3/4) + "MiB",
	}
}

// FunctionURLAuthIAM is the EnvFunctionURLAuthType value of a Function URL
// that verifies SigV4-signed callers.
const FunctionURLAuthIAM = "AWS_IAM"

// RollupEnv returns the variables the stack sets on the rollup function,
// which are the ones it reads on Lambda (besides [EnvConfigFile]).
func RollupEnv() []string {
	return []string{EnvTable, EnvConfigPath, EnvStage, EnvUsageQueue}
}

// SSM Parameter Store layout.
const (
	// ParameterRoot is the first component of every parameter of the
	// gateway: /llmgw/<stage>/...
	ParameterRoot = "/llmgw/"
	// ConfigDir is the folder of a stage's config parameters.
	ConfigDir = "config/"
	// KeysDir is the folder of a stage's provider keys (SecureString).
	KeysDir = "keys/"
)

// ConfigPath is the SSM path of a stage's config parameters, with a
// trailing slash: /llmgw/<stage>/config/. Every parameter under it is read
// and merged in name order.
func ConfigPath(stage string) string { return ParameterRoot + stage + "/" + ConfigDir }

// KeysPath is the SSM path under which a stage's provider keys are
// SecureString parameters: /llmgw/<stage>/keys/. The gateway may read and
// decrypt only parameters below it.
func KeysPath(stage string) string { return ParameterRoot + stage + "/" + KeysDir }

// Attribute names of the single table. The stack declares the key schema
// and TTL with them; pkg/store builds items with them.
const (
	// AttrPK is the partition key (type S).
	AttrPK = "pk"
	// AttrSK is the sort key (type S).
	AttrSK = "sk"
	// AttrTTL is the expiry (type N, unix seconds): the table's TTL
	// attribute.
	AttrTTL = "ttl"
	// AttrVersion is the item version (type N).
	AttrVersion = "ver"
	// AttrData is the opaque payload (type B).
	AttrData = "data"
)

// Defaults shared by the stack, the runtime and the local commands.
const (
	// DefaultConfigRefresh is the gateway's config refresh period when
	// [EnvConfigRefresh] is unset, and the stack's default.
	DefaultConfigRefresh = 15 * time.Second
	// DefaultTable is the table local runs and commands use when neither a
	// flag nor [EnvTable] names one (the stack names its own).
	DefaultTable = "llmgw"
	// DefaultStateFile is the embedded store file of local runs, shared by
	// the gateway and the usage commands.
	DefaultStateFile = ".llmgw/state.db"
	// SpillFileName is the usage spill file of local runs, in the folder
	// of the state file: usage records the store did not take, as JSON
	// lines, drained by the gateway and the rollup command.
	SpillFileName = "usage-spill.jsonl"
)

// CloudWatch metrics: the functions emit them (Embedded Metric Format) and
// the stack's alarms and dashboard read them.
const (
	// MetricNamespace is the namespace of every metric.
	MetricNamespace = "LLMGateway"
	// MetricRequests counts requests.
	MetricRequests = "Requests"
	// MetricFallbacks counts requests served by a fallback target.
	MetricFallbacks = "Fallbacks"
	// MetricErrors5xx counts requests that ended in a 5xx.
	MetricErrors5xx = "Errors5xx"
	// MetricTTFT is the time to first token in milliseconds.
	MetricTTFT = "TimeToFirstTokenMs"
	// MetricCostUSD is the cost of requests.
	MetricCostUSD = "CostUSD"
	// MetricBreakerOpen counts breaker openings.
	MetricBreakerOpen = "BreakerOpen"
	// MetricConfigReloadErrors counts config loads that failed (a reload,
	// or a cold start that booted on the last good config); the
	// config-reload alarm watches it.
	MetricConfigReloadErrors = "ConfigReloadErrors"
	// MetricProviderKeyErrors counts provider key references that could
	// not be resolved (the key is skipped; the rest of the config serves).
	MetricProviderKeyErrors = "ProviderKeyErrors"
	// MetricMalformedFrames counts upstream stream frames that were not
	// valid JSON (skipped, never forwarded).
	MetricMalformedFrames = "MalformedFrames"
	// MetricRollupFailures counts failed rollups.
	MetricRollupFailures = "RollupFailures"
	// MetricAttemptErrors counts failed upstream attempts by target and
	// error category (the dashboard's per-route view).
	MetricAttemptErrors = "AttemptErrors"
	// MetricAttemptTTFT is a streamed attempt's time to first token in
	// milliseconds, by target.
	MetricAttemptTTFT = "AttemptTimeToFirstTokenMs"
)

// CORSMethods returns the methods a page may use on the gateway: the
// Access-Control-Allow-Methods of the gateway's preflight answers (local
// mode) and the Function URL's AllowMethods (the stack). server.cors in the
// config says which origins and headers.
func CORSMethods() []string { return []string{"GET", "HEAD", "POST"} }

// CORSExposeHeaders returns the response headers a page may read besides
// the CORS-safelisted ones: the gateway's request id and trace headers,
// and the retry hints the SDKs act on. They are the
// Access-Control-Expose-Headers of the gateway's responses (local mode)
// and the Function URL's ExposeHeaders (the stack).
func CORSExposeHeaders() []string {
	return []string{
		"x-request-id", "x-gateway-provider", "x-gateway-attempts", "x-gateway-fallback-depth",
		"x-gateway-error-category", "x-gateway-tag", "x-should-retry", "retry-after",
	}
}
