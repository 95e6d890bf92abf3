package gwstack

import (
	"reflect"
	"sort"
	"strings"
	"testing"
)

// guardrailSeed is appended to the seed config of the guardrail fixture.
const guardrailSeed = `moderation:
  policies:
    aws:
      guardrail: {id: abc123def456, version: "1", region: eu-west-1}
      output: true
    aws-arn:
      guardrail: {id: "arn:aws:bedrock:us-east-1:123456789012:guardrail/zz9yy8", version: DRAFT}
`

// mantleRoute is inserted into the routes of the guardrail fixture's seed
// config: OpenAI's model on bedrock-mantle, in the bedrock provider's region.
const mantleRoute = "  gpt-oss-mantle: {targets: [{provider: bedrock, model: openai.gpt-oss-120b-1:0, options: {openai_endpoint: mantle}}]}\n"

// gatewayActions returns the sorted distinct actions of a role's
// statements with the given action prefix.
func (f *fixture) roleActions(role, prefix string) []string {
	seen := map[string]bool{}
	var out []string
	for _, s := range f.statements() {
		if !strings.Contains(s.roles, role) {
			continue
		}
		for _, a := range asList(s.body["Action"]) {
			if a := a.(string); strings.HasPrefix(a, prefix) && !seen[a] {
				seen[a] = true
				out = append(out, a)
			}
		}
	}
	sort.Strings(out)
	return out
}

// The table grants are the store's calls on Lambda (pkg/store/dynamo:
// GetItem, conditional PutItem and UpdateItem, Query), for both functions:
// no batch writes, Scan or table management. DeleteItem is the gateway's
// only, on the Responses API's owner records and the fleet-wide
// concurrency slots alone (their partition keys, dynamodb:LeadingKeys).
func TestIAMTableActionsAreWhatTheStoreCalls(t *testing.T) {
	items := []string{"dynamodb:GetItem", "dynamodb:PutItem", "dynamodb:Query", "dynamodb:UpdateItem"}
	for _, name := range []string{"default", "prod"} {
		f := get(t, name)
		if got := f.roleActions("RollupRole", "dynamodb:"); !reflect.DeepEqual(got, items) {
			t.Errorf("%s rollup: dynamodb actions %v, want %v", name, got, items)
		}
		want := append([]string{"dynamodb:DeleteItem"}, items...)
		if got := f.roleActions("GatewayRole", "dynamodb:"); !reflect.DeepEqual(got, want) {
			t.Errorf("%s gateway: dynamodb actions %v, want %v", name, got, want)
		}
		for _, s := range f.statements() {
			if !strings.Contains(s.roles, "GatewayRole") || !strings.Contains(flatten(s.body["Action"]), "dynamodb:DeleteItem") {
				continue
			}
			if s.body["Sid"] != "DeleteResponseOwnersAndSlots" || flatten(s.body["Action"]) != "dynamodb:DeleteItem" ||
				flatten(s.body["Condition"]) != `{"ForAllValues:StringLike":{"dynamodb:LeadingKeys":["response#*","conc#*"]}}` {
				t.Errorf("%s: DeleteItem granted beyond the response owners: %s", name, flatten(s.body))
			}
		}
	}
}

// With the seed config naming every model its Bedrock targets call, the
// gateway may invoke exactly those: the default seed's cross-region
// profile us.anthropic.claude-sonnet-4-5-20250929-v1:0 in us-east-1, and
// its foundation model in any region only through that profile. No
// foundation-model/* or inference-profile/* wildcard is left.
func TestBedrockGrantIsTheConfiguredModels(t *testing.T) {
	f := get(t, "default")
	const id = "us.anthropic.claude-sonnet-4-5-20250929-v1:0"
	for _, s := range f.bySid(t, "GatewayRole", "InvokeBedrockModels") {
		want := []string{
			"arn:${AWS::Partition}:bedrock:us-east-1:${AWS::AccountId}:inference-profile/" + id,
			"arn:${AWS::Partition}:bedrock:us-east-1::foundation-model/" + id,
		}
		if got := resourcesOf(s); !reflect.DeepEqual(got, want) {
			t.Errorf("InvokeBedrockModels resources %v, want %v", got, want)
		}
	}
	for _, s := range f.bySid(t, "GatewayRole", "InvokeBedrockModelsViaInferenceProfiles") {
		if got := resourcesOf(s); !reflect.DeepEqual(got, []string{"arn:${AWS::Partition}:bedrock:*::foundation-model/anthropic.claude-sonnet-4-5-20250929-v1:0"}) {
			t.Errorf("via-profile resources %v", got)
		}
		cond := flatten(s.body["Condition"])
		if !strings.Contains(cond, "bedrock:InferenceProfileArn") || !strings.Contains(cond, "us-east-1:${AWS::AccountId}:inference-profile/"+id) {
			t.Errorf("via-profile condition %s", cond)
		}
	}
	for _, s := range f.statements() {
		if b := flatten(s.body["Resource"]); strings.Contains(s.roles, "GatewayRole") && strings.Contains(b, "bedrock:") && strings.Contains(b, "/*") {
			t.Errorf("a Bedrock wildcard is left: %s", b)
		}
	}
	if got := f.roleActions("GatewayRole", "bedrock:"); !reflect.DeepEqual(got, []string{"bedrock:InvokeModel", "bedrock:InvokeModelWithResponseStream"}) {
		t.Errorf("bedrock actions without guardrails: %v", got)
	}
}

