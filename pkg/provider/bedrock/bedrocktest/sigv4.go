// Package bedrocktest holds what the fake Bedrock upstreams of the
// gateway's tests share (pkg/server, scripts/agents): checking a request's
// SigV4 signature the way AWS does.
package bedrocktest

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"net/http"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	v4 "github.com/aws/aws-sdk-go-v2/aws/signer/v4"
)

// CheckSigV4 verifies, as AWS would, that a request a fake AWS upstream
// received (r, with its body already read into body) carries a valid
// SigV4 signature by creds for service in region: it parses the
// Authorization header, checks its credential scope, rebuilds the request
// from the headers it names as signed, signs that with the same signer,
// credentials and X-Amz-Date, and compares the signatures. nil means
// valid.
func CheckSigV4(r *http.Request, body []byte, service, region string, creds aws.Credentials) error {
	auth := r.Header.Get("Authorization")
	rest, ok := strings.CutPrefix(auth, "AWS4-HMAC-SHA256 ")
	if !ok {
		return fmt.Errorf("authorization %q is not SigV4", auth)
	}
	fields := map[string]string{}
	for _, f := range strings.Split(rest, ",") {
		k, v, _ := strings.Cut(strings.TrimSpace(f), "=")
		fields[k] = v
	}
	scope := strings.Split(fields["Credential"], "/")
	if len(scope) != 5 || scope[0] != creds.AccessKeyID || scope[2] != region || scope[3] != service || scope[4] != "aws4_request" {
		return fmt.Errorf("credential scope %q, want %s/<date>/%s/%s/aws4_request", fields["Credential"], creds.AccessKeyID, region, service)
	}
	at, err := time.Parse("20060102T150405Z", r.Header.Get("X-Amz-Date"))
	if err != nil {
		return fmt.Errorf("x-amz-date: %w", err)
	}
	sum := sha256.Sum256(body)
	hash := hex.EncodeToString(sum[:])
	again, err := http.NewRequest(r.Method, "http://"+r.Host+r.URL.RequestURI(), bytes.NewReader(body))
	if err != nil {
		return err
	}
	again.ContentLength = -1
	for _, h := range strings.Split(fields["SignedHeaders"], ";") {
		switch h {
		case "host":
		case "content-length":
			again.ContentLength = r.ContentLength
		default:
			again.Header[http.CanonicalHeaderKey(h)] = r.Header.Values(h)
		}
	}
	if err := v4.NewSigner().SignHTTP(context.Background(), creds, again, hash, service, region, at); err != nil {
		return err
	}
	if got, want := auth, again.Header.Get("Authorization"); got != want {
		return fmt.Errorf("signature does not match the request:\n got %s\nwant %s", got, want)
	}
	return nil
}
