package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/sqs"

	"github.com/llmgw/llmgw/pkg/cmdhelp/cmdhelptest"
	"github.com/llmgw/llmgw/pkg/config"
	"github.com/llmgw/llmgw/pkg/deployment"
	"github.com/llmgw/llmgw/pkg/exchange"
	"github.com/llmgw/llmgw/pkg/ssmconfig/ssmtest"
	"github.com/llmgw/llmgw/pkg/store"
	"github.com/llmgw/llmgw/pkg/store/dynamo"
	"github.com/llmgw/llmgw/pkg/store/embedded"
	"github.com/llmgw/llmgw/pkg/store/storetest"
	"github.com/llmgw/llmgw/pkg/usage"
	"github.com/llmgw/llmgw/pkg/usage/sqsspill"
	"github.com/llmgw/llmgw/pkg/usage/sqsspill/sqstest"
	"github.com/llmgw/llmgw/pkg/usage/usagetest"
)

// downTable is a table that is down: what the gateway saw when it spilled.
type downTable struct{ usagetest.Down }

func readEvent(t *testing.T, name string) json.RawMessage {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("..", "..", "events", name))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func TestParseEventBothShapes(t *testing.T) {
	now := time.Date(2026, 11, 20, 9, 30, 0, 0, time.UTC)
	cases := []struct {
		name     string
		raw      json.RawMessage
		mode     usage.Mode
		from, to string
	}{
		// The scheduled-event envelope (a rule without constant input):
		// mode from the rule's name, clock from the event's time.
		{"hourly envelope", readEvent(t, "scheduled-hourly.json"), usage.Hourly, "2026-11-02", "2026-11-03"},
		{"daily envelope", readEvent(t, "scheduled-daily.json"), usage.Daily, "2026-11-29", "2026-11-30"},
		// The rule's constant input (what the stack's rules send).
		{"constant hourly", json.RawMessage(`{"mode":"hourly"}`), usage.Hourly, "2026-11-19", "2026-11-20"},
		{"constant daily", json.RawMessage(`{"mode":"daily"}`), usage.Daily, "2026-11-18", "2026-11-19"},
		{"input transformer detail", json.RawMessage(`{"detail-type":"Scheduled Event","detail":{"mode":"daily"}}`), usage.Daily, "2026-11-18", "2026-11-19"},
		{"empty event", json.RawMessage(`null`), usage.Hourly, "2026-11-19", "2026-11-20"},
	}
	for _, c := range cases {
		m, at, err := parseEvent(c.raw, now)
		if err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		from, to, _ := m.Window(at)
		if m != c.mode || store.Day(from) != c.from || store.Day(to) != c.to {
			t.Errorf("%s: %s %s..%s, want %s %s..%s", c.name, m, store.Day(from), store.Day(to), c.mode, c.from, c.to)
		}
	}
	for _, bad := range []string{`{"mode":"weekly"}`, `[1,2]`, `"hourly"`} {
		if _, _, err := parseEvent(json.RawMessage(bad), now); err == nil {
			t.Errorf("%s accepted", bad)
		}
	}
}

const testConfig = `
providers: {a: {kind: fake}}
routes: {m: {targets: [{provider: a, model: x}]}}
teams:
  search: {}
  ads: {}
`

func writeRecords(t *testing.T, s store.Putter, cfg *config.Config, days ...time.Time) {
	t.Helper()
	rec := usage.NewRecorder(s, func() *config.Config { return cfg }, nil)
	for i, d := range days {
		for _, team := range []string{"search", "ads", ""} {
			r := &exchange.Record{RequestID: "req_" + team + d.Format("0102") + string(rune('a'+i)), Time: d.Add(time.Hour), Team: team,
				Outcome: "ok", InputTokens: 10, OutputTokens: 5, CostUSD: 0.5}
			if err := rec.Write(context.Background(), r); err != nil {
				t.Fatal(err)
			}
		}
	}
}

