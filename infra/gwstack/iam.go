package gwstack

import (
	"sort"
	"strings"

	"github.com/aws/aws-cdk-go/awscdk/v2"
	"github.com/aws/aws-cdk-go/awscdk/v2/awsiam"
	"github.com/aws/jsii-runtime-go"

	"github.com/llmgw/llmgw/pkg/store"
)

// gatewayTableActions are the item-level DynamoDB actions the gateway
// calls (pkg/store/dynamo on Lambda: GetItem, conditional PutItem and
// UpdateItem, Query) on keys, budgets, usage records and breaker state. No
// batch writes, no Scan, no table management: no code path on Lambda
// calls them (DescribeTable and CreateTable are local mode's
// EnsureTable). DeleteItem has two callers, the Responses API's owner
// records (responsestate.Owners.Delete) and the fleet-wide concurrency
// slots (pkg/teams, freed at settlement), and is granted on their
// partitions only (grantDeletes). A new call needs its
// action here, and TestIAMTableActionsAreWhatTheStoreCalls updated.
var gatewayTableActions = []string{
	"dynamodb:GetItem",
	"dynamodb:Query",
	"dynamodb:PutItem",
	"dynamodb:UpdateItem",
}

// rollupTableActions are the rollup's: the same store calls (it reads
// records by Query, one team and day at a time; it never scans).
var rollupTableActions = gatewayTableActions

// ssmReadActions read parameters by name and by path.
var ssmReadActions = []string{
	"ssm:GetParametersByPath",
	"ssm:GetParameters",
	"ssm:GetParameter",
}

// bedrockInvokeActions cover Converse (InvokeModel) and ConverseStream
// (InvokeModelWithResponseStream).
var bedrockInvokeActions = []string{
	"bedrock:InvokeModel",
	"bedrock:InvokeModelWithResponseStream",
}

// tableKeyActions use a customer-managed table key through DynamoDB.
var tableKeyActions = []string{"kms:Decrypt", "kms:Encrypt", "kms:GenerateDataKey", "kms:DescribeKey"}

// grantTable allows actions on the table (and nothing else), and the use of
// its customer-managed key when it has one.
func (g *Gateway) grantTable(role awsiam.IRole, actions []string) {
	g.Table.Grant(role, *jsii.Strings(actions...)...)
	if g.TableKey != nil {
		g.addStatement(role, "UseTableKey", tableKeyActions, []*string{g.TableKey.KeyArn()},
			map[string]interface{}{"StringEquals": map[string]interface{}{"kms:ViaService": "dynamodb." + *g.Stack.Region() + ".amazonaws.com"}})
	}
}

// responseOwnerPK matches the partition keys of the Responses API's owner
// records (store.ResponseOwnerKey): "response#<response id>".
var responseOwnerPK = strings.TrimSuffix(store.ResponseOwnerKey("x").PK, "x") + "*"

// concurrencyPK matches the partition keys of the fleet-wide concurrency
// slots (store.ConcurrencyKey): "conc#<team>".
var concurrencyPK = strings.TrimSuffix(store.ConcurrencyPK("x"), "x") + "*"

// grantDeletes allows DeleteItem on the table's response-owner items and
// concurrency slots only (dynamodb:LeadingKeys): DELETE /v1/responses/{id}
// removes its owner record, a settled request its concurrency slot;
// nothing else is ever deleted.
func (g *Gateway) grantDeletes(role awsiam.IRole) {
	g.addStatement(role, "DeleteResponseOwnersAndSlots", []string{"dynamodb:DeleteItem"}, []*string{g.Table.TableArn()},
		map[string]interface{}{"ForAllValues:StringLike": map[string]interface{}{"dynamodb:LeadingKeys": []interface{}{responseOwnerPK, concurrencyPK}}})
}

