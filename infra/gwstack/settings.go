package gwstack

import (
	"fmt"
	"os"
	"regexp"
	"strconv"
	"strings"
	"time"

	"github.com/aws/aws-cdk-go/awscdk/v2/awslogs"
	"github.com/aws/constructs-go/constructs/v10"

	"github.com/llmgw/llmgw/pkg/deployment"
)

// Context keys understood by the stack. Every key is optional; pass values
// with `cdk deploy -c key=value` or in cdk.json under "context".
const (
	CtxStage                      = "stage"
	CtxStackName                  = "stackName"
	CtxAssetDir                   = "assetDir"
	CtxRemovalPolicy              = "removalPolicy"
	CtxGatewayMemorySize          = "gatewayMemorySize"
	CtxGatewayTimeout             = "gatewayTimeout"
	CtxGatewayReservedConcurrency = "gatewayReservedConcurrency"
	CtxRollupMemorySize           = "rollupMemorySize"
	CtxRollupTimeout              = "rollupTimeout"
	CtxFunctionURLAuthType        = "functionUrlAuthType"
	CtxLogRetentionDays           = "logRetentionDays"
	CtxConfigRefresh              = "configRefresh"
	CtxSeedConfigFile             = "seedConfigFile"
	CtxBedrockRegions             = "bedrockRegions"
	CtxBedrockModels              = "bedrockModels"
	CtxGuardrailIDs               = "guardrailIds"
	CtxAlarmTopicARN              = "alarmTopicArn"
	CtxFallbackRateThreshold      = "fallbackRateThreshold"
	CtxErrorRateThreshold         = "errorRateThreshold"
	CtxAlarmMinRequests           = "alarmMinRequests"
	CtxNag                        = "nag"
	CtxTableKMSKey                = "tableKmsKey"
	CtxTrafficShifting            = "trafficShifting"
	CtxLatencyThreshold           = "latencyThresholdMs"
)

// TableKMSCreate, as the tableKmsKey context value, makes the stack create
// a customer-managed KMS key (rotated yearly) for the table.
const TableKMSCreate = "create"

// CtxCORSAllowedOrigins is refused when it lists origins: CORS is
// server.cors in the seed config, which configures both the gateway and its
// Function URL.
const CtxCORSAllowedOrigins = "corsAllowedOrigins"

// Removal policies accepted by the removalPolicy context key.
const (
	RemovalRetain  = "retain"
	RemovalDestroy = "destroy"
)

// Function URL auth types accepted by the functionUrlAuthType context key.
const (
	AuthNone   = "NONE"
	AuthAWSIAM = "AWS_IAM"
)

// Settings is everything the stack can be told from outside. It is read once,
// from CDK context, by FromContext; the stack never reads context itself.
type Settings struct {
	// Stage names the deployment ("dev", "prod"); it appears in the stack
	// name, SSM paths, metric dimensions and resource names.
	Stage string
	// StackName defaults to "llmgw-<stage>".
	StackName string
	// Account and Region pin the stack environment; empty means
	// environment-agnostic (resolved by CloudFormation at deploy time).
	Account, Region string
	// AssetDir holds gateway/bootstrap and rollup/bootstrap.
	AssetDir string
	// RemovalPolicy is RemovalRetain or RemovalDestroy; it applies to the
	// table and the log groups.
	RemovalPolicy string
	// GatewayMemoryMB is the gateway function memory size.
	GatewayMemoryMB int
	// GatewayTimeout is the gateway function timeout (streams can be long).
	GatewayTimeout time.Duration
	// GatewayReservedConcurrency caps (and reserves) gateway concurrency:
	// the blast-radius limit of a public URL (default
	// DefaultGatewayReservedConcurrency; the context value "none" means no
	// reservation, 0 stops all traffic).
	GatewayReservedConcurrency *int
	// RollupMemoryMB is the rollup function memory size.
	RollupMemoryMB int
	// RollupTimeout is the rollup function timeout.
	RollupTimeout time.Duration
	// FunctionURLAuthType is AuthNone (the gateway checks team keys) or
	// AuthAWSIAM (callers must SigV4-sign requests).
	FunctionURLAuthType string
	// LogRetentionDays is the retention of both functions' log groups.
	LogRetentionDays int
	// ConfigRefresh is passed to the gateway as deployment.EnvConfigRefresh.
	ConfigRefresh string
	// SeedConfig is the raw YAML seeded under the config path.
	SeedConfig []byte
	// BedrockRegions are extra regions the gateway may call Bedrock in, on
	// top of the stack region and the regions of the seed config.
	BedrockRegions []string
	// BedrockModels are extra model ids or ARNs the gateway may invoke
	// (models that SSM overrides add), in every Bedrock region; "*" keeps
	// the wide grant (every foundation model and inference profile of the
	// Bedrock regions). Without it, the seed config's models are granted
	// when it names all of them (see grantBedrock).
	BedrockModels []string
	// GuardrailIDs are extra guardrail ids (in the stack region) or ARNs
	// the gateway may apply, on top of the seed config's moderation
	// policies' guardrails.
	GuardrailIDs []string
	// AlarmTopicARN, when set, receives alarm and OK notifications.
	AlarmTopicARN string
	// FallbackRateThresholdPct alarms when more than this percentage of
	// requests in 5 minutes were served by a fallback target.
	FallbackRateThresholdPct float64
	// ErrorRateThresholdPct alarms when more than this percentage of
	// requests in 5 minutes ended in a 5xx.
	ErrorRateThresholdPct float64
	// AlarmMinRequests is the number of requests in 5 minutes below which
	// the rate alarms do not fire (one fallback out of two requests is noise).
	AlarmMinRequests int
	// Nag runs the cdk-nag AwsSolutions checks during synthesis of the app.
	Nag bool
	// TableKMSKey chooses the table's encryption key: "" for the
	// AWS-managed key, TableKMSCreate for a customer-managed key the stack
	// creates, or the ARN of an existing customer-managed key. The table
	// holds usage records and, when a route enables the response cache,
	// cached completions.
	TableKMSKey string
	// TrafficShifting is how a deploy moves the gateway's live alias to
	// the new version: TrafficCanary, TrafficLinear or TrafficAllAtOnce
	// (development stages); see addSafeDeploy.
	TrafficShifting string
	// OTelCollectorLayerARN, when set, adds that OpenTelemetry collector
	// layer to the gateway function (CtxOTelCollectorLayerARN).
	OTelCollectorLayerARN string
	// LatencyThresholdMs alarms (and, during a deploy, rolls back) when the
	// gateway's p99 time to first token over 5 minutes exceeds it, with at
	// least AlarmMinRequests requests.
	LatencyThresholdMs int
}

