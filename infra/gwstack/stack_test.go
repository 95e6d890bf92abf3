package gwstack

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"sort"
	"strings"
	"testing"

	"github.com/aws/aws-cdk-go/awscdk/v2"
	"github.com/aws/aws-cdk-go/awscdk/v2/assertions"
	"github.com/aws/aws-cdk-go/awscdk/v2/awsdynamodb"
	"github.com/aws/aws-cdk-go/awscdk/v2/awsiam"
	"github.com/aws/aws-cdk-go/awscdk/v2/awskms"
	"github.com/aws/aws-cdk-go/awscdk/v2/cxapi"
	"github.com/aws/constructs-go/constructs/v10"
	"github.com/aws/jsii-runtime-go"
	"github.com/cdklabs/cdk-nag-go/cdknag/v2"

	_ "github.com/llmgw/llmgw/infra/internal/quietjsii" // must initialize before the CDK packages
	"github.com/llmgw/llmgw/pkg/deployment"
)

// assetDir holds dummy gateway/bootstrap and rollup/bootstrap files so the
// tests do not need the real Lambda build.
var assetDir string

func TestMain(m *testing.M) {
	os.Exit(runTests(m))
}

func runTests(m *testing.M) int {
	// Also set here for any jsii process started after a jsii.Close; the
	// first one is started during package init (see quietjsii).
	os.Setenv("JSII_SILENCE_WARNING_DEPRECATED_NODE_VERSION", "1")
	os.Setenv("JSII_SILENCE_WARNING_END_OF_LIFE_NODE_VERSION", "18,20,22")
	os.Unsetenv("CDK_OUTDIR") // app.Synth must work without it (temp dir)
	tmp, err := os.MkdirTemp("", "llmgw-infra-test-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer os.RemoveAll(tmp)
	// The jsii node process inherits TMPDIR: synthesized assemblies land in
	// tmp and are removed with it.
	os.Setenv("TMPDIR", tmp)
	assetDir = filepath.Join(tmp, "assets")
	for _, name := range []string{"gateway", "rollup"} {
		dir := filepath.Join(assetDir, name)
		if err := os.MkdirAll(dir, 0o755); err == nil {
			err = os.WriteFile(filepath.Join(dir, "bootstrap"), []byte("#!/bin/sh\n# dummy "+name+"\n"), 0o755)
		}
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 1
		}
	}
	// The prod fixture deploys a seed config with server.cors.
	seed, err := os.ReadFile("../seed-config.yaml")
	if err == nil {
		corsSeed := filepath.Join(tmp, "seed-cors.yaml")
		err = os.WriteFile(corsSeed, append(seed, []byte(prodCORS)...), 0o644)
		fixtureContexts["prod"][CtxSeedConfigFile] = corsSeed
		grSeed := filepath.Join(tmp, "seed-guardrail.yaml")
		if err == nil {
			withMantle := strings.Replace(string(seed), "\nroutes:\n", "\nroutes:\n"+mantleRoute, 1)
			err = os.WriteFile(grSeed, []byte(withMantle+guardrailSeed), 0o644)
		}
		fixtureContexts["guardrail"][CtxSeedConfigFile] = grSeed
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer jsii.Close()
	return m.Run()
}

// prodCORS is appended to the seed config of the prod fixture.
const prodCORS = `server:
  cors:
    allow_origins: [https://a.example.com, https://b.example.com]
    allow_headers: [authorization, content-type]
    max_age: 5m
`

// cdkJSONContext returns the "context" of the repository's cdk.json, so the
// tests synthesize with the same feature flags and defaults as `cdk deploy`.
func cdkJSONContext(t *testing.T) map[string]interface{} {
	t.Helper()
	b, err := os.ReadFile("../../cdk.json")
	if err != nil {
		t.Fatal(err)
	}
	var doc struct {
		App     string                 `json:"app"`
		Context map[string]interface{} `json:"context"`
	}
	if err := json.Unmarshal(b, &doc); err != nil {
		t.Fatalf("cdk.json: %v", err)
	}
	if doc.App != "go run ./infra" {
		t.Errorf("cdk.json app = %q", doc.App)
	}
	return doc.Context
}

// fixture is one synthesized stack, with cdk-nag AwsSolutions checks applied.
type fixture struct {
	g    *Gateway
	tmpl assertions.Template
	json map[string]interface{}
}

var fixtures = map[string]*fixture{}

// Context overrides of the shared fixtures.
var fixtureContexts = map[string]map[string]interface{}{
	"default": {},
	"prod": {
		"stage":                      "prod",
		"functionUrlAuthType":        "AWS_IAM",
		"gatewayReservedConcurrency": "50",
		"removalPolicy":              "destroy",
		"alarmTopicArn":              "arn:aws:sns:eu-west-1:123456789012:ops-alerts",
		"logRetentionDays":           "90",
		"gatewayMemorySize":          "2048",
		"gatewayTimeout":             "300",
		"configRefresh":              "1m",
		"bedrockRegions":             "us-west-2",
		"bedrockModels":              "*",
		"fallbackRateThreshold":      "35",
		"tableKmsKey":                "create",
	},
	// pinned: an environment-bound stack, as `cdk deploy` synthesizes it,
	// with an existing customer-managed key for the table.
	"pinned": {"tableKmsKey": pinnedTableKey, "bedrockModels": "*"},
	// guardrail: a seed config whose moderation applies Bedrock
	// guardrails, one more from context, and no reserved concurrency.
	"guardrail": {"guardrailIds": "xyz789,arn:aws:bedrock:ap-south-1:123456789012:guardrail/q1w2e3", "gatewayReservedConcurrency": "none"},
	// allatonce: a development stage that deploys without traffic shifting.
	"allatonce": {"trafficShifting": "all-at-once"},
	// otel: the opt-in OpenTelemetry collector layer.
	"otel": {"otelCollectorLayerArn": otelLayerARN},
}

const otelLayerARN = "arn:aws:lambda:eu-west-1:901920570463:layer:aws-otel-collector-arm64-ver-0-117-0:1"

const pinnedTableKey = "arn:aws:kms:eu-west-1:123456789012:key/1234abcd-12ab-34cd-56ef-1234567890ab"

// get synthesizes (once) and returns the named fixture.
func get(t *testing.T, name string) *fixture {
	t.Helper()
	if f, ok := fixtures[name]; ok {
		return f
	}
	ctx := cdkJSONContext(t)
	for k, v := range fixtureContexts[name] {
		ctx[k] = v
	}
	ctx[CtxAssetDir] = assetDir
	app := awscdk.NewApp(&awscdk.AppProps{Context: &ctx})
	s, err := FromContext(app.Node(), readSeed(t))
	if err != nil {
		t.Fatal(err)
	}
	if name == "pinned" {
		s.Account, s.Region = "123456789012", "eu-west-1"
	}
	awscdk.Aspects_Of(app).Add(cdknag.NewAwsSolutionsChecks(&cdknag.NagPackProps{Verbose: jsii.Bool(true)}), nil)
	g, err := New(app, s)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := synthTemplate(t, g)
	f := &fixture{g: g, tmpl: tmpl, json: *tmpl.ToJSON()}
	fixtures[name] = f
	return f
}

// synthTemplate synthesizes the stack. Error annotations (unsuppressed
// cdk-nag errors) make synthesis fail validation; report that as a test
// failure (the findings are printed above it) instead of a panic.
func synthTemplate(t *testing.T, g *Gateway) (tmpl assertions.Template) {
	t.Helper()
	defer func() {
		if r := recover(); r != nil {
			t.Fatalf("synthesis of %s failed (cdk-nag errors are listed above): %v", *g.Stack.StackName(), r)
		}
	}()
	return assertions.Template_FromStack(g.Stack, nil)
}

// check runs CDK assertions, which throw (panic in Go) on mismatch, and
// turns a failure into a test error so the other assertions still run.
func check(t *testing.T, assertion func()) {
	t.Helper()
	defer func() {
		if r := recover(); r != nil {
			t.Errorf("%v", r)
		}
	}()
	assertion()
}

func (f *fixture) count(t *testing.T, typ string, n int) {
	t.Helper()
	check(t, func() { f.tmpl.ResourceCountIs(jsii.String(typ), jsii.Number(float64(n))) })
}

func (f *fixture) props(t *testing.T, typ string, props interface{}) {
	t.Helper()
	check(t, func() { f.tmpl.HasResourceProperties(jsii.String(typ), props) })
}

func (f *fixture) propsCount(t *testing.T, typ string, props interface{}, n int) {
	t.Helper()
	check(t, func() { f.tmpl.ResourcePropertiesCountIs(jsii.String(typ), props, jsii.Number(float64(n))) })
}

func (f *fixture) resource(t *testing.T, typ string, props interface{}) {
	t.Helper()
	check(t, func() { f.tmpl.HasResource(jsii.String(typ), props) })
}

func (f *fixture) output(t *testing.T, id string, props interface{}) {
	t.Helper()
	check(t, func() { f.tmpl.HasOutput(jsii.String(id), props) })
}

// resources returns the template resources of a type, by logical ID.
func (f *fixture) resources(typ string) map[string]map[string]interface{} {
	out := map[string]map[string]interface{}{}
	for id, r := range f.json["Resources"].(map[string]interface{}) {
		res := r.(map[string]interface{})
		if res["Type"] == typ {
			out[id] = res
		}
	}
	return out
}

// logicalID returns the logical ID of a construct's CloudFormation resource.
func (f *fixture) logicalID(c interface{ Node() constructs.Node }) string {
	return *f.g.Stack.GetLogicalId(c.Node().DefaultChild().(awscdk.CfnElement))
}

// flatten renders a template value as a string: Fn::Join is joined, Ref and
// Fn::GetAtt become ${X} and ${X.Attr} (at any depth); a value that is not a
// string after that is rendered as JSON.
func flatten(v interface{}) string {
	r := resolve(v)
	if s, ok := r.(string); ok {
		return s
	}
	b, _ := json.Marshal(r)
	return string(b)
}

func resolve(v interface{}) interface{} {
	switch t := v.(type) {
	case map[string]interface{}:
		if j, ok := t["Fn::Join"].([]interface{}); ok {
			var parts []string
			for _, p := range j[1].([]interface{}) {
				parts = append(parts, flatten(p))
			}
			return strings.Join(parts, j[0].(string))
		}
		if r, ok := t["Ref"].(string); ok {
			return "${" + r + "}"
		}
		if a, ok := t["Fn::GetAtt"].([]interface{}); ok {
			return fmt.Sprintf("${%v.%v}", a[0], a[1])
		}
		out := map[string]interface{}{}
		for k, e := range t {
			out[k] = resolve(e)
		}
		return out
	case []interface{}:
		out := make([]interface{}, len(t))
		for i, e := range t {
			out[i] = resolve(e)
		}
		return out
	}
	return v
}

func asList(v interface{}) []interface{} {
	if l, ok := v.([]interface{}); ok {
		return l
	}
	if v == nil {
		return nil
	}
	return []interface{}{v}
}

// statement is one IAM policy statement and the roles its policy is
// attached to.
type statement struct {
	policy string
	roles  string
	body   map[string]interface{}
}

// statements returns every statement of every AWS::IAM::Policy, of inline
// role policies and of managed policies in the template.
func (f *fixture) statements() []statement {
	var out []statement
	add := func(policy, roles string, doc interface{}) {
		for _, s := range asList(doc.(map[string]interface{})["Statement"]) {
			out = append(out, statement{policy: policy, roles: roles, body: s.(map[string]interface{})})
		}
	}
	for _, typ := range []string{"AWS::IAM::Policy", "AWS::IAM::ManagedPolicy"} {
		for id, r := range f.resources(typ) {
			props := r["Properties"].(map[string]interface{})
			add(id, flatten(props["Roles"]), props["PolicyDocument"])
		}
	}
	for id, r := range f.resources("AWS::IAM::Role") {
		props := r["Properties"].(map[string]interface{})
		for _, p := range asList(props["Policies"]) {
			add(id+"/inline", id, p.(map[string]interface{})["PolicyDocument"])
		}
	}
	return out
}

// bySid returns the statements with the given Sid attached to roles whose
// logical ID contains role.
func (f *fixture) bySid(t *testing.T, role, sid string) []statement {
	t.Helper()
	var out []statement
	for _, s := range f.statements() {
		if s.body["Sid"] == sid && strings.Contains(s.roles, role) {
			out = append(out, s)
		}
	}
	if len(out) == 0 {
		t.Fatalf("no statement %s on %s", sid, role)
	}
	return out
}

func resourcesOf(s statement) []string {
	var out []string
	for _, r := range asList(s.body["Resource"]) {
		out = append(out, flatten(r))
	}
	sort.Strings(out)
	return out
}

func TestTable(t *testing.T) {
	f := get(t, "default")
	f.count(t, "AWS::DynamoDB::Table", 1)
	f.props(t, "AWS::DynamoDB::Table", map[string]interface{}{
		"KeySchema": []interface{}{
			map[string]interface{}{"AttributeName": deployment.AttrPK, "KeyType": "HASH"},
			map[string]interface{}{"AttributeName": deployment.AttrSK, "KeyType": "RANGE"},
		},
		"AttributeDefinitions": []interface{}{
			map[string]interface{}{"AttributeName": deployment.AttrPK, "AttributeType": "S"},
			map[string]interface{}{"AttributeName": deployment.AttrSK, "AttributeType": "S"},
		},
		"BillingMode":                      "PAY_PER_REQUEST",
		"TimeToLiveSpecification":          map[string]interface{}{"AttributeName": deployment.AttrTTL, "Enabled": true},
		"PointInTimeRecoverySpecification": map[string]interface{}{"PointInTimeRecoveryEnabled": true},
		"SSESpecification":                 map[string]interface{}{"SSEEnabled": true},
		"DeletionProtectionEnabled":        true,
		"GlobalSecondaryIndexes":           assertions.Match_Absent(),
	})
	f.resource(t, "AWS::DynamoDB::Table", map[string]interface{}{
		"DeletionPolicy":      "Retain",
		"UpdateReplacePolicy": "Retain",
	})
}

// The table is encrypted with the AWS-managed key by default, or with a
// customer-managed key (created by the stack, or an existing one by ARN)
// that both functions may use through DynamoDB only.
func TestTableCustomerManagedKey(t *testing.T) {
	def := get(t, "default")
	def.count(t, "AWS::KMS::Key", 0)
	for _, s := range def.statements() {
		if s.body["Sid"] == "UseTableKey" {
			t.Errorf("UseTableKey without a customer-managed key: %s", flatten(s.body))
		}
	}
	created, pinned := get(t, "prod"), get(t, "pinned")
	created.count(t, "AWS::KMS::Key", 1)
	created.props(t, "AWS::KMS::Key", map[string]interface{}{"EnableKeyRotation": true})
	pinned.count(t, "AWS::KMS::Key", 0)
	keyArn := map[*fixture]string{created: "${" + created.logicalID(created.g.TableKey.(awskms.Key)) + ".Arn}", pinned: pinnedTableKey}
	for f, arn := range keyArn {
		table := f.resources("AWS::DynamoDB::Table")
		for _, r := range table {
			sse := flatten(r["Properties"].(map[string]interface{})["SSESpecification"])
			if !strings.Contains(sse, `"SSEType":"KMS"`) || !strings.Contains(sse, arn) {
				t.Errorf("%s: table encryption %s, want KMS with %s", *f.g.Stack.StackName(), sse, arn)
			}
		}
		for _, role := range []string{"GatewayRole", "RollupRole"} {
			for _, s := range f.bySid(t, role, "UseTableKey") {
				if got := resourcesOf(s); !reflect.DeepEqual(got, []string{arn}) || !strings.Contains(flatten(s.body["Condition"]), "dynamodb.") {
					t.Errorf("%s %s UseTableKey: %v %s", *f.g.Stack.StackName(), role, got, flatten(s.body["Condition"]))
				}
			}
		}
	}
}

func TestFunctions(t *testing.T) {
	f := get(t, "default")
	f.count(t, "AWS::Lambda::Function", 2)
	f.propsCount(t, "AWS::Lambda::Function", map[string]interface{}{
		"Runtime":       "provided.al2023",
		"Architectures": []interface{}{"arm64"},
		"Handler":       "bootstrap",
	}, 2)
	table := f.logicalID(f.g.Table)
	f.props(t, "AWS::Lambda::Function", map[string]interface{}{
		"MemorySize": 1024,
		"Timeout":    900,
		"Environment": map[string]interface{}{"Variables": map[string]interface{}{
			deployment.EnvTable:         map[string]interface{}{"Ref": table},
			deployment.EnvConfigPath:    "/llmgw/dev/config/",
			deployment.EnvConfigRefresh: "15s",
			deployment.EnvStage:         "dev",
			// Team keys, never the request context's identity.
			deployment.EnvFunctionURLAuthType: "NONE",
		}},
		"ReservedConcurrentExecutions": DefaultGatewayReservedConcurrency,
		"LoggingConfig": map[string]interface{}{
			"LogGroup": map[string]interface{}{"Ref": f.logicalID(f.g.GatewayLogs)},
		},
	})
	f.props(t, "AWS::Lambda::Function", map[string]interface{}{
		"Environment": map[string]interface{}{"Variables": map[string]interface{}{
			deployment.EnvTable:      map[string]interface{}{"Ref": table},
			deployment.EnvConfigPath: "/llmgw/dev/config/",
		}},
		"ReservedConcurrentExecutions": assertions.Match_Absent(),
		"LoggingConfig": map[string]interface{}{
			"LogGroup": map[string]interface{}{"Ref": f.logicalID(f.g.RollupLogs)},
		},
	})
}

func TestFunctionURL(t *testing.T) {
	f := get(t, "default")
	f.count(t, "AWS::Lambda::Url", 1)
	f.props(t, "AWS::Lambda::Url", map[string]interface{}{
		"InvokeMode":        "RESPONSE_STREAM",
		"AuthType":          "NONE",
		"Cors":              assertions.Match_Absent(),
		"TargetFunctionArn": map[string]interface{}{"Fn::GetAtt": []interface{}{f.logicalID(f.g.GatewayFn), "Arn"}},
		"Qualifier":         LiveAlias, // the URL invokes the alias, not $LATEST
	})
	f.props(t, "AWS::Lambda::Permission", map[string]interface{}{
		"Action":              "lambda:InvokeFunctionUrl",
		"Principal":           "*",
		"FunctionUrlAuthType": "NONE",
		"FunctionName":        map[string]interface{}{"Ref": f.logicalID(f.g.Alias)},
	})
}

func TestSchedules(t *testing.T) {
	f := get(t, "default")
	rollup := map[string]interface{}{"Fn::GetAtt": []interface{}{f.logicalID(f.g.RollupFn), "Arn"}}
	for expr, input := range map[string]string{
		"rate(1 hour)":       `{"mode":"hourly"}`,
		"cron(15 0 * * ? *)": `{"mode":"daily"}`,
	} {
		f.props(t, "AWS::Events::Rule", map[string]interface{}{
			"ScheduleExpression": expr,
			"State":              "ENABLED",
			"Targets": []interface{}{map[string]interface{}{
				"Arn":   rollup,
				"Input": input,
			}},
		})
	}
	f.count(t, "AWS::Events::Rule", 2)
}

func TestConfigParameters(t *testing.T) {
	f := get(t, "default")
	f.count(t, "AWS::SSM::Parameter", 1)
	f.props(t, "AWS::SSM::Parameter", map[string]interface{}{
		"Name":  "/llmgw/dev/config/00-base",
		"Type":  "String",
		"Tier":  "Standard",
		"Value": RenderSeedConfig(readSeed(t), "dev"),
	})
}

func TestIAMScopedToTableAndParameters(t *testing.T) {
	f := get(t, "default")
	tableArn := "${" + f.logicalID(f.g.Table) + ".Arn}"
	ssm := "arn:${AWS::Partition}:ssm:${AWS::Region}:${AWS::AccountId}:parameter"
	for _, role := range []string{"GatewayRole", "RollupRole"} {
		var found bool
		for _, s := range f.statements() {
			if !strings.Contains(s.roles, role) {
				continue
			}
			for _, a := range asList(s.body["Action"]) {
				if strings.HasPrefix(a.(string), "dynamodb:") {
					found = true
					if got := resourcesOf(s); !reflect.DeepEqual(got, []string{tableArn}) {
						t.Errorf("%s: dynamodb statement resources = %v, want only the table ARN", role, got)
					}
				}
			}
		}
		if !found {
			t.Errorf("%s has no dynamodb statement", role)
		}
		for _, s := range f.bySid(t, role, "ReadGatewayConfig") {
			want := []string{ssm + "/llmgw/dev/config", ssm + "/llmgw/dev/config/*"}
			if got := resourcesOf(s); !reflect.DeepEqual(got, want) {
				t.Errorf("%s ReadGatewayConfig resources = %v, want %v", role, got, want)
			}
		}
	}
	for _, s := range f.bySid(t, "GatewayRole", "ReadProviderKeys") {
		want := []string{ssm + "/llmgw/dev/keys", ssm + "/llmgw/dev/keys/*"}
		if got := resourcesOf(s); !reflect.DeepEqual(got, want) {
			t.Errorf("ReadProviderKeys resources = %v, want %v", got, want)
		}
	}
	for _, s := range f.bySid(t, "GatewayRole", "DecryptProviderKeysViaSSM") {
		cond := flatten(s.body["Condition"])
		for _, want := range []string{`"kms:ViaService":"ssm.${AWS::Region}.amazonaws.com"`, "kms:EncryptionContext:PARAMETER_ARN", "/llmgw/dev/keys/*"} {
			if !strings.Contains(cond, want) {
				t.Errorf("kms:Decrypt condition %s lacks %s", cond, want)
			}
		}
	}
	// Bedrock: the default seed config's one model is granted
	// (TestBedrockGrantIsTheConfiguredModels); the wide grant of the
	// regions is the prod fixture's (bedrockModels "*").
	// The rollup neither reads keys nor calls Bedrock.
	for _, s := range f.statements() {
		if strings.Contains(s.roles, "RollupRole") {
			b := flatten(s.body)
			if strings.Contains(b, "bedrock:") || strings.Contains(b, "kms:") || strings.Contains(b, "/keys") {
				t.Errorf("rollup role has gateway-only permission: %s", b)
			}
		}
	}
}

func TestNoWildcardActionsOrResources(t *testing.T) {
	for _, name := range []string{"default", "prod", "pinned"} {
		f := get(t, name)
		stmts := f.statements()
		if len(stmts) < 8 {
			t.Fatalf("%s: only %d IAM statements found; the walker is broken", name, len(stmts))
		}
		for _, s := range stmts {
			if _, ok := s.body["NotAction"]; ok {
				t.Errorf("%s %s: NotAction used: %s", name, s.policy, flatten(s.body))
			}
			for _, a := range asList(s.body["Action"]) {
				if strings.Contains(flatten(a), "*") {
					t.Errorf("%s %s: wildcard action %v", name, s.policy, a)
				}
			}
			for _, r := range asList(s.body["Resource"]) {
				if flatten(r) == "*" {
					t.Errorf("%s %s: Resource \"*\" in %s", name, s.policy, flatten(s.body))
				}
			}
		}
		for id, r := range f.resources("AWS::IAM::Role") {
			if mp := r["Properties"].(map[string]interface{})["ManagedPolicyArns"]; mp != nil {
				t.Errorf("%s: role %s has managed policies %s", name, id, flatten(mp))
			}
		}
	}
}

func TestLogGroups(t *testing.T) {
	f := get(t, "default")
	f.count(t, "AWS::Logs::LogGroup", 2)
	f.propsCount(t, "AWS::Logs::LogGroup", map[string]interface{}{
		"RetentionInDays": 30,
	}, 2)
	// Log writes are granted on the function's own log group only.
	for role, lg := range map[string]string{"GatewayRole": f.logicalID(f.g.GatewayLogs), "RollupRole": f.logicalID(f.g.RollupLogs)} {
		var ok bool
		for _, s := range f.statements() {
			if strings.Contains(s.roles, role) && strings.Contains(flatten(s.body["Action"]), "logs:PutLogEvents") {
				ok = reflect.DeepEqual(resourcesOf(s), []string{"${" + lg + ".Arn}"})
			}
		}
		if !ok {
			t.Errorf("%s: logs:PutLogEvents not scoped to its log group", role)
		}
	}
}

func TestAlarms(t *testing.T) {
	f := get(t, "default")
	f.count(t, "AWS::CloudWatch::Alarm", 10)
	expr := func(re string) interface{} {
		return assertions.Match_ArrayWith(&[]interface{}{
			assertions.Match_ObjectLike(&map[string]interface{}{"Expression": assertions.Match_StringLikeRegexp(jsii.String(re))}),
		})
	}
	f.props(t, "AWS::CloudWatch::Alarm", map[string]interface{}{
		"AlarmName":          "llmgw-dev-fallback-rate",
		"Threshold":          20,
		"ComparisonOperator": "GreaterThanThreshold",
		"EvaluationPeriods":  1,
		"TreatMissingData":   "notBreaching",
		"Metrics":            expr(`^IF\(requests >= 10, 100 \* FILL\(part, 0\) / requests, 0\)$`),
		"AlarmActions":       assertions.Match_Absent(),
	})
	f.props(t, "AWS::CloudWatch::Alarm", map[string]interface{}{
		"AlarmName": "llmgw-dev-fallback-rate",
		"Metrics": assertions.Match_ArrayWith(&[]interface{}{
			assertions.Match_ObjectLike(&map[string]interface{}{"Id": "part", "MetricStat": assertions.Match_ObjectLike(&map[string]interface{}{
				"Metric": map[string]interface{}{
					"Namespace":  "LLMGateway",
					"MetricName": "Fallbacks",
					"Dimensions": []interface{}{map[string]interface{}{"Name": "Stage", "Value": "dev"}},
				},
				"Stat": "Sum",
			})}),
		}),
	})
	f.props(t, "AWS::CloudWatch::Alarm", map[string]interface{}{
		"AlarmName":          "llmgw-dev-5xx-rate",
		"Threshold":          5,
		"ComparisonOperator": "GreaterThanThreshold",
		"Metrics":            expr(`FILL\(part, 0\)`),
	})
	f.props(t, "AWS::CloudWatch::Alarm", map[string]interface{}{
		"AlarmName":          "llmgw-dev-breaker-open",
		"Namespace":          "LLMGateway",
		"MetricName":         "BreakerOpen",
		"Dimensions":         []interface{}{map[string]interface{}{"Name": "Stage", "Value": "dev"}},
		"Statistic":          "Sum",
		"Period":             300,
		"Threshold":          1,
		"ComparisonOperator": "GreaterThanOrEqualToThreshold",
	})
	f.props(t, "AWS::CloudWatch::Alarm", map[string]interface{}{
		"AlarmName":          "llmgw-dev-rollup-failure",
		"Threshold":          1,
		"ComparisonOperator": "GreaterThanOrEqualToThreshold",
		"Metrics":            expr(`^FILL\(failures, 0\) \+ FILL\(errors, 0\)$`),
	})
	for _, name := range []string{"llmgw-dev-config-reload", "llmgw-dev-throttles"} {
		f.props(t, "AWS::CloudWatch::Alarm", map[string]interface{}{"AlarmName": name})
	}
	queue, dlq := f.logicalID(f.g.UsageQueue), f.logicalID(f.g.UsageDLQ)
	f.props(t, "AWS::CloudWatch::Alarm", map[string]interface{}{
		"AlarmName":          "llmgw-dev-usage-spill-age",
		"Namespace":          "AWS/SQS",
		"MetricName":         "ApproximateAgeOfOldestMessage",
		"Dimensions":         []interface{}{map[string]interface{}{"Name": "QueueName", "Value": map[string]interface{}{"Fn::GetAtt": []interface{}{queue, "QueueName"}}}},
		"Statistic":          "Maximum",
		"Threshold":          7200,
		"ComparisonOperator": "GreaterThanOrEqualToThreshold",
	})
	f.props(t, "AWS::CloudWatch::Alarm", map[string]interface{}{
		"AlarmName":          "llmgw-dev-usage-spill-dlq",
		"MetricName":         "ApproximateNumberOfMessagesVisible",
		"Dimensions":         []interface{}{map[string]interface{}{"Name": "QueueName", "Value": map[string]interface{}{"Fn::GetAtt": []interface{}{dlq, "QueueName"}}}},
		"Threshold":          1,
		"ComparisonOperator": "GreaterThanOrEqualToThreshold",
	})
}

// TestUsageSpillQueue: the queue of usage records the table did not take
// is encrypted, TLS-only, keeps messages 14 days and has a dead-letter
// queue; the gateway may only send to it and the rollup only consume it.
func TestUsageSpillQueue(t *testing.T) {
	f := get(t, "default")
	queue, dlq := f.logicalID(f.g.UsageQueue), f.logicalID(f.g.UsageDLQ)
	f.count(t, "AWS::SQS::Queue", 2)
	f.propsCount(t, "AWS::SQS::Queue", map[string]interface{}{
		"SqsManagedSseEnabled":   true,
		"MessageRetentionPeriod": 14 * 24 * 3600,
	}, 2)
	f.props(t, "AWS::SQS::Queue", map[string]interface{}{
		"RedrivePolicy": map[string]interface{}{
			"deadLetterTargetArn": map[string]interface{}{"Fn::GetAtt": []interface{}{dlq, "Arn"}},
			"maxReceiveCount":     50,
		},
	})
	f.propsCount(t, "AWS::SQS::QueuePolicy", map[string]interface{}{
		"PolicyDocument": assertions.Match_ObjectLike(&map[string]interface{}{
			"Statement": assertions.Match_ArrayWith(&[]interface{}{assertions.Match_ObjectLike(&map[string]interface{}{
				"Effect":    "Deny",
				"Condition": map[string]interface{}{"Bool": map[string]interface{}{"aws:SecureTransport": "false"}},
			})}),
		}),
	}, 2)
	queueArn := "${" + queue + ".Arn}"
	for role, want := range map[string][]string{
		"GatewayRole": {"sqs:GetQueueAttributes", "sqs:GetQueueUrl", "sqs:SendMessage"},
		"RollupRole":  {"sqs:ChangeMessageVisibility", "sqs:DeleteMessage", "sqs:GetQueueAttributes", "sqs:GetQueueUrl", "sqs:ReceiveMessage"},
	} {
		var got []string
		for _, s := range f.statements() {
			acts := asList(s.body["Action"])
			if !strings.Contains(s.roles, role) || len(acts) == 0 || !strings.HasPrefix(flatten(acts[0]), "sqs:") {
				continue
			}
			if r := resourcesOf(s); !reflect.DeepEqual(r, []string{queueArn}) {
				t.Errorf("%s: sqs statement on %v, want only the spill queue", role, r)
			}
			for _, a := range acts {
				got = append(got, flatten(a))
			}
		}
		sort.Strings(got)
		if !reflect.DeepEqual(got, want) {
			t.Errorf("%s sqs actions %v, want %v", role, got, want)
		}
	}
	f.output(t, "UsageQueueUrl", map[string]interface{}{"Value": map[string]interface{}{"Ref": queue}})
}

func TestDashboard(t *testing.T) {
	f := get(t, "default")
	f.count(t, "AWS::CloudWatch::Dashboard", 1)
	var body string
	for _, r := range f.resources("AWS::CloudWatch::Dashboard") {
		body = flatten(r["Properties"].(map[string]interface{})["DashboardBody"])
	}
	for _, want := range []string{
		`SEARCH('{LLMGateway,Stage,Team} MetricName=\"CostUSD\" Stage=\"dev\"', 'Sum', 3600)`,
		`SEARCH('{LLMGateway,Stage,Team} MetricName=\"Requests\" Stage=\"dev\"'`,
		`SEARCH('{LLMGateway,Stage,Team} MetricName=\"Fallbacks\" Stage=\"dev\"'`,
		`SEARCH('{LLMGateway,Stage,Route} MetricName=\"TimeToFirstTokenMs\" Stage=\"dev\"', 'p99', 300)`,
		`SEARCH('{LLMGateway,Stage,Target} MetricName=\"BreakerOpen\"`,
		`["LLMGateway","TimeToFirstTokenMs","Stage","dev",{"label":"p50","stat":"p50"}]`,
		`["LLMGateway","TimeToFirstTokenMs","Stage","dev",{"label":"p99","stat":"p99"}]`,
		// The per-route view (the status page's, issue 26).
		`SEARCH('{LLMGateway,Stage,Route} MetricName=\"Fallbacks\" Stage=\"dev\"', 'Sum', 300)`,
		`SEARCH('{LLMGateway,Stage,Route} MetricName=\"Errors5xx\" Stage=\"dev\"', 'Sum', 300)`,
		`SEARCH('{LLMGateway,Stage,Route} MetricName=\"TimeToFirstTokenMs\" Stage=\"dev\"', 'p95', 300)`,
		`SEARCH('{LLMGateway,Stage,Target,Category} MetricName=\"AttemptErrors\" Stage=\"dev\"', 'Sum', 300)`,
		`SEARCH('{LLMGateway,Stage,Target} MetricName=\"AttemptTimeToFirstTokenMs\" Stage=\"dev\"', 'p95', 300)`,
		`Per route and target`,
	} {
		if !strings.Contains(body, want) {
			t.Errorf("dashboard lacks %s", want)
		}
	}
}

func TestOutputs(t *testing.T) {
	f := get(t, "default")
	f.output(t, "FunctionUrl", map[string]interface{}{
		"Value": map[string]interface{}{"Fn::GetAtt": []interface{}{f.logicalID(f.g.URL), "FunctionUrl"}},
	})
	f.output(t, "TableName", map[string]interface{}{
		"Value": map[string]interface{}{"Ref": f.logicalID(f.g.Table)},
	})
	f.output(t, "ConfigPath", map[string]interface{}{"Value": "/llmgw/dev/config/"})
}

func TestContextOverrides(t *testing.T) {
	f := get(t, "prod")
	if got := *f.g.Stack.StackName(); got != "llmgw-prod" {
		t.Errorf("stack name = %s", got)
	}
	f.props(t, "AWS::Lambda::Url", map[string]interface{}{
		"AuthType":   "AWS_IAM",
		"InvokeMode": "RESPONSE_STREAM",
	})
	// With AWS_IAM there is no public invoke permission.
	f.propsCount(t, "AWS::Lambda::Permission", map[string]interface{}{
		"Principal": "*",
	}, 0)
	f.props(t, "AWS::Lambda::Function", map[string]interface{}{
		"ReservedConcurrentExecutions": 50,
		"MemorySize":                   2048,
		"Timeout":                      300,
		"Environment": map[string]interface{}{"Variables": assertions.Match_ObjectLike(&map[string]interface{}{
			deployment.EnvStage:         "prod",
			deployment.EnvConfigPath:    "/llmgw/prod/config/",
			deployment.EnvConfigRefresh: "1m",
			// The gateway trusts the caller Lambda verified.
			deployment.EnvFunctionURLAuthType: "AWS_IAM",
		})},
	})
	f.resource(t, "AWS::DynamoDB::Table", map[string]interface{}{
		"DeletionPolicy": "Delete",
		"Properties":     assertions.Match_ObjectLike(&map[string]interface{}{"DeletionProtectionEnabled": false}),
	})
	f.propsCount(t, "AWS::Logs::LogGroup", map[string]interface{}{
		"RetentionInDays": 90,
	}, 2)
	f.resource(t, "AWS::Logs::LogGroup", map[string]interface{}{"DeletionPolicy": "Delete"})
	f.props(t, "AWS::SSM::Parameter", map[string]interface{}{
		"Name":  "/llmgw/prod/config/00-base",
		"Value": assertions.Match_StringLikeRegexp(jsii.String("/llmgw/prod/keys/openai/1")),
	})
	topic := "arn:aws:sns:eu-west-1:123456789012:ops-alerts"
	f.propsCount(t, "AWS::CloudWatch::Alarm", map[string]interface{}{
		"AlarmActions": []interface{}{topic},
		"OKActions":    []interface{}{topic},
	}, 10)
	f.props(t, "AWS::CloudWatch::Alarm", map[string]interface{}{
		"AlarmName": "llmgw-prod-fallback-rate",
		"Threshold": 35,
	})
	for _, s := range f.bySid(t, "GatewayRole", "InvokeBedrockModels") {
		got := strings.Join(resourcesOf(s), " ")
		for _, want := range []string{
			":bedrock:us-west-2::foundation-model/*",
			"arn:${AWS::Partition}:bedrock:${AWS::Region}::foundation-model/*",
			"arn:${AWS::Partition}:bedrock:us-east-1::foundation-model/*",
			"arn:${AWS::Partition}:bedrock:us-east-1:${AWS::AccountId}:inference-profile/*",
			"arn:${AWS::Partition}:bedrock:${AWS::Region}:${AWS::AccountId}:application-inference-profile/*",
		} {
			if !strings.Contains(got, want) {
				t.Errorf("bedrockModels \"*\": the wide grant lacks %s: %s", want, got)
			}
		}
	}
	for _, s := range f.bySid(t, "GatewayRole", "InvokeBedrockModelsViaInferenceProfiles") {
		if !strings.Contains(flatten(s.body["Condition"]), "bedrock:InferenceProfileArn") {
			t.Errorf("cross-region foundation-model statement must be conditioned on the inference profile")
		}
	}
}

func TestPinnedEnvironment(t *testing.T) {
	f := get(t, "pinned")
	for _, s := range f.bySid(t, "GatewayRole", "InvokeBedrockModels") {
		got := resourcesOf(s)
		want := []string{
			"arn:aws:bedrock:eu-west-1:123456789012:application-inference-profile/*",
			"arn:aws:bedrock:eu-west-1:123456789012:inference-profile/*",
			"arn:aws:bedrock:eu-west-1::foundation-model/*",
			"arn:aws:bedrock:us-east-1:123456789012:application-inference-profile/*",
			"arn:aws:bedrock:us-east-1:123456789012:inference-profile/*",
			"arn:aws:bedrock:us-east-1::foundation-model/*",
		}
		if !reflect.DeepEqual(got, want) {
			t.Errorf("pinned bedrock resources = %v, want %v", got, want)
		}
	}
}

// TestNagAwsSolutions runs the cdk-nag AwsSolutions pack on every fixture:
// no unsuppressed error or warning may remain.
func TestNagAwsSolutions(t *testing.T) {
	for _, name := range []string{"default", "prod", "pinned"} {
		f := get(t, name)
		ann := assertions.Annotations_FromStack(f.g.Stack)
		match := assertions.Match_StringLikeRegexp(jsii.String("AwsSolutions-.*"))
		for level, msgs := range map[string]*[]*cxapi.SynthesisMessage{
			"error":   ann.FindError(jsii.String("*"), match),
			"warning": ann.FindWarning(jsii.String("*"), match),
		} {
			for _, m := range *msgs {
				t.Errorf("%s: unsuppressed cdk-nag %s at %s: %v", name, level, *m.Id, m.Entry.Data)
			}
		}
	}
}

// TestNagHarnessSeesFindings proves the cdk-nag wiring used above reports
// findings at all: a deliberately non-compliant stack must produce an IAM5
// error and a DDB3 warning.
func TestNagHarnessSeesFindings(t *testing.T) {
	app := awscdk.NewApp(nil)
	stack := awscdk.NewStack(app, jsii.String("nag-probe"), nil)
	role := awsiam.NewRole(stack, jsii.String("Role"), &awsiam.RoleProps{
		AssumedBy: awsiam.NewServicePrincipal(jsii.String("lambda.amazonaws.com"), nil),
	})
	role.AddToPrincipalPolicy(awsiam.NewPolicyStatement(&awsiam.PolicyStatementProps{
		Actions:   jsii.Strings("s3:GetObject"),
		Resources: jsii.Strings("*"),
	}))
	awsdynamodb.NewTable(stack, jsii.String("Table"), &awsdynamodb.TableProps{
		PartitionKey: &awsdynamodb.Attribute{Name: jsii.String(deployment.AttrPK), Type: awsdynamodb.AttributeType_STRING},
	})
	awscdk.Aspects_Of(app).Add(cdknag.NewAwsSolutionsChecks(nil), nil)
	ann := assertions.Annotations_FromStack(stack)
	if n := len(*ann.FindError(jsii.String("*"), assertions.Match_StringLikeRegexp(jsii.String("AwsSolutions-IAM5.*")))); n == 0 {
		t.Error("cdk-nag reported no IAM5 error for Resource \"*\"")
	}
	if n := len(*ann.FindWarning(jsii.String("*"), assertions.Match_StringLikeRegexp(jsii.String("AwsSolutions-DDB3.*")))); n == 0 {
		t.Error("cdk-nag reported no DDB3 warning for a table without PITR")
	}
}

func TestSuppressionsHaveReasons(t *testing.T) {
	f := get(t, "default")
	var n int
	for id, r := range f.json["Resources"].(map[string]interface{}) {
		md, _ := r.(map[string]interface{})["Metadata"].(map[string]interface{})
		nag, _ := md["cdk_nag"].(map[string]interface{})
		for _, s := range asList(nag["rules_to_suppress"]) {
			n++
			reason, _ := s.(map[string]interface{})["reason"].(string)
			if len(reason) < 40 {
				t.Errorf("%s: suppression %v has no specific reason", id, s)
			}
		}
	}
	if n == 0 {
		t.Error("no cdk-nag suppressions found in metadata")
	}
}

func TestSynthWithoutOutdir(t *testing.T) {
	ctx := cdkJSONContext(t)
	ctx[CtxAssetDir] = assetDir
	app := awscdk.NewApp(&awscdk.AppProps{Context: &ctx})
	s, err := FromContext(app.Node(), readSeed(t))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := New(app, s); err != nil {
		t.Fatal(err)
	}
	asm := app.Synth(nil)
	if _, err := os.Stat(filepath.Join(*asm.Directory(), "llmgw-dev.template.json")); err != nil {
		t.Errorf("synthesized template not written: %v", err)
	}
	if tmpl := asm.GetStackByName(jsii.String("llmgw-dev")).Template(); tmpl == nil {
		t.Error("no template in assembly")
	}
}

func TestMissingAssetsFailClearly(t *testing.T) {
	s := DefaultSettings()
	s.SeedConfig = readSeed(t)
	s.AssetDir = filepath.Join(t.TempDir(), "nothing-here")
	_, err := New(awscdk.NewApp(nil), s)
	if err == nil || !strings.Contains(err.Error(), "build-lambda.sh") {
		t.Errorf("err = %v", err)
	}
}

func TestSettingsDefaultsMatchCdkJSON(t *testing.T) {
	ctx := cdkJSONContext(t)
	app := awscdk.NewApp(&awscdk.AppProps{Context: &ctx})
	got, err := FromContext(app.Node(), []byte("teams: {}\n"))
	if err != nil {
		t.Fatal(err)
	}
	want := DefaultSettings()
	want.SeedConfig = []byte("teams: {}\n")
	if err := want.Validate(); err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("cdk.json context and DefaultSettings disagree:\n cdk.json: %+v\n defaults: %+v", got, want)
	}
}

