package bedrock_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/aws/ratelimit"
	"github.com/aws/aws-sdk-go-v2/aws/retry"
	"github.com/aws/aws-sdk-go-v2/service/bedrockruntime"
	"github.com/aws/aws-sdk-go-v2/service/bedrockruntime/types"
	"github.com/aws/smithy-go/auth/bearer"

	"github.com/llmgw/llmgw/pkg/teams"
	"github.com/llmgw/llmgw/pkg/wire/bedrockwire"
)

// The exceptions a Bedrock client gets decide what its SDK retries: the
// real Go SDK with its standard retryer (three attempts, its own rules of
// what is retryable; no backoff wait, so the test is quick) raises the
// exception type and makes the attempts a real Bedrock would have made it
// make, counted at the gateway.

// counting counts the requests an HTTP client sends.
type counting struct {
	next http.RoundTripper
	n    atomic.Int32
}

func (c *counting) RoundTrip(r *http.Request) (*http.Response, error) {
	c.n.Add(1)
	return c.next.RoundTrip(r)
}

type noBackoff struct{}

func (noBackoff) BackoffDelay(int, error) (time.Duration, error) { return 0, nil }

// retryingClient is the Go SDK client with its standard retryer, and the
// count of the attempts it makes at the gateway.
func retryingClient(g *gateway) (*bedrockruntime.Client, *counting) {
	cnt := &counting{next: g.client.Transport}
	return bedrockruntime.New(bedrockruntime.Options{
		Region: "us-east-1", BaseEndpoint: aws.String(g.URL), HTTPClient: &http.Client{Transport: cnt},
		BearerAuthTokenProvider: bearer.StaticTokenProvider{Token: bearer.Token{Value: teamKey}},
		AuthSchemePreference:    []string{"httpBearerAuth"},
		Retryer: retry.NewStandard(func(o *retry.StandardOptions) {
			o.MaxAttempts, o.Backoff, o.RateLimiter = 3, noBackoff{}, ratelimit.None
		}),
	}), cnt
}

// failingBedrock answers every call with one Bedrock error.
func failingBedrock(t *testing.T, status int, typ string) *httptest.Server {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.ReadAll(r.Body)
		w.Header().Set("Content-Type", "application/json")
		w.Header().Set("x-amzn-ErrorType", typ)
		w.WriteHeader(status)
		w.Write(bedrockwire.AppendErrorBody(nil, "the upstream says "+typ))
	}))
	t.Cleanup(srv.Close)
	return srv
}

