package app

import (
	"slices"
	"testing"
	"time"

	"github.com/llmgw/llmgw/pkg/deployment"
)

// TestLambdaEnvReadsExactlyTheContract records the variables the gateway
// reads on Lambda: the ones the stack sets (deployment.GatewayEnv, which
// infra's contract test checks against the synthesized function) plus the
// local config-file override, and nothing else.
func TestLambdaEnvReadsExactlyTheContract(t *testing.T) {
	vals := map[string]string{
		deployment.EnvTable: "t", deployment.EnvConfigPath: "/p/", deployment.EnvConfigRefresh: "3s", deployment.EnvStage: "s",
		deployment.EnvUsageQueue: "https://sqs/q", deployment.EnvFunctionURLAuthType: "AWS_IAM",
	}
	var read []string
	e, err := LambdaEnvFrom(func(k string) string { read = append(read, k); return vals[k] })
	if err != nil {
		t.Fatal(err)
	}
	want := append(deployment.GatewayEnv(), deployment.EnvConfigFile)
	slices.Sort(read)
	slices.Sort(want)
	if !slices.Equal(slices.Compact(read), want) {
		t.Errorf("the gateway reads %v; the contract is %v", read, want)
	}
	if e != (LambdaEnv{ConfigPath: "/p/", Refresh: 3 * time.Second, Stage: "s", Table: "t", UsageQueue: "https://sqs/q", IAMAuth: true}) {
		t.Errorf("env = %+v", e)
	}
	e, _ = LambdaEnvFrom(func(string) string { return "" })
	if e.Refresh != deployment.DefaultConfigRefresh {
		t.Errorf("default refresh = %v", e.Refresh)
	}
	if _, err := LambdaEnvFrom(func(k string) string { return map[string]string{deployment.EnvConfigRefresh: "-1s"}[k] }); err == nil {
		t.Error("negative refresh accepted")
	}
}
