package gwstack

import (
	"fmt"

	"github.com/aws/aws-cdk-go/awscdk/v2"
	"github.com/aws/aws-cdk-go/awscdk/v2/awscloudwatch"
	"github.com/aws/aws-cdk-go/awscdk/v2/awscodedeploy"
	"github.com/aws/aws-cdk-go/awscdk/v2/awsiam"
	"github.com/aws/aws-cdk-go/awscdk/v2/awslambda"
	"github.com/aws/aws-cdk-go/awscdk/v2/interfaces/interfacesawscloudwatch"
	"github.com/aws/jsii-runtime-go"
)

// Traffic shifting strategies of a deploy (the trafficShifting context
// key): how CodeDeploy moves the gateway's live alias from the version in
// service to the new one.
const (
	// TrafficCanary sends 10% of requests to the new version for 10
	// minutes, then all of them (the default).
	TrafficCanary = "canary"
	// TrafficLinear adds 10% of requests to the new version every minute.
	TrafficLinear = "linear"
	// TrafficAllAtOnce moves all requests at once: for development stages,
	// where a deploy should not wait.
	TrafficAllAtOnce = "all-at-once"
)

// trafficShiftings maps the strategies to CodeDeploy's predefined Lambda
// deployment configurations (functions: jsii calls must not run at init).
var trafficShiftings = map[string]func() awscodedeploy.ILambdaDeploymentConfig{
	TrafficCanary:    awscodedeploy.LambdaDeploymentConfig_CANARY_10PERCENT_10MINUTES,
	TrafficLinear:    awscodedeploy.LambdaDeploymentConfig_LINEAR_10PERCENT_EVERY_1MINUTE,
	TrafficAllAtOnce: awscodedeploy.LambdaDeploymentConfig_ALL_AT_ONCE,
}

// LiveAlias is the name of the gateway alias the Function URL invokes.
const LiveAlias = "live"

// addLiveAlias points the alias LiveAlias at the function's current
// version (a new version on every code or configuration change). Callers
// reach the gateway through the alias only (its Function URL), so a deploy
// can move traffic between versions gradually.
func (g *Gateway) addLiveAlias() {
	g.Alias = awslambda.NewAlias(g.Stack, jsii.String("GatewayLive"), &awslambda.AliasProps{
		AliasName:   jsii.String(LiveAlias),
		Version:     g.GatewayFn.CurrentVersion(),
		Description: jsii.String("the version in service; deploys shift it gradually (CodeDeploy, " + g.Settings.TrafficShifting + ")"),
	})
}

// addSafeDeploy defines the alarms a deploy is judged by and the CodeDeploy
// deployment group that shifts the live alias to a new version as
// Settings.TrafficShifting says, stops and rolls back when one of those
// alarms fires: the gateway's 5xx rate, the function's error rate (crashes,
// init failures, timeouts: requests that never produce a gateway metric)
// and the p99 time to first token. It runs after addAlarms and before
// addDashboard.
func (g *Gateway) addSafeDeploy() {
	s := g.Settings
	gt := awscloudwatch.ComparisonOperator_GREATER_THAN_THRESHOLD
	errors := awscloudwatch.NewMathExpression(&awscloudwatch.MathExpressionProps{
		Expression: jsii.String(fmt.Sprintf("IF(invocations >= %d, 100 * FILL(errors, 0) / invocations, 0)", s.AlarmMinRequests)),
		UsingMetrics: &map[string]awscloudwatch.IMetric{
			"invocations": g.Alias.MetricInvocations(&awscloudwatch.MetricOptions{Statistic: jsii.String("Sum"), Period: fiveMinutes()}),
			"errors":      g.Alias.MetricErrors(&awscloudwatch.MetricOptions{Statistic: jsii.String("Sum"), Period: fiveMinutes()}),
		},
		Label:  jsii.String("Function error rate (%)"),
		Period: fiveMinutes(),
	})
	fnErrors := g.alarm("FunctionErrorRateAlarm", "function-errors", errors, awscloudwatch.CreateAlarmOptions{
		AlarmDescription: jsii.String(fmt.Sprintf("More than %g%% of invocations of the gateway's %s alias in 5 minutes failed as Lambda errors (crash, init failure, timeout; with at least %d invocations). During a deploy this rolls the new version back.",
			s.ErrorRateThresholdPct, LiveAlias, s.AlarmMinRequests)),
		Threshold:          jsii.Number(s.ErrorRateThresholdPct),
		ComparisonOperator: gt,
	})
	ttft := awscloudwatch.NewMathExpression(&awscloudwatch.MathExpressionProps{
		Expression: jsii.String(fmt.Sprintf("IF(requests >= %d, FILL(ttft, 0), 0)", s.AlarmMinRequests)),
		UsingMetrics: &map[string]awscloudwatch.IMetric{
			"requests": g.metric(MetricRequests, "Sum", "Requests"),
			"ttft":     g.metric(MetricTTFT, "p99", "TTFT p99"),
		},
		Label:  jsii.String("Time to first token p99 (ms)"),
		Period: fiveMinutes(),
	})
	latency := g.alarm("LatencyAlarm", "latency", ttft, awscloudwatch.CreateAlarmOptions{
		AlarmDescription: jsii.String(fmt.Sprintf("The gateway's p99 time to first token over 5 minutes exceeded %d ms (with at least %d requests): providers or the gateway are slow. During a deploy this rolls the new version back.",
			s.LatencyThresholdMs, s.AlarmMinRequests)),
		Threshold:          jsii.Number(float64(s.LatencyThresholdMs)),
		ComparisonOperator: gt,
	})
	g.DeployAlarms = []awscloudwatch.Alarm{g.errorRateAlarm, fnErrors, latency}
	role := g.deploymentRole()
	alarms := make([]interfacesawscloudwatch.IAlarmRef, len(g.DeployAlarms))
	for i, a := range g.DeployAlarms {
		alarms[i] = a
	}
	g.Deployment = awscodedeploy.NewLambdaDeploymentGroup(g.Stack, jsii.String("GatewayDeployment"), &awscodedeploy.LambdaDeploymentGroupProps{
		Alias:            g.Alias,
		DeploymentConfig: trafficShiftings[s.TrafficShifting](),
		Alarms:           &alarms,
		AutoRollback: &awscodedeploy.AutoRollbackConfig{
			FailedDeployment:  jsii.Bool(true),
			StoppedDeployment: jsii.Bool(true),
			DeploymentInAlarm: jsii.Bool(true),
		},
		Role: role.WithoutPolicyUpdates(nil), // see deploymentRole
	})
	// Its policy before its first deploy (the role is ordered by the
	// ServiceRoleArn GetAtt already).
	g.Deployment.Node().AddDependency(role.Node().FindChild(jsii.String("DefaultPolicy")))
}