// paramARN returns the ARN of the SSM parameter (or path) name, which must
// start with "/"; a trailing "*" is kept.
func (g *Gateway) paramARN(name string) *string {
	return g.Stack.FormatArn(&awscdk.ArnComponents{
		Service:      jsii.String("ssm"),
		Resource:     jsii.String("parameter"),
		ResourceName: jsii.String(strings.TrimPrefix(name, "/")),
		ArnFormat:    awscdk.ArnFormat_SLASH_RESOURCE_NAME,
	})
}

// pathARNs returns the ARN of a path (for GetParametersByPath) and of
// everything below it.
func (g *Gateway) pathARNs(path string) []*string {
	p := strings.TrimSuffix(path, "/")
	return []*string{g.paramARN(p), g.paramARN(p + "/*")}
}

func (g *Gateway) addStatement(role awsiam.IRole, sid string, actions []string, resources []*string, conditions map[string]interface{}) {
	props := &awsiam.PolicyStatementProps{
		Sid:       jsii.String(sid),
		Effect:    awsiam.Effect_ALLOW,
		Actions:   jsii.Strings(actions...),
		Resources: &resources,
	}
	if conditions != nil {
		props.Conditions = &conditions
	}
	role.AddToPrincipalPolicy(awsiam.NewPolicyStatement(props))
}

// grantConfigRead allows reading the configuration path only.
func (g *Gateway) grantConfigRead(role awsiam.IRole) {
	g.addStatement(role, "ReadGatewayConfig", ssmReadActions, g.pathARNs(g.Settings.ConfigPath()), nil)
}

// grantProviderKeys allows reading the provider key parameters and
// decrypting them through SSM. The KMS key is the account's AWS-managed
// aws/ssm key (or any key the operator chose), whose ID is unknown at synth
// time: the statement is limited to calls made by SSM in this region
// (kms:ViaService) for parameters under the keys path (the encryption
// context SSM attaches to every SecureString).
func (g *Gateway) grantProviderKeys(role awsiam.IRole) {
	keys := g.pathARNs(g.Settings.KeysPath())
	g.addStatement(role, "ReadProviderKeys", ssmReadActions, keys, nil)
	g.addStatement(role, "DecryptProviderKeysViaSSM", []string{"kms:Decrypt"},
		[]*string{g.Stack.FormatArn(&awscdk.ArnComponents{
			Service:      jsii.String("kms"),
			Resource:     jsii.String("key"),
			ResourceName: jsii.String("*"),
			ArnFormat:    awscdk.ArnFormat_SLASH_RESOURCE_NAME,
		})},
		map[string]interface{}{
			"StringEquals": map[string]interface{}{
				"kms:ViaService": "ssm." + *g.Stack.Region() + ".amazonaws.com",
			},
			"StringLike": map[string]interface{}{
				"kms:EncryptionContext:PARAMETER_ARN": *keys[1],
			},
		})
}

// bedrockARN formats a Bedrock ARN; account may be "" (foundation models)
// and region may be "*".
func (g *Gateway) bedrockARN(region, account, resource string) *string {
	return g.Stack.FormatArn(&awscdk.ArnComponents{
		Service:      jsii.String("bedrock"),
		Region:       jsii.String(region),
		Account:      jsii.String(account),
		Resource:     jsii.String(resource),
		ResourceName: jsii.String("*"),
		ArnFormat:    awscdk.ArnFormat_SLASH_RESOURCE_NAME,
	})
}

