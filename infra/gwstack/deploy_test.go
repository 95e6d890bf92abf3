package gwstack

import (
	"testing"

	"github.com/aws/aws-cdk-go/awscdk/v2/assertions"
	"github.com/aws/jsii-runtime-go"
)

// TestSafeDeploy: the Function URL invokes the live alias, which points at
// the function's published version; a CodeDeploy deployment group shifts
// the alias to a new version as a canary (by default) and stops and rolls
// back on the 5xx-rate, function-error-rate and latency alarms.
func TestSafeDeploy(t *testing.T) {
	f := get(t, "default")
	fn, alias := f.logicalID(f.g.GatewayFn), f.logicalID(f.g.Alias)
	var version string // the logical ID ends with a hash of the code
	for id, r := range f.resources("AWS::Lambda::Version") {
		version = id
		if got := flatten(r["Properties"].(map[string]interface{})["FunctionName"]); got != "${"+fn+"}" {
			t.Errorf("the version publishes %s, want the gateway", got)
		}
	}
	group, app := f.logicalID(f.g.Deployment), f.logicalID(f.g.Deployment.Application())
	f.count(t, "AWS::Lambda::Alias", 1)
	f.count(t, "AWS::Lambda::Version", 1)
	f.resource(t, "AWS::Lambda::Alias", map[string]interface{}{
		"Properties": map[string]interface{}{
			"Name":            LiveAlias,
			"FunctionName":    map[string]interface{}{"Ref": fn},
			"FunctionVersion": map[string]interface{}{"Fn::GetAtt": []interface{}{version, "Version"}},
			"Description":     assertions.Match_AnyValue(),
		},
		// CloudFormation hands an alias update to CodeDeploy.
		"UpdatePolicy": map[string]interface{}{"CodeDeployLambdaAliasUpdate": map[string]interface{}{
			"ApplicationName":     map[string]interface{}{"Ref": app},
			"DeploymentGroupName": map[string]interface{}{"Ref": group},
		}},
	})
	f.resource(t, "AWS::Lambda::Url", map[string]interface{}{
		"Properties": assertions.Match_ObjectLike(&map[string]interface{}{"Qualifier": LiveAlias}),
		"DependsOn":  []interface{}{alias},
	})
	f.props(t, "AWS::CodeDeploy::Application", map[string]interface{}{"ComputePlatform": "Lambda"})
	alarms := []interface{}{}
	for _, a := range []string{f.logicalID(f.g.errorRateAlarm), f.logicalID(f.g.DeployAlarms[1]), f.logicalID(f.g.DeployAlarms[2])} {
		alarms = append(alarms, map[string]interface{}{"Name": map[string]interface{}{"Ref": a}})
	}
	f.props(t, "AWS::CodeDeploy::DeploymentGroup", map[string]interface{}{
		"ApplicationName":      map[string]interface{}{"Ref": app},
		"DeploymentConfigName": "CodeDeployDefault.LambdaCanary10Percent10Minutes",
		"DeploymentStyle":      map[string]interface{}{"DeploymentOption": "WITH_TRAFFIC_CONTROL", "DeploymentType": "BLUE_GREEN"},
		"AlarmConfiguration":   map[string]interface{}{"Enabled": true, "Alarms": alarms},
		"AutoRollbackConfiguration": map[string]interface{}{
			"Enabled": true,
			"Events":  []interface{}{"DEPLOYMENT_FAILURE", "DEPLOYMENT_STOP_ON_REQUEST", "DEPLOYMENT_STOP_ON_ALARM"},
		},
	})
	// The alarms a deploy is judged by.
	f.props(t, "AWS::CloudWatch::Alarm", map[string]interface{}{
		"AlarmName":          "llmgw-dev-latency",
		"Threshold":          10000,
		"ComparisonOperator": "GreaterThanThreshold",
		"Metrics": assertions.Match_ArrayWith(&[]interface{}{
			assertions.Match_ObjectLike(&map[string]interface{}{"Expression": "IF(requests >= 10, FILL(ttft, 0), 0)"}),
			assertions.Match_ObjectLike(&map[string]interface{}{"Id": "ttft", "MetricStat": assertions.Match_ObjectLike(&map[string]interface{}{
				"Metric": assertions.Match_ObjectLike(&map[string]interface{}{"Namespace": "LLMGateway", "MetricName": MetricTTFT}),
				"Stat":   "p99",
			})}),
		}),
	})
	f.props(t, "AWS::CloudWatch::Alarm", map[string]interface{}{
		"AlarmName": "llmgw-dev-function-errors",
		"Threshold": 5,
		"Metrics": assertions.Match_ArrayWith(&[]interface{}{
			assertions.Match_ObjectLike(&map[string]interface{}{"Id": "errors", "MetricStat": assertions.Match_ObjectLike(&map[string]interface{}{
				"Metric": assertions.Match_ObjectLike(&map[string]interface{}{
					"Namespace":  "AWS/Lambda",
					"MetricName": "Errors",
					"Dimensions": assertions.Match_ArrayWith(&[]interface{}{map[string]interface{}{
						"Name": "Resource", "Value": assertions.Match_AnyValue(),
					}}),
				}),
			})}),
		}),
	})
	// CodeDeploy's role may read the deploy alarms and move the alias,
	// nothing else (no managed policy: TestNoWildcardActionsOrResources).
	for _, st := range f.bySid(t, "GatewayDeploymentRole", "ShiftLiveAlias") {
		if got := resourcesOf(st); len(got) != 2 || got[0] != "${"+fn+".Arn}" || got[1] != "${"+fn+".Arn}:"+LiveAlias {
			t.Errorf("ShiftLiveAlias on %v", got)
		}
	}
	for _, st := range f.bySid(t, "GatewayDeploymentRole", "ReadDeployAlarms") {
		if got := resourcesOf(st); len(got) != 3 {
			t.Errorf("ReadDeployAlarms on %v, want the 3 deploy alarms", got)
		}
	}
	f.output(t, "GatewayDeploymentGroup", map[string]interface{}{"Value": map[string]interface{}{"Ref": group}})

	// A development stage deploys all at once, with the same alias, URL and
	// alarms.
	dev := get(t, "allatonce")
	dev.props(t, "AWS::CodeDeploy::DeploymentGroup", map[string]interface{}{
		"DeploymentConfigName": "CodeDeployDefault.LambdaAllAtOnce",
		"AlarmConfiguration":   assertions.Match_ObjectLike(&map[string]interface{}{"Enabled": true}),
	})
	dev.props(t, "AWS::Lambda::Url", map[string]interface{}{"Qualifier": LiveAlias, "InvokeMode": "RESPONSE_STREAM", "AuthType": "NONE"})

	// Every strategy maps to CodeDeploy's predefined configuration.
	for name, want := range map[string]string{
		TrafficCanary:    "CodeDeployDefault.LambdaCanary10Percent10Minutes",
		TrafficLinear:    "CodeDeployDefault.LambdaLinear10PercentEvery1Minute",
		TrafficAllAtOnce: "CodeDeployDefault.LambdaAllAtOnce",
	} {
		if got := *trafficShiftings[name]().DeploymentConfigName(); got != want {
			t.Errorf("%s: deployment config %s, want %s", name, got, want)
		}
	}
}

