package gwstack

import (
	"fmt"
	"regexp"

	"github.com/aws/aws-cdk-go/awscdk/v2/awsiam"
	"github.com/aws/aws-cdk-go/awscdk/v2/awslambda"
	"github.com/aws/jsii-runtime-go"
	"github.com/cdklabs/cdk-nag-go/cdknag/v2"
)

// CtxOTelCollectorLayerARN (opt-in) adds the AWS Distro for OpenTelemetry
// collector layer (the ARN of an aws-otel-collector-arm64 layer version of
// the stack's region) to the gateway function, and lets the function send
// traces to X-Ray, where that layer's default configuration exports them.
// The gateway exports to it once its config says so:
// telemetry: {otlp_endpoint: "http://127.0.0.1:4318"} (docs/observability.md).
const CtxOTelCollectorLayerARN = "otelCollectorLayerArn"

// layerARNPattern is a Lambda layer version ARN.
var layerARNPattern = regexp.MustCompile(`^arn:aws[a-z-]*:lambda:[a-z0-9-]+:[0-9]{12}:layer:[A-Za-z0-9_-]+:[0-9]+$`)

// xrayActions are what the collector's X-Ray exporter calls.
var xrayActions = []string{"xray:PutTraceSegments", "xray:PutTelemetryRecords"}

// validateOTelLayer checks the layer ARN setting ("" is off).
func validateOTelLayer(arn string) error {
	if arn != "" && !layerARNPattern.MatchString(arn) {
		return fmt.Errorf("%s %q: want a layer version ARN, arn:aws:lambda:<region>:<account>:layer:<name>:<version>", CtxOTelCollectorLayerARN, arn)
	}
	return nil
}

// otelLayers are the gateway function's layers: the collector, when opted
// in (nil otherwise).
func (g *Gateway) otelLayers() *[]awslambda.ILayerVersion {
	arn := g.Settings.OTelCollectorLayerARN
	if arn == "" {
		return nil
	}
	return &[]awslambda.ILayerVersion{awslambda.LayerVersion_FromLayerVersionArn(g.Stack, jsii.String("OTelCollectorLayer"), jsii.String(arn))}
}

// grantXRay lets the collector layer export traces to X-Ray (opted in
// only). X-Ray's write actions take no resource: the statement is on "*".
func (g *Gateway) grantXRay(role awsiam.IRole) {
	if g.Settings.OTelCollectorLayerARN == "" {
		return
	}
	g.addStatement(role, "ExportTracesToXRay", xrayActions, []*string{jsii.String("*")}, nil)
	suppressIAM5(role, "X-Ray's PutTraceSegments and PutTelemetryRecords support no resource-level permissions; granted only with the opt-in OpenTelemetry collector layer ("+
		CtxOTelCollectorLayerARN+"), which exports the gateway's traces to X-Ray.",
		&cdknag.RegexAppliesTo{Regex: jsii.String(`/^Resource::\*$/`)})
}