// grantBedrock allows Converse/ConverseStream (InvokeModel and
// InvokeModelWithResponseStream). When the seed config names every model
// its Bedrock targets call (BedrockModels) and the bedrockModels context
// setting is not "*", the grant is exactly those models (plus the
// context's), each in its provider's region:
//   - a model id X: foundation-model/X and this account's
//     inference-profile/X (an id is one or the other);
//   - a system inference profile (geo.vendor.model, e.g. us.anthropic...):
//     also foundation-model/vendor.model in any region, but only when
//     reached through that profile (bedrock:InferenceProfileArn), since a
//     cross-region profile routes each request to one of several regions
//     and Bedrock checks the foundation-model permission there;
//   - an ARN: itself; an (application) inference profile ARN also grants
//     the foundation models reached through it.
//
// Otherwise (a Bedrock target without a model, or "*") it is every
// foundation model and this account's inference profiles in the Bedrock
// regions, and foundation models in any region through those profiles.
func (g *Gateway) grantBedrock(role awsiam.IRole) {
	if len(g.bedrockRegions) == 0 {
		return
	}
	if direct, viaProfile, profiles, ok := g.bedrockModelResources(); ok {
		g.addStatement(role, "InvokeBedrockModels", bedrockInvokeActions, direct, nil)
		if len(viaProfile) > 0 {
			g.addStatement(role, "InvokeBedrockModelsViaInferenceProfiles", bedrockInvokeActions, viaProfile,
				map[string]interface{}{"ArnLike": map[string]interface{}{"bedrock:InferenceProfileArn": profiles}})
		}
		return
	}
	account := *g.Stack.Account()
	var direct, profiles []*string
	for _, r := range g.bedrockRegions {
		direct = append(direct, g.bedrockARN(r, "", "foundation-model"))
		profiles = append(profiles,
			g.bedrockARN(r, account, "inference-profile"),
			g.bedrockARN(r, account, "application-inference-profile"))
	}
	g.addStatement(role, "InvokeBedrockModels", bedrockInvokeActions, append(direct, profiles...), nil)
	viaProfile := make([]interface{}, len(profiles))
	for i, p := range profiles {
		viaProfile[i] = *p
	}
	g.addStatement(role, "InvokeBedrockModelsViaInferenceProfiles", bedrockInvokeActions,
		[]*string{g.bedrockARN("*", "", "foundation-model")},
		map[string]interface{}{
			"ArnLike": map[string]interface{}{"bedrock:InferenceProfileArn": viaProfile},
		})
}

// bedrockModelResources returns the narrow grant of grantBedrock: the
// models (and profiles) invoked directly, the foundation models reached
// through profiles and those profiles; ok is false when the wide grant
// applies.
func (g *Gateway) bedrockModelResources() (direct, viaProfile []*string, profiles []interface{}, ok bool) {
	models := append([]BedrockModel(nil), g.bedrockModels...)
	for _, id := range g.Settings.BedrockModels {
		if id == "*" {
			return nil, nil, nil, false
		}
		for _, r := range g.bedrockRegions {
			models = append(models, BedrockModel{Region: r, ID: id})
		}
	}
	if !g.bedrockModelsComplete || len(models) == 0 {
		return nil, nil, nil, false
	}
	account := *g.Stack.Account()
	seen := map[string]bool{}
	add := func(list *[]*string, arn *string) {
		if !seen[*arn] {
			seen[*arn] = true
			*list = append(*list, arn)
		}
	}
	for _, m := range models {
		region := m.Region
		if region == "" {
			region = *g.Stack.Region()
		}
		switch {
		case strings.HasPrefix(m.ID, "arn:"):
			add(&direct, jsii.String(m.ID))
			if i := strings.Index(m.ID, ":inference-profile/"); i >= 0 {
				profiles = append(profiles, m.ID)
				if fm := profileModel(m.ID[i+len(":inference-profile/"):]); fm != "" {
					add(&viaProfile, g.bedrockNamed("*", "", "foundation-model", fm))
				}
			} else if strings.Contains(m.ID, ":application-inference-profile/") {
				profiles = append(profiles, m.ID)
				add(&viaProfile, g.bedrockNamed("*", "", "foundation-model", "*"))
			}
		default:
			add(&direct, g.bedrockNamed(region, "", "foundation-model", m.ID))
			profile := g.bedrockNamed(region, account, "inference-profile", m.ID)
			add(&direct, profile)
			if fm := profileModel(m.ID); fm != "" {
				profiles = append(profiles, *profile)
				add(&viaProfile, g.bedrockNamed("*", "", "foundation-model", fm))
			}
		}
	}
	return direct, viaProfile, profiles, true
}

