// Package gwstack defines the CloudFormation stack of the LLM gateway: the
// DynamoDB table, the usage spill queue, the gateway and rollup Lambda
// functions, the seeded SSM configuration, least-privilege IAM, alarms and
// a dashboard.
//
// The stack is built from a Settings value (see FromContext); the CDK app in
// infra/ and the synthesis tests both call New.
package gwstack

import (
	"fmt"
	"os"
	"path/filepath"

	"github.com/aws/aws-cdk-go/awscdk/v2"
	"github.com/aws/aws-cdk-go/awscdk/v2/awscloudwatch"
	"github.com/aws/aws-cdk-go/awscdk/v2/awscodedeploy"
	"github.com/aws/aws-cdk-go/awscdk/v2/awsdynamodb"
	"github.com/aws/aws-cdk-go/awscdk/v2/awsevents"
	"github.com/aws/aws-cdk-go/awscdk/v2/awseventstargets"
	"github.com/aws/aws-cdk-go/awscdk/v2/awsiam"
	"github.com/aws/aws-cdk-go/awscdk/v2/awskms"
	"github.com/aws/aws-cdk-go/awscdk/v2/awslambda"
	"github.com/aws/aws-cdk-go/awscdk/v2/awslogs"
	"github.com/aws/aws-cdk-go/awscdk/v2/awssqs"
	"github.com/aws/aws-cdk-go/awscdk/v2/awsssm"
	"github.com/aws/constructs-go/constructs/v10"
	"github.com/aws/jsii-runtime-go"

	"github.com/llmgw/llmgw/pkg/config"
	"github.com/llmgw/llmgw/pkg/deployment"
)

// Environment variable names the functions read (the deployment contract's).
const (
	EnvTable         = deployment.EnvTable
	EnvConfigPath    = deployment.EnvConfigPath
	EnvConfigRefresh = deployment.EnvConfigRefresh
	EnvStage         = deployment.EnvStage
	EnvUsageQueue    = deployment.EnvUsageQueue
)

// Gateway is the stack and the resources tests and callers may want to
// reach.
type Gateway struct {
	// Stack is the CloudFormation stack "llmgw-<stage>".
	Stack awscdk.Stack
	// Settings are the validated settings the stack was built from.
	Settings Settings
	// Table is the single DynamoDB table.
	Table awsdynamodb.Table
	// TableKey is the table's customer-managed KMS key (nil: the
	// AWS-managed key), see Settings.TableKMSKey.
	TableKey awskms.IKey
	// GatewayFn serves the OpenAI-compatible API behind URL.
	GatewayFn awslambda.Function
	// Alias is the gateway's live alias (LiveAlias): the version in
	// service, which the Function URL invokes.
	Alias awslambda.Alias
	// URL is the gateway Function URL (RESPONSE_STREAM), on Alias.
	URL awslambda.FunctionUrl
	// Deployment shifts Alias to a new version on a deploy
	// (Settings.TrafficShifting) and rolls back on DeployAlarms.
	Deployment awscodedeploy.LambdaDeploymentGroup
	// DeployAlarms are the alarms that stop and roll back a deploy: the 5xx
	// rate, the function error rate and the latency alarm.
	DeployAlarms []awscloudwatch.Alarm
	// RollupFn aggregates usage on a schedule.
	RollupFn awslambda.Function
	// UsageQueue keeps the usage records the table did not take
	// (deployment.EnvUsageQueue); UsageDLQ is its dead-letter queue.
	UsageQueue, UsageDLQ awssqs.Queue
	// GatewayLogs and RollupLogs are the functions' log groups.
	GatewayLogs, RollupLogs awslogs.LogGroup
	// ConfigParameters are the seeded configuration parameters, in name order.
	ConfigParameters []awsssm.StringParameter
	// Alarms are all alarms of the stack.
	Alarms []awscloudwatch.Alarm
	// Dashboard is the CloudWatch dashboard.
	Dashboard awscloudwatch.Dashboard

	gatewayRole, rollupRole awsiam.Role
	errorRateAlarm          awscloudwatch.Alarm
	configChunks            []ConfigChunk
	bedrockRegions          []string
	bedrockModels           []BedrockModel // the seed config's Bedrock targets' models
	mantleRegions           []string       // regions of the seed config's bedrock-mantle targets (MantleRegions)
	bedrockModelsComplete   bool           // every Bedrock target names its model
	guardrails              []Guardrail    // the seed config's guardrails
	cors                    config.CORS
}

