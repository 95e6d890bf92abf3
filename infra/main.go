// Command infra is the CDK app that deploys the llmgw gateway: run it with
// `cdk deploy` (cdk.json runs `go run ./infra`). Settings come from CDK
// context; see gwstack.FromContext and docs/deploy-aws.md.
package main

import (
	_ "embed"
	"fmt"
	"os"

	"github.com/aws/aws-cdk-go/awscdk/v2"
	"github.com/aws/jsii-runtime-go"
	"github.com/cdklabs/cdk-nag-go/cdknag/v2"

	"github.com/llmgw/llmgw/infra/gwstack"
)

// seedConfig is the default gateway configuration seeded into SSM.
//
//go:embed seed-config.yaml
var seedConfig []byte

func main() {
	err := synth()
	// Stop the jsii kernel (a node process) and remove the runtime it
	// unpacked into the temp directory; os.Exit would skip a defer.
	jsii.Close()
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
}

// synth builds the stack from the CDK context and synthesizes the app.
func synth() error {
	app := awscdk.NewApp(nil)
	settings, err := gwstack.FromContext(app.Node(), seedConfig)
	if err != nil {
		return err
	}
	// The cdk CLI exports the target account and region of the current
	// credentials; pinning them gives concrete ARNs in IAM policies.
	settings.Account = os.Getenv("CDK_DEFAULT_ACCOUNT")
	settings.Region = os.Getenv("CDK_DEFAULT_REGION")
	if _, err := gwstack.New(app, settings); err != nil {
		return err
	}
	if settings.Nag {
		awscdk.Aspects_Of(app).Add(cdknag.NewAwsSolutionsChecks(&cdknag.NagPackProps{Verbose: jsii.Bool(true)}), nil)
	}
	app.Synth(nil)
	return nil
}