// deploymentRole is CodeDeploy's service role for the gateway's
// deployments: read the deploy alarms, read and move the live alias.
// The deployment group gets it without policy updates: the construct
// would attach the AWS-managed AWSCodeDeployRoleForLambdaLimited policy
// (these actions on every resource, plus SNS, S3 and hook invocations the
// stack does not use), so the role can do exactly this.
func (g *Gateway) deploymentRole() awsiam.Role {
	role := awsiam.NewRole(g.Stack, jsii.String("GatewayDeploymentRole"), &awsiam.RoleProps{
		AssumedBy:   awsiam.NewServicePrincipal(jsii.String("codedeploy.amazonaws.com"), nil),
		Description: jsii.String("CodeDeploy: shifts the llmgw gateway's " + LiveAlias + " alias (" + g.Settings.Stage + ")"),
	})
	var alarms []*string
	for _, a := range g.DeployAlarms {
		alarms = append(alarms, a.AlarmArn())
	}
	g.addStatement(role, "ReadDeployAlarms", []string{"cloudwatch:DescribeAlarms"}, alarms, nil)
	g.addStatement(role, "ShiftLiveAlias", []string{"lambda:GetAlias", "lambda:UpdateAlias", "lambda:GetProvisionedConcurrencyConfig"},
		// The alias's ARN from the function's, not a Ref to the alias: the
		// alias's update policy refers to the deployment group, which
		// depends on this policy.
		[]*string{g.GatewayFn.FunctionArn(), jsii.String(*g.GatewayFn.FunctionArn() + ":" + LiveAlias)}, nil)
	return role
}

// dropRedundantRoleDependencies removes each function's DependsOn on its
// role: the function's Role property (a GetAtt on the role) already orders
// them, and cfn-lint warns about the duplicate (W3005). The DependsOn on
// the role's default policy stays: nothing else makes CloudFormation
// attach the policy before the function starts. Runs after every grant
// (the default policies exist by then).
func (g *Gateway) dropRedundantRoleDependencies() {
	for _, p := range []struct {
		fn   awslambda.Function
		role awsiam.Role
	}{{g.GatewayFn, g.gatewayRole}, {g.RollupFn, g.rollupRole}} {
		var deps []*string
		if pol, ok := p.role.Node().TryFindChild(jsii.String("DefaultPolicy")).(awsiam.Policy); ok {
			deps = append(deps, g.Stack.GetLogicalId(pol.Node().DefaultChild().(awscdk.CfnElement)))
		}
		p.fn.Node().DefaultChild().(awscdk.CfnResource).AddOverride(jsii.String("DependsOn"), deps)
	}
}