// profileModel returns the foundation model of a system inference profile
// id (geo.vendor.model: two dots or more), else "".
func profileModel(id string) string {
	geo, rest, ok := strings.Cut(id, ".")
	if !ok || geo == "" || !strings.Contains(rest, ".") {
		return ""
	}
	return rest
}

// bedrockNamed formats the ARN of one Bedrock resource.
func (g *Gateway) bedrockNamed(region, account, resource, name string) *string {
	return g.Stack.FormatArn(&awscdk.ArnComponents{
		Service:      jsii.String("bedrock"),
		Region:       jsii.String(region),
		Account:      jsii.String(account),
		Resource:     jsii.String(resource),
		ResourceName: jsii.String(name),
		ArnFormat:    awscdk.ArnFormat_SLASH_RESOURCE_NAME,
	})
}

// grantGuardrails allows bedrock:ApplyGuardrail on exactly the guardrails
// the seed config's moderation policies apply (Guardrails) and those of
// the guardrailIds context setting: an ARN as it is, an id in its policy's
// region (else the stack region). No guardrail, no statement.
func (g *Gateway) grantGuardrails(role awsiam.IRole) {
	gs := append([]Guardrail(nil), g.guardrails...)
	for _, id := range g.Settings.GuardrailIDs {
		gs = append(gs, Guardrail{ID: id})
	}
	seen := map[string]bool{}
	var arns []*string
	for _, gr := range gs {
		arn := gr.ID
		if !strings.HasPrefix(arn, "arn:") {
			region := gr.Region
			if region == "" {
				region = *g.Stack.Region()
			}
			arn = *g.bedrockNamed(region, *g.Stack.Account(), "guardrail", gr.ID)
		}
		if !seen[arn] {
			seen[arn] = true
			arns = append(arns, jsii.String(arn))
		}
	}
	if len(arns) > 0 {
		g.addStatement(role, "ApplyBedrockGuardrails", []string{"bedrock:ApplyGuardrail"}, arns, nil)
	}
}

// grantBedrockMantle allows bedrock-mantle:CreateInference (inference on
// Bedrock's mantle endpoint: OpenAI's Responses and Chat Completions for
// targets with openai_endpoint: mantle) on this account's mantle projects
// in the regions those targets' providers name (MantleRegions). No mantle
// target, no statement.
func (g *Gateway) grantBedrockMantle(role awsiam.IRole) {
	var arns []*string
	for _, region := range g.mantleRegions {
		if region == "" {
			region = *g.Stack.Region()
		}
		arns = append(arns, g.Stack.FormatArn(&awscdk.ArnComponents{
			Service:      jsii.String("bedrock-mantle"),
			Region:       jsii.String(region),
			Account:      g.Stack.Account(),
			Resource:     jsii.String("project"),
			ResourceName: jsii.String("*"),
			ArnFormat:    awscdk.ArnFormat_SLASH_RESOURCE_NAME,
		}))
	}
	if len(arns) > 0 {
		g.addStatement(role, "InvokeBedrockMantle", []string{"bedrock-mantle:CreateInference"}, arns, nil)
	}
}

// mergeRegions returns the distinct Bedrock regions: the stack region (a
// token when the stack is environment-agnostic) first, then the seed
// config's Bedrock regions and the extra regions from context, sorted.
func mergeRegions(stackRegion string, lists ...[]string) []string {
	seen := map[string]bool{}
	var out []string
	add := func(r string) {
		r = strings.TrimSpace(r)
		if r != "" && !seen[r] {
			seen[r] = true
			out = append(out, r)
		}
	}
	var rest []string
	for _, l := range lists {
		for _, r := range l {
			rest = append(rest, strings.TrimSpace(r))
		}
	}
	sort.Strings(rest)
	add(stackRegion)
	for _, r := range rest {
		add(r)
	}
	return out
}