// A Bedrock upstream's exception on the last target comes back with its
// own type (and status), for Converse and ConverseStream alike.
func TestGoSDKGetsTheBedrockUpstreamsException(t *testing.T) {
	for _, tc := range []struct {
		typ      string
		status   int
		is       func(error) bool
		attempts int32 // what the Go SDK makes of it, as of Bedrock itself
	}{
		{"ThrottlingException", 429, func(err error) bool { var e *types.ThrottlingException; return errors.As(err, &e) }, 3},
		{"ModelNotReadyException", 429, func(err error) bool { var e *types.ModelNotReadyException; return errors.As(err, &e) }, 1},
		{"ServiceUnavailableException", 503, func(err error) bool { var e *types.ServiceUnavailableException; return errors.As(err, &e) }, 3},
		{"InternalServerException", 500, func(err error) bool { var e *types.InternalServerException; return errors.As(err, &e) }, 3},
		{"ModelErrorException", 424, func(err error) bool { var e *types.ModelErrorException; return errors.As(err, &e) }, 1},
		{"ModelTimeoutException", 408, func(err error) bool { var e *types.ModelTimeoutException; return errors.As(err, &e) }, 1},
		{"ValidationException", 400, func(err error) bool {
			var e *types.ValidationException
			return errors.As(err, &e) && strings.Contains(aws.ToString(e.Message), "the upstream says ValidationException")
		}, 1},
	} {
		t.Run(tc.typ, func(t *testing.T) {
			up := failingBedrock(t, tc.status, tc.typ)
			c, cnt := retryingClient(bedrockPassGateway(t, up, "amazon.nova-pro-v1:0"))
			_, err := c.Converse(context.Background(), &bedrockruntime.ConverseInput{ModelId: aws.String("claude"), Messages: userText("hi")})
			if !tc.is(err) {
				t.Errorf("Converse: %T %v, want the upstream's %s", err, err, tc.typ)
			}
			if n := cnt.n.Load(); n != tc.attempts {
				t.Errorf("Converse: the SDK made %d attempts, want %d", n, tc.attempts)
			}
			// A fresh gateway: its breakers have not yet counted these failures.
			c, _ = retryingClient(bedrockPassGateway(t, up, "amazon.nova-pro-v1:0"))
			_, err = c.ConverseStream(context.Background(), &bedrockruntime.ConverseStreamInput{ModelId: aws.String("claude"), Messages: userText("hi")})
			if !tc.is(err) {
				t.Errorf("ConverseStream: %T %v, want the upstream's %s", err, err, tc.typ)
			}
		})
	}
	// The gateway's own Bedrock credentials refused: never the caller's
	// AccessDeniedException.
	g := bedrockPassGateway(t, failingBedrock(t, 403, "AccessDeniedException"), "amazon.nova-pro-v1:0")
	c, _ := retryingClient(g)
	_, err := c.Converse(context.Background(), &bedrockruntime.ConverseInput{ModelId: aws.String("claude"), Messages: userText("hi")})
	var ad *types.AccessDeniedException
	var su *types.ServiceUnavailableException
	if errors.As(err, &ad) || !errors.As(err, &su) {
		t.Errorf("upstream AccessDenied: %T %v, want ServiceUnavailableException", err, err)
	}
}

// Every target skipped for an open circuit breaker (nothing tried):
// ServiceUnavailableException 503, which the SDK backs off on and retries.
func TestGoSDKEveryBreakerOpenIsServiceUnavailable(t *testing.T) {
	g := serveYAML(t, fmt.Sprintf(`providers:
  a: {kind: fake}
  b: {kind: fake}
routes:
  claude:
    targets:
      - {provider: a, model: m, breaker: open}
      - {provider: b, model: m, breaker: open}
teams:
  aws:
    keys: [{id: k1, sha256: %q}]
`, teams.HashKey(teamKey)))
	c, cnt := retryingClient(g)
	_, err := c.Converse(context.Background(), &bedrockruntime.ConverseInput{ModelId: aws.String("claude"), Messages: userText("hi")})
	var su *types.ServiceUnavailableException
	if !errors.As(err, &su) {
		t.Fatalf("Converse: %T %v, want ServiceUnavailableException", err, err)
	}
	if n := cnt.n.Load(); n != 3 {
		t.Errorf("the SDK made %d attempts, want 3 (it retries a 503)", n)
	}
}

// A budget refusal is ThrottlingException 429 naming the budget, as every
// ingress refuses over budget with 429: the SDK retries it (the refusal
// costs no upstream call) and raises it.
func TestGoSDKBudgetRefusalIsThrottling(t *testing.T) {
	g := serveYAML(t, fmt.Sprintf(`providers:
  a: {kind: fake}
prices:
  a/m: {input: 1000000, output: 1000000}
routes:
  claude:
    targets:
      - {provider: a, model: m}
teams:
  aws:
    keys: [{id: k1, sha256: %q}]
    limits: {cost_per_day_usd: 1}
`, teams.HashKey(teamKey)))
	c, cnt := retryingClient(g)
	_, err := c.Converse(context.Background(), &bedrockruntime.ConverseInput{ModelId: aws.String("claude"), Messages: userText("hi")})
	var th *types.ThrottlingException
	if !errors.As(err, &th) || !strings.Contains(aws.ToString(th.Message), "budget") {
		t.Fatalf("Converse: %T %v, want ThrottlingException naming the budget", err, err)
	}
	if n := cnt.n.Load(); n != 3 {
		t.Errorf("the SDK made %d attempts, want 3", n)
	}
}