// New defines the gateway stack in scope. It validates s (filling in
// defaults such as the stack name) and fails on an invalid seed config.
func New(scope constructs.Construct, s Settings) (*Gateway, error) {
	if err := s.Validate(); err != nil {
		return nil, err
	}
	for _, name := range []string{"gateway", "rollup"} {
		bin := filepath.Join(s.AssetDir, name, "bootstrap")
		if _, err := os.Stat(bin); err != nil {
			return nil, fmt.Errorf("lambda binary %s not found (run scripts/build-lambda.sh first, or set -c assetDir=...): %w", bin, err)
		}
	}
	rendered := RenderSeedConfig(s.SeedConfig, s.Stage)
	chunks, err := SplitConfig(rendered, MaxParameterBytes)
	if err != nil {
		return nil, err
	}
	regions, err := BedrockRegions(rendered)
	if err != nil {
		return nil, err
	}
	models, modelsComplete, err := BedrockModels(rendered)
	if err != nil {
		return nil, err
	}
	guardrails, err := Guardrails(rendered)
	if err != nil {
		return nil, err
	}
	mantle, err := MantleRegions(rendered)
	if err != nil {
		return nil, err
	}
	// The Function URL's CORS comes from the seeded config's server.cors,
	// read as the gateway reads it: one setting for both.
	cors, err := config.ParseCORS([]byte(rendered))
	if err != nil {
		return nil, fmt.Errorf("seed config: %w", err)
	}

	var env *awscdk.Environment
	if s.Account != "" || s.Region != "" {
		env = &awscdk.Environment{}
		if s.Account != "" {
			env.Account = jsii.String(s.Account)
		}
		if s.Region != "" {
			env.Region = jsii.String(s.Region)
		}
	}
	stack := awscdk.NewStack(scope, jsii.String(s.StackName), &awscdk.StackProps{
		Env:         env,
		Description: jsii.String(fmt.Sprintf("llmgw LLM gateway, stage %s", s.Stage)),
	})
	// Every resource that takes tags gets the stage tag. Dashboards have no
	// Tags property in CloudFormation (cfn-lint E3002), although the CDK
	// construct says it is taggable.
	awscdk.Tags_Of(stack).Add(jsii.String("llmgw:stage"), jsii.String(s.Stage), &awscdk.TagProps{
		ExcludeResourceTypes: jsii.Strings("AWS::CloudWatch::Dashboard"),
	})

	g := &Gateway{
		Stack:        stack,
		Settings:     s,
		configChunks: chunks,
		cors:         cors,

		bedrockModels:         models,
		mantleRegions:         mantle,
		bedrockModelsComplete: modelsComplete,
		guardrails:            guardrails,
	}
	// The stack region is always granted (a token when the stack is
	// environment-agnostic), plus the seed config's and context's regions.
	g.bedrockRegions = mergeRegions(*stack.Region(), regions, s.BedrockRegions)
	g.addTable()
	g.addUsageQueue()
	g.addConfig()
	g.addGateway()
	g.addRollup()
	g.grantUsageQueue()
	g.addAlarms()
	g.addQueueAlarms()
	g.addSafeDeploy()
	g.addDashboard()
	g.addOutputs()
	g.addNagSuppressions()
	g.dropRedundantRoleDependencies()
	return g, nil
}

// removalPolicy maps the settings value to the CDK enum.
func (g *Gateway) removalPolicy() awscdk.RemovalPolicy {
	if g.Settings.RemovalPolicy == RemovalDestroy {
		return awscdk.RemovalPolicy_DESTROY
	}
	return awscdk.RemovalPolicy_RETAIN
}