func TestLocalRunOnTheEmbeddedFile(t *testing.T) {
	dir := t.TempDir()
	state, cfgFile := filepath.Join(dir, "state.db"), filepath.Join(dir, "gw.yaml")
	if err := os.WriteFile(cfgFile, []byte(testConfig), 0o600); err != nil {
		t.Fatal(err)
	}
	cfg, err := config.Parse([]byte(testConfig))
	if err != nil {
		t.Fatal(err)
	}
	s, err := embedded.Open(state)
	if err != nil {
		t.Fatal(err)
	}
	d1 := time.Date(2026, 11, 1, 0, 0, 0, 0, time.UTC)
	writeRecords(t, s, cfg, d1, d1.AddDate(0, 0, 1), d1.AddDate(0, 0, 5))
	s.Close()
	// Two records the store did not take, in the spill file next to it.
	spiller := usage.NewRecorder(downTable{}, func() *config.Config { return cfg }, slog.New(slog.NewTextHandler(io.Discard, nil)))
	spiller.Spill = usage.NewFileSpill(usage.DefaultSpillFile(state))
	for i := 0; i < 2; i++ {
		spiller.Record(context.Background(), &exchange.Record{RequestID: fmt.Sprintf("req_spilled_%d", i), Time: d1.AddDate(0, 0, 9), Team: "ads", Outcome: "ok", CostUSD: 0.5})
	}

	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	if err := runLocal(context.Background(), []string{"-state", state, "-config", cfgFile, "-from", "2026-11-01", "-to", "2026-11-30"}, log); err != nil {
		t.Fatal(err)
	}
	s, err = embedded.Open(state)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	rep, err := usage.BuildReport(context.Background(), s, []string{"search", "ads", config.AnonymousTeam}, d1, d1.AddDate(0, 0, 29), false)
	if err != nil {
		t.Fatal(err)
	}
	if len(rep.Teams) != 3 || rep.Total.Requests != 9+2 || rep.Total.CostUSD != 5.5 || len(rep.Teams[0].Days) != 3+1 {
		t.Fatalf("report %+v", rep)
	}
	if err := runLocal(context.Background(), []string{"-state", filepath.Join(dir, "nope.db")}, log); err == nil {
		t.Fatal("a missing state file must be an error, not an empty store")
	}
	if err := runLocal(context.Background(), []string{"-state", state, "-from", "2026-11-05", "-to", "2026-11-01"}, log); err == nil {
		t.Fatal("reversed range accepted")
	}
}

