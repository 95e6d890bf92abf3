package gwstack

import (
	"fmt"
	"regexp"
	"strings"

	"github.com/aws/aws-cdk-go/awscdk/v2"
	"github.com/aws/aws-cdk-go/awscdk/v2/awsiam"
	"github.com/aws/jsii-runtime-go"
	"github.com/cdklabs/cdk-nag-go/cdknag/v2"
)

// nagARN returns a cdk-nag appliesTo regex for a resource ARN finding.
// cdk-nag renders unresolved partition, region and account as
// <AWS::Partition>, <AWS::Region> and <AWS::AccountId>; an
// environment-bound stack has literals instead, so both forms match.
// region and account may be "any" (any region or account form) or a literal
// such as "*" or "" (foundation models have no account).
func nagARN(service, region, account, resource string) *cdknag.RegexAppliesTo {
	part := func(v, token, literal string) string {
		if v == "any" {
			return "(" + token + "|" + literal + ")"
		}
		return regexp.QuoteMeta(v)
	}
	re := fmt.Sprintf(`^Resource::arn:(<AWS::Partition>|aws[a-z-]*):%s:%s:%s:%s$`,
		service,
		part(region, "<AWS::Region>", `[a-z0-9-]+`),
		part(account, "<AWS::AccountId>", `[0-9]{12}`),
		regexp.QuoteMeta(resource))
	return &cdknag.RegexAppliesTo{Regex: jsii.String("/" + strings.ReplaceAll(re, "/", `\/`) + "/")}
}

// suppressIAM5 suppresses AwsSolutions-IAM5 for the given findings on a
// role and its default policy.
func suppressIAM5(role awsiam.IRole, reason string, findings ...*cdknag.RegexAppliesTo) {
	applies := make([]interface{}, len(findings))
	for i, f := range findings {
		applies[i] = f
	}
	cdknag.NagSuppressions_AddResourceSuppressions(role, &[]*cdknag.NagPackSuppression{{
		Id:        jsii.String("AwsSolutions-IAM5"),
		Reason:    jsii.String(reason),
		AppliesTo: &applies,
	}}, jsii.Bool(true))
}

// addNagSuppressions records, next to the resources, why each cdk-nag
// AwsSolutions finding is accepted. Every suppression names the exact
// wildcard resource it covers (appliesTo); new wildcards still fail.
func (g *Gateway) addNagSuppressions() {
	config := strings.TrimPrefix(g.Settings.ConfigPath(), "/") + "*"
	keys := strings.TrimPrefix(g.Settings.KeysPath(), "/") + "*"
	for _, role := range []awsiam.IRole{g.gatewayRole, g.rollupRole} {
		suppressIAM5(role,
			"Config parameters: the functions load the whole configuration with GetParametersByPath on "+g.Settings.ConfigPath()+
				"; the wildcard covers only parameters below that path, whose names (00-base, 00-base-01, operator overlays) are not known at deploy time.",
			nagARN("ssm", "any", "any", "parameter/"+config))
	}
	suppressIAM5(g.gatewayRole,
		"Provider API keys are SecureString parameters that operators create after deployment under "+g.Settings.KeysPath()+
			"<provider>/<n> (CloudFormation cannot create SecureStrings); read access is limited to that path.",
		nagARN("ssm", "any", "any", "parameter/"+keys))
	suppressIAM5(g.gatewayRole,
		"SecureString provider keys are encrypted with the account's AWS-managed aws/ssm KMS key, whose key ID is account-specific and unknown at synth time. "+
			"kms:Decrypt is restricted by kms:ViaService=ssm.<region>.amazonaws.com and kms:EncryptionContext:PARAMETER_ARN to the keys path, so it only decrypts those parameters, through SSM.",
		nagARN("kms", "any", "any", "key/*"))

	if len(g.mantleRegions) > 0 {
		suppressIAM5(g.gatewayRole,
			"Inference on bedrock-mantle (OpenAI's models with openai_endpoint: mantle) is authorized on the account's mantle projects; "+
				"the model is named in the request, not the resource, so the grant is this account's projects in the configured regions only.",
			nagARN("bedrock-mantle", "any", "any", "project/*"))
	}
	var models, profiles []*cdknag.RegexAppliesTo
	var names []string
	for _, r := range g.bedrockRegions {
		region, name := r, r
		if *awscdk.Token_IsUnresolved(r) {
			region, name = "any", "the stack region"
		}
		names = append(names, name)
		models = append(models, nagARN("bedrock", region, "", "foundation-model/*"))
		profiles = append(profiles,
			nagARN("bedrock", region, "any", "inference-profile/*"),
			nagARN("bedrock", region, "any", "application-inference-profile/*"))
	}
	if len(models) == 0 {
		return
	}
	suppressIAM5(g.gatewayRole,
		"Bedrock models are chosen in the gateway configuration (SSM), which changes without a deploy: the gateway may invoke any foundation model, "+
			"but only in the configured Bedrock regions ("+strings.Join(names, ", ")+"; foundation-model ARNs have no account).",
		models...)
	suppressIAM5(g.gatewayRole,
		"Cross-region and application inference profiles named in the gateway configuration: limited to this account and the configured Bedrock regions.",
		profiles...)
	// The narrow grant (the configured models): the foundation model of
	// a configured cross-region profile, in any region, through it only.
	suppressIAM5(g.gatewayRole,
		"The foundation model behind a configured cross-region inference profile (e.g. us.anthropic...): the profile routes each request to one of several regions "+
			"and Bedrock authorizes the model there; the statement applies only through the configured profiles (condition bedrock:InferenceProfileArn).",
		&cdknag.RegexAppliesTo{Regex: jsii.String(`/^Resource::arn:(<AWS::Partition>|aws[a-z-]*):bedrock:\*::foundation-model\/[^*]+$/`)})
	suppressIAM5(g.gatewayRole,
		"A cross-region inference profile (e.g. us.anthropic.*) routes each request to a foundation model in another region and Bedrock authorizes the model there; "+
			"this statement only applies through an inference profile of this account in the configured regions (condition bedrock:InferenceProfileArn).",
		nagARN("bedrock", "*", "", "foundation-model/*"))
}