// addTable defines the single table: partition and sort key strings and the
// TTL attribute named by the deployment contract, on-demand, PITR, KMS
// encryption (the AWS-managed key, or a customer-managed one chosen by the
// tableKmsKey context). Retained tables also get deletion protection.
func (g *Gateway) addTable() {
	props := &awsdynamodb.TableProps{
		PartitionKey:        &awsdynamodb.Attribute{Name: jsii.String(deployment.AttrPK), Type: awsdynamodb.AttributeType_STRING},
		SortKey:             &awsdynamodb.Attribute{Name: jsii.String(deployment.AttrSK), Type: awsdynamodb.AttributeType_STRING},
		TimeToLiveAttribute: jsii.String(deployment.AttrTTL),
		BillingMode:         awsdynamodb.BillingMode_PAY_PER_REQUEST,
		PointInTimeRecoverySpecification: &awsdynamodb.PointInTimeRecoverySpecification{
			PointInTimeRecoveryEnabled: jsii.Bool(true),
		},
		Encryption:         awsdynamodb.TableEncryption_AWS_MANAGED,
		RemovalPolicy:      g.removalPolicy(),
		DeletionProtection: jsii.Bool(g.Settings.RemovalPolicy == RemovalRetain),
	}
	switch k := g.Settings.TableKMSKey; k {
	case "":
	case TableKMSCreate:
		g.TableKey = awskms.NewKey(g.Stack, jsii.String("TableKey"), &awskms.KeyProps{
			Description:       jsii.String("llmgw " + g.Settings.Stage + " table: usage records, shared state, cached completions"),
			EnableKeyRotation: jsii.Bool(true),
			RemovalPolicy:     g.removalPolicy(),
		})
	default:
		g.TableKey = awskms.Key_FromKeyArn(g.Stack, jsii.String("TableKey"), jsii.String(k))
	}
	if g.TableKey != nil {
		props.Encryption, props.EncryptionKey = awsdynamodb.TableEncryption_CUSTOMER_MANAGED, g.TableKey
	}
	g.Table = awsdynamodb.NewTable(g.Stack, jsii.String("Table"), props)
}

// addConfig seeds the configuration parameters under the config path.
// CloudFormation owns these parameters: a deploy resets them to the seed.
// Operator changes belong in extra parameters under the same path (they
// sort after "00-base*" and are merged last) or in seed-config.yaml.
func (g *Gateway) addConfig() {
	for _, c := range g.configChunks {
		p := awsssm.NewStringParameter(g.Stack, jsii.String("Config"+c.Name), &awsssm.StringParameterProps{
			ParameterName: jsii.String(g.Settings.ConfigPath() + c.Name),
			StringValue:   jsii.String(c.Value),
			Tier:          awsssm.ParameterTier_STANDARD,
			Description:   jsii.String("llmgw seed configuration (managed by CloudFormation; add overrides as separate parameters)"),
		})
		g.ConfigParameters = append(g.ConfigParameters, p)
	}
}

// newRole returns a role for a Lambda function with no managed policies:
// log writes are granted on the function's own log group only.
func (g *Gateway) newRole(id, description string, logs awslogs.LogGroup) awsiam.Role {
	role := awsiam.NewRole(g.Stack, jsii.String(id), &awsiam.RoleProps{
		AssumedBy:   awsiam.NewServicePrincipal(jsii.String("lambda.amazonaws.com"), nil),
		Description: jsii.String(description),
	})
	logs.GrantWrite(role)
	return role
}

// newLogGroup returns a log group with the configured retention.
func (g *Gateway) newLogGroup(id string) awslogs.LogGroup {
	retention, _ := g.Settings.Retention() // validated in New
	return awslogs.NewLogGroup(g.Stack, jsii.String(id), &awslogs.LogGroupProps{
		Retention:     retention,
		RemovalPolicy: g.removalPolicy(),
	})
}