// TestLambdaHandlerOnDynamoDB runs the Lambda handler against dynalite,
// with its config in (fake) SSM, given exactly the variables the stack
// sets (deployment.RollupEnv), with the hourly event file: yesterday and
// today (of the event's time) are rolled up. The variables it reads are
// exactly the contract's.
func TestLambdaHandlerOnDynamoDB(t *testing.T) {
	endpoint := storetest.StartDynalite(t)
	table := storetest.UniqueTableName(t)
	s := dynamo.New(storetest.DynaliteClient(endpoint), table)
	if err := s.EnsureTable(context.Background()); err != nil {
		t.Fatal(err)
	}
	ssm := ssmtest.New()
	defer ssm.Close()
	ssm.Put(deployment.ConfigPath("test")+"00-base", "String", testConfig)
	queue := sqstest.New()
	defer queue.Close()
	qurl := queue.QueueURL("usage-spill")
	for k, v := range map[string]string{"AWS_ENDPOINT_URL_DYNAMODB": endpoint, "AWS_ENDPOINT_URL_SSM": ssm.URL, "AWS_ENDPOINT_URL_SQS": queue.URL, "AWS_REGION": "us-east-1",
		"AWS_ACCESS_KEY_ID": "fake", "AWS_SECRET_ACCESS_KEY": "fake",
		"AWS_CONFIG_FILE": "/dev/null", "AWS_SHARED_CREDENTIALS_FILE": "/dev/null"} {
		t.Setenv(k, v)
	}
	env := map[string]string{deployment.EnvTable: table, deployment.EnvConfigPath: deployment.ConfigPath("test"), deployment.EnvStage: "test",
		deployment.EnvUsageQueue: qurl}
	if len(env) != len(deployment.RollupEnv()) {
		t.Fatalf("the test sets %v; the stack sets %v", env, deployment.RollupEnv())
	}
	read := map[string]bool{}
	getenv := func(k string) string { read[k] = true; return env[k] }
	cfg, _ := config.Parse([]byte(testConfig))
	d2 := time.Date(2026, 11, 2, 0, 0, 0, 0, time.UTC)
	writeRecords(t, s, cfg, d2.AddDate(0, 0, -1), d2, d2.AddDate(0, 0, 1))

	// Three records the table did not take, spilled to the queue by the
	// gateway; one of a day before the hourly window.
	spill := sqsspill.New(sqs.New(sqs.Options{Region: "us-east-1", BaseEndpoint: &queue.URL,
		Credentials: credentials.NewStaticCredentialsProvider("fake", "fake", "")}), qurl)
	spilled := &downTable{}
	spiller := usage.NewRecorder(spilled, func() *config.Config { return cfg }, nil)
	spiller.Spill = spill
	for i, at := range []time.Time{d2.Add(5 * time.Hour), d2.Add(6 * time.Hour), d2.AddDate(0, 0, -1).Add(time.Hour)} {
		spiller.Record(context.Background(), &exchange.Record{RequestID: fmt.Sprintf("req_spilled_%d", i), Time: at, Team: "search", Outcome: "ok", CostUSD: 0.25})
	}
	if queue.Len(qurl) != 3 {
		t.Fatalf("%d records spilled to the queue", queue.Len(qurl))
	}

	h := lambdaHandler(slog.New(slog.NewTextHandler(io.Discard, nil)), getenv)
	sum, err := h(context.Background(), readEvent(t, "scheduled-hourly.json"))
	if err != nil {
		t.Fatal(err)
	}
	// The drained day before the window (Nov 1) is recomputed too: 3 days
	// x 3 teams, 6 + 3 written records... 9 team-days with records.
	if sum.From != "2026-11-01" || sum.To != "2026-11-03" || sum.Written != 9 || sum.Records != 9+3 || queue.Len(qurl) != 0 {
		t.Fatalf("summary %+v, %d messages left", sum, queue.Len(qurl))
	}
	if _, err := h(context.Background(), json.RawMessage(`{"mode":"monthly"}`)); err == nil {
		t.Fatal("bad mode accepted")
	}
	want := append(deployment.RollupEnv(), deployment.EnvConfigFile)
	var got []string
	for k := range read {
		got = append(got, k)
	}
	slices.Sort(got)
	slices.Sort(want)
	if !slices.Equal(got, want) {
		t.Errorf("the rollup reads %v; the contract is %v", got, want)
	}
}

func TestMain(m *testing.M) {
	cmdhelptest.MainIfChild(main)
	os.Exit(m.Run())
}

// TestHelp: -h explains the local and Lambda modes, every flag and every
// LLMGW_* variable the rollup reads, and exits 0.
func TestHelp(t *testing.T) {
	want := []string{"rollup - aggregate usage records", "Local:", "Lambda:", "AWS_LAMBDA_RUNTIME_API", `{"mode":"hourly"}`,
		"-from", "-to", "-mode", "-config", "-store", "-state", "-table", "-spill", "RollupFailures"}
	cmdhelptest.CheckHelp(t, append(want, cmdhelptest.EnvNames(t, ".", "../../pkg/usage/usagecli")...)...)
	if _, errOut, code := cmdhelptest.Run(t, nil, "-bogus"); code != 2 || !strings.Contains(errOut, "-bogus") {
		t.Errorf("bad flag: exit %d, stderr %q", code, errOut)
	}
}
