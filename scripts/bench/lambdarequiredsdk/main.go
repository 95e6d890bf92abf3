// Command lambdarequiredsdk is the third floor of the benchmark's Lambda
// init figures: scripts/bench/lambdahello with only the AWS SDK clients the
// project must use (DynamoDB, SSM and Bedrock Runtime, from
// aws-sdk-go-v2) imported and unused: no config loader, no credential
// chain, no SQS. Go initializes every linked package before main, so its
// init time is what the gateway's cold start cannot go below while it
// links those clients, before it does anything.
// Built exactly like the bootstrap:
//
//	CGO_ENABLED=0 go build -tags lambda.norpc -trimpath -o requiredsdk ./scripts/bench/lambdarequiredsdk
package main

import (
	"io"
	"net/http"

	"github.com/aws/aws-lambda-go/lambdaurl"
	_ "github.com/aws/aws-sdk-go-v2/service/bedrockruntime"
	_ "github.com/aws/aws-sdk-go-v2/service/dynamodb"
	_ "github.com/aws/aws-sdk-go-v2/service/ssm"
)

func main() {
	lambdaurl.Start(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "text/plain")
		io.WriteString(w, "hello, world\n")
	}))
}