// DefaultGatewayReservedConcurrency is the gateway's reserved concurrency
// unless the gatewayReservedConcurrency context says otherwise: at most
// 100 concurrent requests (and streams), a cap on what a leaked key or a
// runaway client can spend at once, leaving the rest of a default account
// limit (1,000) to other functions.
const DefaultGatewayReservedConcurrency = 100

// DefaultSettings returns the settings used when no context is given.
func DefaultSettings() Settings {
	reserved := DefaultGatewayReservedConcurrency
	return Settings{
		GatewayReservedConcurrency: &reserved,
		Stage:                      "dev",
		AssetDir:                   "build/lambda",
		RemovalPolicy:              RemovalRetain,
		GatewayMemoryMB:            deployment.DefaultGatewayMemoryMB,
		GatewayTimeout:             15 * time.Minute,
		RollupMemoryMB:             512,
		RollupTimeout:              5 * time.Minute,
		FunctionURLAuthType:        AuthNone,
		LogRetentionDays:           30,
		ConfigRefresh:              deployment.DefaultConfigRefresh.String(),
		FallbackRateThresholdPct:   20,
		ErrorRateThresholdPct:      5,
		AlarmMinRequests:           10,
		Nag:                        true,
		TrafficShifting:            TrafficCanary,
		LatencyThresholdMs:         10000,
	}
}

// ConfigPath is the SSM path that holds the gateway configuration, with a
// trailing slash: "/llmgw/<stage>/config/".
func (s Settings) ConfigPath() string { return deployment.ConfigPath(s.Stage) }

// KeysPath is the SSM path under which operators create the provider API
// keys as SecureString parameters: "/llmgw/<stage>/keys/".
func (s Settings) KeysPath() string { return deployment.KeysPath(s.Stage) }

var stagePattern = regexp.MustCompile(`^[a-z][a-z0-9-]{0,19}$`)

var kmsKeyARN = regexp.MustCompile(`^arn:aws[a-z-]*:kms:[a-z0-9-]+:[0-9]{12}:key/[A-Za-z0-9-]+$`)