func TestSettingsRejectBadContext(t *testing.T) {
	for _, tc := range []map[string]interface{}{
		{"stage": "Prod"},
		{"stage": "a/b"},
		{"removalPolicy": "snapshot"},
		{"functionUrlAuthType": "COGNITO"},
		{"gatewayMemorySize": "lots"},
		{"gatewayTimeout": "20m"},
		{"gatewayReservedConcurrency": "-1"},
		{"logRetentionDays": "31"},
		{"configRefresh": "soon"},
		{"fallbackRateThreshold": "0"},
		{"alarmTopicArn": "ops-alerts"},
		{"nag": "maybe"},
		{"tableKmsKey": "alias/mine"},
		{"seedConfigFile": "/nonexistent/seed.yaml"},
		{"corsAllowedOrigins": "https://x.example.com"}, // server.cors in the seed config now
		{"trafficShifting": "blue-green"},
		{"latencyThresholdMs": "0"},
	} {
		ctx := tc
		app := awscdk.NewApp(&awscdk.AppProps{Context: &ctx})
		if _, err := FromContext(app.Node(), []byte("teams: {}\n")); err == nil {
			t.Errorf("context %v accepted", tc)
		}
	}
	// JSON numbers (cdk.json) and strings (-c) are both accepted.
	if s, err := FromContext(awscdk.NewApp(nil).Node(), []byte("teams: {}\n")); err != nil || s.GatewayReservedConcurrency == nil ||
		*s.GatewayReservedConcurrency != DefaultGatewayReservedConcurrency {
		t.Errorf("default reserved concurrency: %v %v", s.GatewayReservedConcurrency, err)
	}
	none := map[string]interface{}{"gatewayReservedConcurrency": "none"}
	if s, err := FromContext(awscdk.NewApp(&awscdk.AppProps{Context: &none}).Node(), []byte("teams: {}\n")); err != nil || s.GatewayReservedConcurrency != nil {
		t.Errorf("reserved concurrency none: %v %v", s.GatewayReservedConcurrency, err)
	}
	ctx := map[string]interface{}{"gatewayReservedConcurrency": 0, "gatewayTimeout": "90s", "corsAllowedOrigins": []interface{}{}}
	s, err := FromContext(awscdk.NewApp(&awscdk.AppProps{Context: &ctx}).Node(), []byte("teams: {}\n"))
	if err != nil {
		t.Fatal(err)
	}
	if s.GatewayReservedConcurrency == nil || *s.GatewayReservedConcurrency != 0 || s.GatewayTimeout.Seconds() != 90 {
		t.Errorf("parsed %+v", s)
	}
}

