// Command lambdasdkhello is the second floor of the benchmark's Lambda init
// figures: scripts/bench/lambdahello with the AWS SDK packages the gateway's
// bootstrap links (the config loader with its credential chain, and the
// DynamoDB, SSM, SQS and Bedrock Runtime clients) imported and unused.
// Go initializes every linked package before main, so its init time is
// what those packages cost a cold start before the gateway does anything.
// Built exactly like the bootstrap:
//
//	CGO_ENABLED=0 go build -tags lambda.norpc -trimpath -o sdkhello ./scripts/bench/lambdasdkhello
package main

import (
	"io"
	"net/http"

	"github.com/aws/aws-lambda-go/lambdaurl"
	_ "github.com/aws/aws-sdk-go-v2/config"
	_ "github.com/aws/aws-sdk-go-v2/service/bedrockruntime"
	_ "github.com/aws/aws-sdk-go-v2/service/dynamodb"
	_ "github.com/aws/aws-sdk-go-v2/service/sqs"
	_ "github.com/aws/aws-sdk-go-v2/service/ssm"
)

func main() {
	lambdaurl.Start(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "text/plain")
		io.WriteString(w, "hello, world\n")
	}))
}
