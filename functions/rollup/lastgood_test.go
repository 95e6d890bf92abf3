package main

import (
	"context"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/llmgw/llmgw/pkg/config"
	"github.com/llmgw/llmgw/pkg/deployment"
	"github.com/llmgw/llmgw/pkg/ssmconfig/ssmtest"
	"github.com/llmgw/llmgw/pkg/store"
	"github.com/llmgw/llmgw/pkg/store/dynamo"
	"github.com/llmgw/llmgw/pkg/store/storetest"
	"github.com/llmgw/llmgw/pkg/usage"
)

// TestLambdaRollupOnABadSSMEditUsesTheLastGoodConfig: while a
// syntactically bad edit is live in SSM, the rollup reports it (logged,
// ConfigReloadErrors) and rolls up with the last good config stored in the
// table (by the gateway, or by an earlier rollup run), instead of failing:
// cost reports go on during the incident the edit was made for. With no
// good config ever stored, the run fails and says so.
func TestLambdaRollupOnABadSSMEditUsesTheLastGoodConfig(t *testing.T) {
	endpoint := storetest.StartDynalite(t)
	ssm := ssmtest.New()
	defer ssm.Close()
	path := deployment.ConfigPath("test")
	ssm.Put(path+"00-base", "String", testConfig)
	for k, v := range map[string]string{"AWS_ENDPOINT_URL_DYNAMODB": endpoint, "AWS_ENDPOINT_URL_SSM": ssm.URL, "AWS_REGION": "us-east-1",
		"AWS_ACCESS_KEY_ID": "fake", "AWS_SECRET_ACCESS_KEY": "fake",
		"AWS_CONFIG_FILE": "/dev/null", "AWS_SHARED_CREDENTIALS_FILE": "/dev/null"} {
		t.Setenv(k, v)
	}
	newTable := func() (string, *dynamo.Store) {
		table := storetest.UniqueTableName(t)
		s := dynamo.New(storetest.DynaliteClient(endpoint), table)
		if err := s.EnsureTable(context.Background()); err != nil {
			t.Fatal(err)
		}
		return table, s
	}
	table, s := newTable()
	cfg, _ := config.Parse([]byte(testConfig))
	d2 := time.Date(2026, 11, 2, 0, 0, 0, 0, time.UTC)
	writeRecords(t, s, cfg, d2.AddDate(0, 0, -1), d2)
	run := func(table string) (usage.RunSummary, string, error) {
		env := map[string]string{deployment.EnvTable: table, deployment.EnvConfigPath: path, deployment.EnvStage: "test"}
		var logs strings.Builder
		h := lambdaHandler(slog.New(slog.NewTextHandler(&logs, nil)), func(k string) string { return env[k] })
		sum, err := h(context.Background(), readEvent(t, "scheduled-hourly.json"))
		return sum, logs.String(), err
	}

	good, _, err := run(table)
	if err != nil || good.Written == 0 {
		t.Fatalf("run on the good config: %+v %v", good, err)
	}
	if _, found, err := s.Get(context.Background(), store.ConfigLastGoodKey(path)); err != nil || !found {
		t.Fatalf("the accepted config is not stored as the last good one: %v", err)
	}

	ssm.Put(path+"90-incident", "String", "routes: [demo, {targets: ")
	sum, logs, err := run(table)
	if err != nil {
		t.Fatalf("the rollup failed on a bad edit: %v\n%s", err, logs)
	}
	if sum.Written != good.Written || sum.Teams != good.Teams {
		t.Errorf("on the last good config: %+v, want the teams and rows of %+v", sum, good)
	}
	if !strings.Contains(logs, "90-incident") || !strings.Contains(logs, "last good config") {
		t.Errorf("the bad edit is not reported:\n%s", logs)
	}

	empty, _ := newTable()
	if _, _, err := run(empty); err == nil || !strings.Contains(err.Error(), "no good config has ever been stored") {
		t.Errorf("no last good config: err = %v", err)
	}
}