// addGateway defines the gateway function, its live alias, the Function
// URL on the alias and its grants.
func (g *Gateway) addGateway() {
	s := g.Settings
	g.GatewayLogs = g.newLogGroup("GatewayLogs")
	role := g.newRole("GatewayRole", "llmgw gateway function ("+s.Stage+")", g.GatewayLogs)
	g.gatewayRole = role
	var reserved *float64
	if s.GatewayReservedConcurrency != nil {
		reserved = jsii.Number(float64(*s.GatewayReservedConcurrency))
	}
	g.GatewayFn = awslambda.NewFunction(g.Stack, jsii.String("Gateway"), &awslambda.FunctionProps{
		Description:                  jsii.String("llmgw gateway (" + s.Stage + "): OpenAI-compatible API with routing, fallbacks and budgets"),
		Runtime:                      awslambda.Runtime_PROVIDED_AL2023(),
		Architecture:                 awslambda.Architecture_ARM_64(),
		Handler:                      jsii.String("bootstrap"),
		Code:                         awslambda.Code_FromAsset(jsii.String(filepath.Join(s.AssetDir, "gateway")), nil),
		MemorySize:                   jsii.Number(float64(s.GatewayMemoryMB)),
		Timeout:                      awscdk.Duration_Seconds(jsii.Number(s.GatewayTimeout.Seconds())),
		ReservedConcurrentExecutions: reserved,
		Role:                         role,
		LogGroup:                     g.GatewayLogs,
		Environment:                  g.withGoRuntime(g.environment(deployment.GatewayEnv()), s.GatewayMemoryMB),
		Layers:                       g.otelLayers(),
	})

	opts := &awslambda.FunctionUrlOptions{
		AuthType:   awslambda.FunctionUrlAuthType_NONE,
		InvokeMode: awslambda.InvokeMode_RESPONSE_STREAM,
	}
	if s.FunctionURLAuthType == AuthAWSIAM {
		opts.AuthType = awslambda.FunctionUrlAuthType_AWS_IAM
	}
	opts.Cors = g.functionURLCORS()
	g.addLiveAlias()
	g.URL = g.Alias.AddFunctionUrl(opts)

	g.grantTable(role, gatewayTableActions)
	g.grantDeletes(role)
	g.grantConfigRead(role)
	g.grantProviderKeys(role)
	g.grantBedrock(role)
	g.grantGuardrails(role)
	g.grantBedrockMantle(role)
	g.grantXRay(role)
}

// environment returns the values of the named variables (a function's
// deployment.GatewayEnv or RollupEnv): exactly those, no more.
func (g *Gateway) environment(names []string) *map[string]*string {
	env := map[string]*string{}
	for _, n := range names {
		switch n {
		case deployment.EnvTable:
			env[n] = g.Table.TableName()
		case deployment.EnvConfigPath:
			env[n] = jsii.String(g.Settings.ConfigPath())
		case deployment.EnvConfigRefresh:
			env[n] = jsii.String(g.Settings.ConfigRefresh)
		case deployment.EnvStage:
			env[n] = jsii.String(g.Settings.Stage)
		case deployment.EnvUsageQueue:
			env[n] = g.UsageQueue.QueueUrl()
		case deployment.EnvFunctionURLAuthType:
			env[n] = jsii.String(g.Settings.FunctionURLAuthType)
		default:
			panic("gwstack: no value for the function variable " + n + " (add it to environment)")
		}
	}
	return &env
}

// withGoRuntime adds the Go runtime's variables of a function of memoryMB
// MB (deployment.GoRuntimeEnv) to env.
func (g *Gateway) withGoRuntime(env *map[string]*string, memoryMB int) *map[string]*string {
	for k, v := range deployment.GoRuntimeEnv(memoryMB) {
		(*env)[k] = jsii.String(v)
	}
	return env
}