// TestFunctionsDependOnTheirPoliciesOnly: each function waits for its
// role's default policy (DependsOn); the role itself is ordered by the
// Role property's GetAtt, so a DependsOn on it is redundant (cfn-lint
// W3005).
func TestFunctionsDependOnTheirPoliciesOnly(t *testing.T) {
	f := get(t, "default")
	for _, p := range []struct{ fn, policy string }{
		{f.logicalID(f.g.GatewayFn), "GatewayRoleDefaultPolicy"},
		{f.logicalID(f.g.RollupFn), "RollupRoleDefaultPolicy"},
	} {
		r := f.json["Resources"].(map[string]interface{})[p.fn].(map[string]interface{})
		deps := asList(r["DependsOn"])
		if len(deps) != 1 || !matchPrefix(deps[0], p.policy) {
			t.Errorf("%s DependsOn %v, want only its %s", p.fn, deps, p.policy)
		}
	}
	check(t, func() {
		f.tmpl.HasResourceProperties(jsii.String("AWS::CloudWatch::Dashboard"), map[string]interface{}{"Tags": assertions.Match_Absent()})
	})
}

func matchPrefix(v interface{}, prefix string) bool {
	s, ok := v.(string)
	return ok && len(s) > len(prefix) && s[:len(prefix)] == prefix
}
