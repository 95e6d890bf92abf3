// Command lambdahello is the floor of the benchmark's Lambda figures: a
// hello-world Function URL handler served through lambdaurl (response
// streaming), built exactly like the gateway's bootstrap:
//
//	CGO_ENABLED=0 go build -tags lambda.norpc -trimpath -o hello ./scripts/bench/lambdahello
//
// Its init time and the time it takes to ask for the next invocation after
// the last byte of a response are what any Go lambdaurl function pays.
package main

import (
	"io"
	"net/http"

	"github.com/aws/aws-lambda-go/lambdaurl"
)

func main() {
	lambdaurl.Start(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "text/plain")
		io.WriteString(w, "hello, world\n")
	}))
}