// addRollup defines the rollup function and its two schedules.
func (g *Gateway) addRollup() {
	s := g.Settings
	g.RollupLogs = g.newLogGroup("RollupLogs")
	role := g.newRole("RollupRole", "llmgw usage rollup function ("+s.Stage+")", g.RollupLogs)
	g.rollupRole = role
	g.RollupFn = awslambda.NewFunction(g.Stack, jsii.String("Rollup"), &awslambda.FunctionProps{
		Description:  jsii.String("llmgw usage rollup (" + s.Stage + "): hourly aggregates and the daily close"),
		Runtime:      awslambda.Runtime_PROVIDED_AL2023(),
		Architecture: awslambda.Architecture_ARM_64(),
		Handler:      jsii.String("bootstrap"),
		Code:         awslambda.Code_FromAsset(jsii.String(filepath.Join(s.AssetDir, "rollup")), nil),
		MemorySize:   jsii.Number(float64(s.RollupMemoryMB)),
		Timeout:      awscdk.Duration_Seconds(jsii.Number(s.RollupTimeout.Seconds())),
		Role:         role,
		LogGroup:     g.RollupLogs,
		Environment:  g.environment(deployment.RollupEnv()),
	})
	g.grantTable(role, rollupTableActions)
	g.grantConfigRead(role)

	schedule := func(id, description string, sch awsevents.Schedule, mode string) {
		awsevents.NewRule(g.Stack, jsii.String(id), &awsevents.RuleProps{
			Description: jsii.String(description),
			Schedule:    sch,
			Targets: &[]awsevents.IRuleTarget{
				awseventstargets.NewLambdaFunction(g.RollupFn, &awseventstargets.LambdaFunctionProps{
					Event:         awsevents.RuleTargetInput_FromObject(map[string]string{"mode": mode}),
					RetryAttempts: jsii.Number(2),
					MaxEventAge:   awscdk.Duration_Hours(jsii.Number(1)),
				}),
			},
		})
	}
	schedule("RollupHourly", "llmgw hourly usage rollup ("+s.Stage+")",
		awsevents.Schedule_Rate(awscdk.Duration_Hours(jsii.Number(1))), "hourly")
	schedule("RollupDaily", "llmgw daily close at 00:15 UTC ("+s.Stage+")",
		awsevents.Schedule_Cron(&awsevents.CronOptions{Minute: jsii.String("15"), Hour: jsii.String("0")}), "daily")
}

// addOutputs exports what operators and clients need.
func (g *Gateway) addOutputs() {
	out := func(id, value, description string) {
		awscdk.NewCfnOutput(g.Stack, jsii.String(id), &awscdk.CfnOutputProps{
			Value:       jsii.String(value),
			Description: jsii.String(description),
		})
	}
	out("FunctionUrl", *g.URL.Url(), "Gateway base URL; OpenAI SDKs use <FunctionUrl>v1 as base_url")
	out("TableName", *g.Table.TableName(), "DynamoDB table ("+deployment.EnvTable+")")
	out("ConfigPath", g.Settings.ConfigPath(), "SSM path of the gateway configuration ("+deployment.EnvConfigPath+")")
	out("KeysPath", g.Settings.KeysPath(), "SSM path where operators create provider keys as SecureString parameters")
	out("GatewayFunctionName", *g.GatewayFn.FunctionName(), "Gateway Lambda function")
	out("GatewayAlias", *g.Alias.FunctionArn(), "Gateway alias in service ("+LiveAlias+"); the Function URL invokes it")
	out("GatewayDeploymentGroup", *g.Deployment.DeploymentGroupName(), "CodeDeploy deployment group that shifts "+LiveAlias+" ("+g.Settings.TrafficShifting+") and rolls back on alarms")
	out("GatewayLogGroup", *g.GatewayLogs.LogGroupName(), "Gateway logs (aws logs tail <name> --follow)")
	out("RollupLogGroup", *g.RollupLogs.LogGroupName(), "Rollup logs")
	out("UsageQueueUrl", *g.UsageQueue.QueueUrl(), "SQS queue of usage records the table did not take ("+deployment.EnvUsageQueue+"); the rollup drains it")
	out("DashboardName", *g.Dashboard.DashboardName(), "CloudWatch dashboard")
}

// functionURLCORS is the Function URL's CORS setting: the seeded config's
// server.cors (nil when it allows no origin), with the methods and exposed
// headers of the deployment contract. The Function URL answers preflights
// itself and adds the headers to responses; the function adds none
// (app.BuildOptions.ExternalCORS). Allowed headers are listed, never "*":
// a wildcard does not cover Authorization.
func (g *Gateway) functionURLCORS() *awslambda.FunctionUrlCorsOptions {
	c := g.cors
	if !c.Enabled() {
		return nil
	}
	var methods []awslambda.HttpMethod
	for _, m := range deployment.CORSMethods() {
		methods = append(methods, awslambda.HttpMethod(m))
	}
	return &awslambda.FunctionUrlCorsOptions{
		AllowedOrigins: jsii.Strings(c.AllowOrigins...),
		AllowedMethods: &methods,
		AllowedHeaders: jsii.Strings(c.AllowHeaders...),
		ExposedHeaders: jsii.Strings(deployment.CORSExposeHeaders()...),
		MaxAge:         awscdk.Duration_Seconds(jsii.Number(c.MaxAge.D().Seconds())),
	}
}