// FromContext reads the settings from the CDK context of node (normally the
// App), starting from DefaultSettings, and validates them. seedConfig is the
// default seed configuration; the seedConfigFile context key replaces it
// with a file read from disk.
func FromContext(node constructs.Node, seedConfig []byte) (Settings, error) {
	s := DefaultSettings()
	s.SeedConfig = seedConfig
	c := ctxReader{node: node}

	c.str(CtxStage, &s.Stage)
	c.str(CtxStackName, &s.StackName)
	c.str(CtxAssetDir, &s.AssetDir)
	c.str(CtxRemovalPolicy, &s.RemovalPolicy)
	s.RemovalPolicy = strings.ToLower(s.RemovalPolicy)
	c.integer(CtxGatewayMemorySize, &s.GatewayMemoryMB)
	c.duration(CtxGatewayTimeout, &s.GatewayTimeout)
	if v, ok := c.raw(CtxGatewayReservedConcurrency); ok && strings.EqualFold(v, "none") {
		s.GatewayReservedConcurrency = nil
	} else if ok && v != "" {
		n, err := strconv.Atoi(v)
		if err != nil {
			c.fail(CtxGatewayReservedConcurrency, v, "an integer")
		} else {
			s.GatewayReservedConcurrency = &n
		}
	}
	c.integer(CtxRollupMemorySize, &s.RollupMemoryMB)
	c.duration(CtxRollupTimeout, &s.RollupTimeout)
	c.str(CtxFunctionURLAuthType, &s.FunctionURLAuthType)
	s.FunctionURLAuthType = strings.ToUpper(s.FunctionURLAuthType)
	var origins []string
	if c.list(CtxCORSAllowedOrigins, &origins); len(origins) > 0 {
		c.errs = append(c.errs, CtxCORSAllowedOrigins+": no longer a context setting: set server.cors.allow_origins in the seed config ("+
			CtxSeedConfigFile+"), which configures both the gateway and its Function URL")
	}
	c.integer(CtxLogRetentionDays, &s.LogRetentionDays)
	c.str(CtxConfigRefresh, &s.ConfigRefresh)
	c.list(CtxBedrockRegions, &s.BedrockRegions)
	c.list(CtxBedrockModels, &s.BedrockModels)
	c.list(CtxGuardrailIDs, &s.GuardrailIDs)
	c.str(CtxAlarmTopicARN, &s.AlarmTopicARN)
	c.float(CtxFallbackRateThreshold, &s.FallbackRateThresholdPct)
	c.float(CtxErrorRateThreshold, &s.ErrorRateThresholdPct)
	c.integer(CtxAlarmMinRequests, &s.AlarmMinRequests)
	c.str(CtxTableKMSKey, &s.TableKMSKey)
	c.str(CtxTrafficShifting, &s.TrafficShifting)
	s.TrafficShifting = strings.ToLower(s.TrafficShifting)
	c.integer(CtxLatencyThreshold, &s.LatencyThresholdMs)
	c.str(CtxOTelCollectorLayerARN, &s.OTelCollectorLayerARN)
	if v, ok := c.raw(CtxNag); ok {
		b, err := strconv.ParseBool(v)
		if err != nil {
			c.fail(CtxNag, v, "true or false")
		}
		s.Nag = b
	}
	if v, ok := c.raw(CtxSeedConfigFile); ok && v != "" {
		b, err := os.ReadFile(v)
		if err != nil {
			c.errs = append(c.errs, fmt.Sprintf("%s: %v", CtxSeedConfigFile, err))
		}
		s.SeedConfig = b
	}
	if len(c.errs) > 0 {
		return s, fmt.Errorf("invalid CDK context: %s", strings.Join(c.errs, "; "))
	}
	return s, s.Validate()
}

