package gwstack

import (
	"sort"
	"strings"

	"github.com/aws/aws-cdk-go/awscdk/v2"
	"github.com/aws/aws-cdk-go/awscdk/v2/awsiam"
	"github.com/aws/jsii-runtime-go"
)

// gatewayTableActions are the item-level DynamoDB actions the gateway needs
// (keys, budgets, usage records, breaker state). No Scan, no table
// management.
var gatewayTableActions = []string{
	"dynamodb:GetItem",
	"dynamodb:BatchGetItem",
	"dynamodb:Query",
	"dynamodb:PutItem",
	"dynamodb:UpdateItem",
	"dynamodb:DeleteItem",
	"dynamodb:BatchWriteItem",
	"dynamodb:ConditionCheckItem",
}

// rollupTableActions add Scan for the rollup, a batch job that may walk the
// whole table.
var rollupTableActions = append(append([]string{}, gatewayTableActions...), "dynamodb:Scan")

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

// grantBedrock allows Converse/ConverseStream in the Bedrock regions:
//   - foundation models invoked directly in those regions;
//   - system-defined and application inference profiles of this account in
//     those regions;
//   - foundation models in any region, but only when reached through one of
//     those inference profiles: a cross-region profile such as
//     "us.anthropic..." routes each request to one of several regions, and
//     Bedrock checks the foundation-model permission in the destination.
func (g *Gateway) grantBedrock(role awsiam.IRole) {
	if len(g.bedrockRegions) == 0 {
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