// bedrock:ApplyGuardrail is granted on exactly the guardrails the seed
// config's moderation policies apply (an id in its policy's region, an
// ARN as it is) and those of the guardrailIds context (an id in the stack
// region); "none" leaves the gateway without reserved concurrency.
func TestGuardrailGrantIsTheConfiguredGuardrails(t *testing.T) {
	f := get(t, "guardrail")
	for _, s := range f.bySid(t, "GatewayRole", "ApplyBedrockGuardrails") {
		want := []string{
			"arn:${AWS::Partition}:bedrock:${AWS::Region}:${AWS::AccountId}:guardrail/xyz789",
			"arn:${AWS::Partition}:bedrock:eu-west-1:${AWS::AccountId}:guardrail/abc123def456",
			"arn:aws:bedrock:ap-south-1:123456789012:guardrail/q1w2e3",
			"arn:aws:bedrock:us-east-1:123456789012:guardrail/zz9yy8",
		}
		if got := resourcesOf(s); !reflect.DeepEqual(got, want) {
			t.Errorf("ApplyBedrockGuardrails resources %v, want %v", got, want)
		}
		if got := asList(s.body["Action"]); len(got) != 1 && s.body["Action"] != "bedrock:ApplyGuardrail" {
			t.Errorf("actions %v", got)
		}
	}
	for _, s := range f.statements() {
		if strings.Contains(s.roles, "RollupRole") && strings.Contains(flatten(s.body), "ApplyGuardrail") {
			t.Errorf("the rollup may apply guardrails: %s", flatten(s.body))
		}
	}
	for _, fn := range f.resources("AWS::Lambda::Function") {
		if _, ok := fn["Properties"].(map[string]interface{})["ReservedConcurrentExecutions"]; ok {
			t.Errorf("gatewayReservedConcurrency none: a function still reserves concurrency")
		}
	}
	if got := get(t, "default").roleActions("GatewayRole", "bedrock:ApplyGuardrail"); len(got) != 0 {
		t.Errorf("no guardrail configured, yet %v", got)
	}
}

// bedrock-mantle:CreateInference is granted on this account's mantle
// projects in the regions of the seed config's mantle targets, and not at
// all without one (bedrock:InvokeModel does not cover mantle).
func TestMantleGrantIsTheConfiguredMantleRegions(t *testing.T) {
	f := get(t, "guardrail")
	got := f.bySid(t, "GatewayRole", "InvokeBedrockMantle")
	for _, s := range got {
		if r := resourcesOf(s); !reflect.DeepEqual(r, []string{"arn:${AWS::Partition}:bedrock-mantle:us-east-1:${AWS::AccountId}:project/*"}) {
			t.Errorf("InvokeBedrockMantle resources %v", r)
		}
	}
	if a := f.roleActions("GatewayRole", "bedrock-mantle:"); !reflect.DeepEqual(a, []string{"bedrock-mantle:CreateInference"}) {
		t.Errorf("mantle actions %v", a)
	}
	if a := get(t, "default").roleActions("GatewayRole", "bedrock-mantle:"); len(a) != 0 {
		t.Errorf("no mantle target configured, yet %v", a)
	}
	if a := f.roleActions("RollupRole", "bedrock-mantle:"); len(a) != 0 {
		t.Errorf("the rollup may call mantle: %v", a)
	}
}

// The seed config readers behind the grants.
func TestSeedConfigModelsAndGuardrails(t *testing.T) {
	models, complete, err := BedrockModels(`providers: {b: {kind: bedrock, region: eu-west-1}, o: {kind: openai}}
routes:
  r1: {targets: [{provider: b, model: anthropic.claude-x-v1:0}, {provider: o, model: gpt}]}
  r2: {targets: [{provider: b, model: anthropic.claude-x-v1:0}]}
`)
	if err != nil || !complete || !reflect.DeepEqual(models, []BedrockModel{{Region: "eu-west-1", ID: "anthropic.claude-x-v1:0"}}) {
		t.Errorf("BedrockModels = %v %v %v", models, complete, err)
	}
	if _, complete, _ := BedrockModels("providers: {b: {kind: bedrock}}\nroutes: {r: {targets: [{provider: b}]}}\n"); complete {
		t.Error("a Bedrock target without a model must make the list incomplete (wide grant)")
	}
	regions, err := MantleRegions("providers: {b: {kind: bedrock, region: eu-west-1}, c: {kind: bedrock}}\nroutes:\n" +
		"  r: {targets: [{provider: b, model: openai.gpt-oss-120b-1:0, options: {openai_endpoint: mantle}}, {provider: c, model: openai.gpt-oss-20b-1:0}]}\n")
	if err != nil || !reflect.DeepEqual(regions, []string{"eu-west-1"}) {
		t.Errorf("MantleRegions = %v %v (only the mantle target's region)", regions, err)
	}
	gs, err := Guardrails(guardrailSeed)
	if err != nil || len(gs) != 2 || gs[0] != (Guardrail{Region: "eu-west-1", ID: "abc123def456"}) {
		t.Errorf("Guardrails = %v %v", gs, err)
	}
	if profileModel("us.anthropic.claude-x-v1:0") != "anthropic.claude-x-v1:0" || profileModel("anthropic.claude-x-v1:0") != "" {
		t.Error("profileModel")
	}
}