// Validate checks the settings and fills in derived defaults (StackName).
func (s *Settings) Validate() error {
	var errs []string
	bad := func(format string, args ...any) { errs = append(errs, fmt.Sprintf(format, args...)) }
	if !stagePattern.MatchString(s.Stage) {
		bad("stage %q: use 1-20 lowercase letters, digits or '-', starting with a letter", s.Stage)
	}
	if s.StackName == "" {
		s.StackName = "llmgw-" + s.Stage
	}
	if err := validateOTelLayer(s.OTelCollectorLayerARN); err != nil {
		bad("%v", err)
	}
	if s.AssetDir == "" {
		bad("assetDir is empty")
	}
	if s.RemovalPolicy != RemovalRetain && s.RemovalPolicy != RemovalDestroy {
		bad("removalPolicy %q: use retain or destroy", s.RemovalPolicy)
	}
	if s.GatewayMemoryMB < 128 || s.GatewayMemoryMB > 10240 {
		bad("gatewayMemorySize %d: must be 128-10240 MB", s.GatewayMemoryMB)
	}
	if s.RollupMemoryMB < 128 || s.RollupMemoryMB > 10240 {
		bad("rollupMemorySize %d: must be 128-10240 MB", s.RollupMemoryMB)
	}
	for name, d := range map[string]time.Duration{CtxGatewayTimeout: s.GatewayTimeout, CtxRollupTimeout: s.RollupTimeout} {
		if d < time.Second || d > 15*time.Minute || d%time.Second != 0 {
			bad("%s %v: must be whole seconds between 1s and 15m", name, d)
		}
	}
	if s.GatewayReservedConcurrency != nil && *s.GatewayReservedConcurrency < 0 {
		bad("gatewayReservedConcurrency %d: must be >= 0 (0 stops all traffic)", *s.GatewayReservedConcurrency)
	}
	if s.FunctionURLAuthType != AuthNone && s.FunctionURLAuthType != AuthAWSIAM {
		bad("functionUrlAuthType %q: use NONE or AWS_IAM", s.FunctionURLAuthType)
	}
	if _, err := s.Retention(); err != nil {
		bad("%v", err)
	}
	if d, err := time.ParseDuration(s.ConfigRefresh); err != nil || d <= 0 {
		bad("configRefresh %q: must be a positive Go duration such as 15s", s.ConfigRefresh)
	}
	if len(s.SeedConfig) == 0 {
		bad("seed config is empty")
	}
	if s.FallbackRateThresholdPct <= 0 || s.FallbackRateThresholdPct > 100 {
		bad("fallbackRateThreshold %v: must be a percentage in (0, 100]", s.FallbackRateThresholdPct)
	}
	if s.ErrorRateThresholdPct <= 0 || s.ErrorRateThresholdPct > 100 {
		bad("errorRateThreshold %v: must be a percentage in (0, 100]", s.ErrorRateThresholdPct)
	}
	if s.AlarmMinRequests < 1 {
		bad("alarmMinRequests %d: must be >= 1", s.AlarmMinRequests)
	}
	if s.AlarmTopicARN != "" && !strings.HasPrefix(s.AlarmTopicARN, "arn:") {
		bad("alarmTopicArn %q: not an ARN", s.AlarmTopicARN)
	}
	if k := s.TableKMSKey; k != "" && k != TableKMSCreate && !kmsKeyARN.MatchString(k) {
		bad("tableKmsKey %q: use %q or the ARN of a KMS key (arn:aws:kms:<region>:<account>:key/<id>)", k, TableKMSCreate)
	}
	if _, ok := trafficShiftings[s.TrafficShifting]; !ok {
		bad("trafficShifting %q: use %s, %s or %s", s.TrafficShifting, TrafficCanary, TrafficLinear, TrafficAllAtOnce)
	}
	if s.LatencyThresholdMs < 1 {
		bad("latencyThresholdMs %d: must be >= 1", s.LatencyThresholdMs)
	}
	if len(errs) > 0 {
		return fmt.Errorf("invalid settings: %s", strings.Join(errs, "; "))
	}
	return nil
}

// retentionDays maps the day counts CloudWatch Logs accepts to the CDK enum.
var retentionDays = map[int]awslogs.RetentionDays{
	1: awslogs.RetentionDays_ONE_DAY, 3: awslogs.RetentionDays_THREE_DAYS,
	5: awslogs.RetentionDays_FIVE_DAYS, 7: awslogs.RetentionDays_ONE_WEEK,
	14: awslogs.RetentionDays_TWO_WEEKS, 30: awslogs.RetentionDays_ONE_MONTH,
	60: awslogs.RetentionDays_TWO_MONTHS, 90: awslogs.RetentionDays_THREE_MONTHS,
	120: awslogs.RetentionDays_FOUR_MONTHS, 150: awslogs.RetentionDays_FIVE_MONTHS,
	180: awslogs.RetentionDays_SIX_MONTHS, 365: awslogs.RetentionDays_ONE_YEAR,
	400: awslogs.RetentionDays_THIRTEEN_MONTHS, 545: awslogs.RetentionDays_EIGHTEEN_MONTHS,
	731: awslogs.RetentionDays_TWO_YEARS, 1096: awslogs.RetentionDays_THREE_YEARS,
	1827: awslogs.RetentionDays_FIVE_YEARS, 2192: awslogs.RetentionDays_SIX_YEARS,
	2557: awslogs.RetentionDays_SEVEN_YEARS, 2922: awslogs.RetentionDays_EIGHT_YEARS,
	3288: awslogs.RetentionDays_NINE_YEARS, 3653: awslogs.RetentionDays_TEN_YEARS,
}

// Retention returns LogRetentionDays as a CDK RetentionDays value.
func (s Settings) Retention() (awslogs.RetentionDays, error) {
	r, ok := retentionDays[s.LogRetentionDays]
	if !ok {
		return "", fmt.Errorf("logRetentionDays %d: CloudWatch Logs accepts 1, 3, 5, 7, 14, 30, 60, 90, 120, 150, 180, 365, 400, 545, 731, 1096, 1827, 2192, 2557, 2922, 3288 or 3653", s.LogRetentionDays)
	}
	return r, nil
}
