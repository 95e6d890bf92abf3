package gwstack

import (
	"context"
	"encoding/json"
	"log/slog"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	awsconfig "github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/aws-sdk-go-v2/service/ssm"
	ssmtypes "github.com/aws/aws-sdk-go-v2/service/ssm/types"

	"github.com/llmgw/llmgw/pkg/config"
	"github.com/llmgw/llmgw/pkg/deployment"
	"github.com/llmgw/llmgw/pkg/exchange"
	"github.com/llmgw/llmgw/pkg/store"
	"github.com/llmgw/llmgw/pkg/store/dynamo"
	"github.com/llmgw/llmgw/pkg/usage"
	"github.com/llmgw/llmgw/pkg/usage/sqsspill"
)

// TestStackDeploysOnMotoAndServes deploys the synthesized default stack
// through CloudFormation on a moto server (stripped only of what moto
// cannot create, see motoTemplate), with what `cdk bootstrap` and `cdk
// deploy` provide first (the bootstrap version parameter, the asset bucket
// with the zipped bootstraps built by scripts/build-lambda.sh), then runs
// the real bootstraps with the deployed functions' environment against the
// deployed table, parameters and queue: a plain and a streamed request
// (usage records in the table), an SSM edit that applies without a deploy,
// a usage record spilled to the queue, and two rollup runs that drain it
// and write identical rows.
func TestStackDeploysOnMotoAndServes(t *testing.T) {
	if testing.Short() {
		t.Skip("deploys the stack on a moto server and runs the Lambda bootstraps")
	}
	if why := motoMissing(); why != "" {
		t.Skip("cannot deploy the stack on an emulator: " + why + " (pip install 'moto[server]')")
	}
	f := get(t, "default")
	bins := buildBootstraps(t)
	m := startMoto(t)
	mustAWSConfig(t, m)
	ctx := context.Background()
	awsCfg, err := awsconfig.LoadDefaultConfig(ctx)
	if err != nil {
		t.Fatal(err)
	}
	ssmc := ssm.NewFromConfig(awsCfg)
	put := func(name, value string, typ ssmtypes.ParameterType) {
		t.Helper()
		if _, err := ssmc.PutParameter(ctx, &ssm.PutParameterInput{Name: aws.String(name), Value: aws.String(value), Type: typ, Overwrite: aws.Bool(true)}); err != nil {
			t.Fatal(err)
		}
	}

	// What `cdk bootstrap` creates and `cdk deploy` uploads.
	put("/cdk-bootstrap/hnb659fds/version", "30", ssmtypes.ParameterTypeString)
	res := f.json["Resources"].(map[string]interface{})
	for fn, name := range map[string]string{f.logicalID(f.g.GatewayFn): "gateway", f.logicalID(f.g.RollupFn): "rollup"} {
		code := res[fn].(map[string]interface{})["Properties"].(map[string]interface{})["Code"].(map[string]interface{})
		bucket := strings.NewReplacer("${AWS::AccountId}", motoAccount, "${AWS::Region}", motoRegion).
			Replace(code["S3Bucket"].(map[string]interface{})["Fn::Sub"].(string))
		m.putObject(t, bucket, code["S3Key"].(string), zipBootstrap(t, filepath.Join(bins, name, "bootstrap")))
	}

	st := m.deployStack(t, *f.g.Stack.StackName(), motoTemplate(t, f.json))
	table, queueURL, configPath := st.output(t, "TableName"), st.output(t, "UsageQueueUrl"), st.output(t, "ConfigPath")
	gwEnv := m.functionEnv(t, m.physicalID(t, *f.g.Stack.StackName(), f.logicalID(f.g.GatewayFn)))
	rollupEnv := m.functionEnv(t, m.physicalID(t, *f.g.Stack.StackName(), f.logicalID(f.g.RollupFn)))
	if gwEnv[deployment.EnvTable] != table || gwEnv[deployment.EnvUsageQueue] != queueURL || rollupEnv[deployment.EnvConfigPath] != configPath {
		t.Fatalf("deployed environment does not name the deployed resources: gateway %v, rollup %v", gwEnv, rollupEnv)
	}
	// The seeded config is in SSM as synthesized.
	seeded, err := ssmc.GetParametersByPath(ctx, &ssm.GetParametersByPathInput{Path: aws.String(configPath)})
	if err != nil || len(seeded.Parameters) == 0 || !strings.Contains(aws.ToString(seeded.Parameters[0].Value), "routes:") {
		t.Fatalf("seeded config not in SSM: %v %+v", err, seeded)
	}

	// The operator adds a provider key, a route and a team.
	up := openAIUpstream(t)
	keysPath := deployment.KeysPath(f.g.Settings.Stage)
	put(keysPath+"up/1", motoProviderKey, ssmtypes.ParameterTypeSecureString)
	put(configPath+"50-test", motoTestConfig(up.URL, keysPath), ssmtypes.ParameterTypeString)

	// The deployed environment, pointed at moto; config refresh 1s instead
	// of the deployed 15s, so the edit below applies quickly.
	extra := append(m.env(), deployment.EnvConfigRefresh+"=1s")
	gw := startFunction(t, filepath.Join(bins, "gateway", "bootstrap"), gwEnv, extra)
	if status, body := gw.invoke(t, readEvent(t, "function-url-chat.json")); status != 200 || !strings.Contains(body, "reply from gpt-4.1") {
		t.Fatalf("plain request: %d %s\nstderr: %s", status, body, gw.stderr.String())
	}
	status, body := gw.invoke(t, readEvent(t, "function-url-chat-stream.json"))
	if status != 200 || !strings.Contains(body, `"content":"reply `) || !strings.HasSuffix(strings.TrimSpace(body), "data: [DONE]") {
		t.Fatalf("streamed request: %d %s\nstderr: %s", status, body, gw.stderr.String())
	}
	tbl := dynamo.New(mustDynamo(t, awsCfg), table)
	if recs := usageRecords(t, tbl, "checkout"); len(recs) != 2 {
		t.Fatalf("usage records in the deployed table: %d, want 2 (stderr: %s)", len(recs), gw.stderr.String())
	}

	// An SSM edit applies without a deploy.
	put(configPath+"60-edit", "routes: {demo: {targets: [{provider: up, model: gpt-4.1-mini}]}}\n", ssmtypes.ParameterTypeString)
	deadline := time.Now().Add(30 * time.Second)
	for {
		if _, body := gw.invoke(t, readEvent(t, "function-url-chat.json")); strings.Contains(body, "reply from gpt-4.1-mini") {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the SSM edit never applied\nstderr: %s", gw.stderr.String())
		}
		time.Sleep(250 * time.Millisecond)
	}
	gwRecords := len(usageRecords(t, tbl, "checkout"))

	// A record the table did not take goes to the deployed queue, through
	// the gateway's recorder and spill.
	cfg, err := config.Parse([]byte(motoTestConfig(up.URL, keysPath)))
	if err != nil {
		t.Fatal(err)
	}
	rec := usage.NewRecorder(failingTable{}, func() *config.Config { return cfg }, slog.New(slog.DiscardHandler))
	rec.Spill = sqsspill.New(sqs.NewFromConfig(awsCfg), queueURL)
	rec.Record(ctx, &exchange.Record{RequestID: "spilled-1", Time: time.Now().UTC(), Team: "checkout", KeyID: "example",
		Route: "demo", Target: "up/gpt-4.1", Provider: "up", Outcome: "ok", Status: 200, LatencyMillis: 12})
	if n := queueDepth(t, awsCfg, queueURL); n != 1 {
		t.Fatalf("spill queue holds %d messages, want 1", n)
	}

	// The rollup, twice: the first run drains the queue into the table;
	// the second runs while a bad SSM edit is live, on the last good config
	// the gateway stored in the table; both write the same rows.
	rollup := startFunction(t, filepath.Join(bins, "rollup", "bootstrap"), rollupEnv, m.env())
	var rows [2]store.Item
	for i := range rows {
		if i == 1 {
			put(configPath+"90-incident", "routes: [demo, {targets: ", ssmtypes.ParameterTypeString)
		}
		if status, body := rollup.invoke(t, []byte(`{"mode":"hourly"}`)); status != 200 || strings.Contains(body, "errorMessage") {
			t.Fatalf("rollup run %d: %d %s\nstderr: %s", i+1, status, body, rollup.stderr.String())
		}
		it, found, err := tbl.Get(ctx, store.RollupKey("checkout", time.Now()))
		if err != nil || !found {
			t.Fatalf("rollup run %d wrote no row: %v", i+1, err)
		}
		rows[i] = it
		if i == 0 {
			if n := len(usageRecords(t, tbl, "checkout")); n != gwRecords+1 {
				t.Errorf("after the drain the table holds %d usage records, want %d", n, gwRecords+1)
			}
			if n := queueDepth(t, awsCfg, queueURL); n != 0 {
				t.Errorf("spill queue not drained: %d messages", n)
			}
		}
	}
	if s := rollup.stderr.String(); !strings.Contains(s, "90-incident") || !strings.Contains(s, "last good config") {
		t.Errorf("the rollup did not report the bad edit: %s", s)
	}
	// Identical but for when they were computed; the spilled record counts.
	var a, b map[string]interface{}
	json.Unmarshal(rows[0].Data, &a)
	json.Unmarshal(rows[1].Data, &b)
	delete(a, "computed_at")
	delete(b, "computed_at")
	if len(a) == 0 || !reflect.DeepEqual(a, b) {
		t.Errorf("the rollup rows differ between runs:\n1: %s\n2: %s", rows[0].Data, rows[1].Data)
	}
	if n, _ := a["requests"].(float64); int(n) != gwRecords+1 {
		t.Errorf("rollup row counts %v requests, want %d (the gateway's and the spilled one): %s", a["requests"], gwRecords+1, rows[0].Data)
	}
}
