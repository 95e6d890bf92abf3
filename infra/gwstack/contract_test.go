package gwstack

import (
	"maps"
	"reflect"
	"slices"
	"testing"

	"github.com/llmgw/llmgw/pkg/deployment"
)

// TestDeploymentContract synthesizes the stack and checks it against
// pkg/deployment, the names the runtime reads: each function's environment
// is exactly the variables that function reads (deployment.GatewayEnv,
// RollupEnv; pkg/app and functions/rollup test that they read exactly
// those), with the values the runtime expects; the table's key schema and
// TTL attribute are exactly the contract's attribute names.
func TestDeploymentContract(t *testing.T) {
	for _, name := range []string{"default", "prod"} {
		f := get(t, name)
		s := f.g.Settings
		fns := f.resources("AWS::Lambda::Function")
		table := map[string]interface{}{"Ref": f.logicalID(f.g.Table)}
		for _, fn := range []struct {
			id   string
			want []string
		}{
			{f.logicalID(f.g.GatewayFn), append(deployment.GatewayEnv(), slices.Collect(maps.Keys(deployment.GoRuntimeEnv(s.GatewayMemoryMB)))...)},
			{f.logicalID(f.g.RollupFn), deployment.RollupEnv()},
		} {
			res, ok := fns[fn.id]
			if !ok {
				t.Fatalf("%s: function %s not in the template", name, fn.id)
			}
			vars, _ := res["Properties"].(map[string]interface{})["Environment"].(map[string]interface{})["Variables"].(map[string]interface{})
			var got []string
			for k := range vars {
				got = append(got, k)
			}
			slices.Sort(got)
			want := slices.Sorted(slices.Values(fn.want))
			if !slices.Equal(got, want) {
				t.Errorf("%s: %s environment = %v, the runtime reads %v", name, fn.id, got, want)
			}
			values := map[string]interface{}{
				deployment.EnvTable:         table,
				deployment.EnvConfigPath:    deployment.ConfigPath(s.Stage),
				deployment.EnvConfigRefresh: s.ConfigRefresh,
				deployment.EnvStage:         s.Stage,
				deployment.EnvUsageQueue:    map[string]interface{}{"Ref": f.logicalID(f.g.UsageQueue)},
				// The gateway trusts the request context's caller only
				// when this says AWS_IAM.
				deployment.EnvFunctionURLAuthType: s.FunctionURLAuthType,
			}
			for k, v := range deployment.GoRuntimeEnv(s.GatewayMemoryMB) {
				values[k] = v // read by the Go runtime (the gateway's cold start)
			}
			for _, k := range got {
				if !reflect.DeepEqual(vars[k], values[k]) {
					t.Errorf("%s: %s %s = %v, want %v", name, fn.id, k, vars[k], values[k])
				}
			}
		}

		tables := f.resources("AWS::DynamoDB::Table")
		if len(tables) != 1 {
			t.Fatalf("%s: %d tables", name, len(tables))
		}
		for _, res := range tables {
			p := res["Properties"].(map[string]interface{})
			wantKeys := []interface{}{
				map[string]interface{}{"AttributeName": deployment.AttrPK, "KeyType": "HASH"},
				map[string]interface{}{"AttributeName": deployment.AttrSK, "KeyType": "RANGE"},
			}
			if !reflect.DeepEqual(p["KeySchema"], wantKeys) {
				t.Errorf("%s: key schema %v, want %v", name, p["KeySchema"], wantKeys)
			}
			wantDefs := []interface{}{
				map[string]interface{}{"AttributeName": deployment.AttrPK, "AttributeType": "S"},
				map[string]interface{}{"AttributeName": deployment.AttrSK, "AttributeType": "S"},
			}
			if !reflect.DeepEqual(p["AttributeDefinitions"], wantDefs) {
				t.Errorf("%s: attribute definitions %v, want %v", name, p["AttributeDefinitions"], wantDefs)
			}
			wantTTL := map[string]interface{}{"AttributeName": deployment.AttrTTL, "Enabled": true}
			if !reflect.DeepEqual(p["TimeToLiveSpecification"], wantTTL) {
				t.Errorf("%s: TTL %v, want %v", name, p["TimeToLiveSpecification"], wantTTL)
			}
		}
	}
	// cdk.json's default refresh (what `cdk deploy` passes) is the runtime's.
	if got := cdkJSONContext(t)[CtxConfigRefresh]; got != deployment.DefaultConfigRefresh.String() {
		t.Errorf("cdk.json %s = %v, the runtime default is %v", CtxConfigRefresh, got, deployment.DefaultConfigRefresh)
	}
}