// TestOTelCollectorLayerIsOptIn: with otelCollectorLayerArn the gateway
// function gets that layer and may send traces to X-Ray (where the
// layer's default configuration exports them); without it, neither.
func TestOTelCollectorLayerIsOptIn(t *testing.T) {
	on, off := get(t, "otel"), get(t, "default")
	gatewayLayers := func(f *fixture) any {
		for _, r := range f.resources("AWS::Lambda::Function") {
			p := r["Properties"].(map[string]interface{})
			if strings.Contains(flatten(p["Description"]), "llmgw gateway") {
				return p["Layers"]
			}
		}
		t.Fatal("no gateway function")
		return nil
	}
	if got := flatten(gatewayLayers(on)); !strings.Contains(got, otelLayerARN) {
		t.Errorf("gateway layers %s, want the collector layer", got)
	}
	if got := gatewayLayers(off); got != nil {
		t.Errorf("gateway layers without the setting: %v", got)
	}
	policies := func(f *fixture) string {
		var b strings.Builder
		for _, r := range f.resources("AWS::IAM::Policy") {
			b.WriteString(flatten(r["Properties"]))
		}
		return b.String()
	}
	if p := policies(on); !strings.Contains(p, "xray:PutTraceSegments") {
		t.Error("no X-Ray grant with the collector layer")
	}
	if p := policies(off); strings.Contains(p, "xray:") {
		t.Error("an X-Ray grant without the collector layer")
	}
	var s Settings
	s = DefaultSettings()
	s.OTelCollectorLayerARN = "not-an-arn"
	if err := s.Validate(); err == nil || !strings.Contains(err.Error(), CtxOTelCollectorLayerARN) {
		t.Errorf("a bad layer ARN: %v", err)
	}
}
