// Package iamcaller carries the AWS caller that Lambda verified (a Function
// URL with auth type AWS_IAM) from the Function URL event to the
// authenticator, which maps it to a team (config iam_callers).
//
// Trust: the identity is read only from the event's request context
// (requestContext.authorizer.iam), which Lambda fills in after checking
// the request's SigV4 signature, and only when the gateway is told that
// its Function URL has auth type AWS_IAM (deployment.EnvFunctionURLAuthType,
// set by the stack). With auth type NONE, and on the local server, no
// identity is ever set: no header or body can claim one.
package iamcaller

import (
	"context"
	"encoding/json"
	"net/http"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-lambda-go/lambdaurl"
)

// Identity is a verified AWS caller, as the Function URL's IAM authorizer
// reports it.
type Identity struct {
	// AccountID is the caller's 12-digit account.
	AccountID string
	// UserARN is the principal's ARN (for a role, its session's
	// arn:aws:sts::<account>:assumed-role/<role>/<session>).
	UserARN string
	// UserID is the principal's unique id (for a role session,
	// <role id>:<session>).
	UserID string
	// PrincipalOrgID is the caller's AWS Organizations id, when it has one.
	PrincipalOrgID string
}

type ctxKey struct{}

// WithIdentity returns ctx carrying a verified caller.
func WithIdentity(ctx context.Context, id Identity) context.Context {
	return context.WithValue(ctx, ctxKey{}, id)
}

// FromContext returns the verified caller of a request, if Lambda verified
// one.
func FromContext(ctx context.Context) (Identity, bool) {
	id, ok := ctx.Value(ctxKey{}).(Identity)
	return id, ok
}

// iamAuthorizer is the part of the event's request context aws-lambda-go's
// type leaves out (principalOrgId).
type iamAuthorizer struct {
	RequestContext struct {
		Authorizer *struct {
			IAM *struct {
				AccountID      string `json:"accountId"`
				UserARN        string `json:"userArn"`
				UserID         string `json:"userId"`
				PrincipalOrgID string `json:"principalOrgId"`
			} `json:"iam"`
		} `json:"authorizer"`
	} `json:"requestContext"`
}

// FromEvent reads the verified caller of a Function URL event's request
// context; ok is false when the event has none (auth type NONE).
func FromEvent(raw []byte) (Identity, bool) {
	var ev iamAuthorizer
	if json.Unmarshal(raw, &ev) != nil || ev.RequestContext.Authorizer == nil || ev.RequestContext.Authorizer.IAM == nil {
		return Identity{}, false
	}
	iam := ev.RequestContext.Authorizer.IAM
	if iam.UserARN == "" || iam.AccountID == "" {
		return Identity{}, false
	}
	return Identity{AccountID: iam.AccountID, UserARN: iam.UserARN, UserID: iam.UserID, PrincipalOrgID: iam.PrincipalOrgID}, true
}

// Handler is the Lambda handler of h behind a Function URL with
// InvokeMode RESPONSE_STREAM (lambdaurl.Wrap), taking the raw event so
// that the whole request context is read. With trusted (the Function
// URL's auth type is AWS_IAM) the verified caller goes into the request's
// context (WithIdentity); without it the event's authorizer is ignored.
func Handler(h http.Handler, trusted bool) func(context.Context, json.RawMessage) (*events.LambdaFunctionURLStreamingResponse, error) {
	serve := lambdaurl.Wrap(h)
	return func(ctx context.Context, raw json.RawMessage) (*events.LambdaFunctionURLStreamingResponse, error) {
		var ev events.LambdaFunctionURLRequest
		if err := json.Unmarshal(raw, &ev); err != nil {
			return nil, err
		}
		if trusted {
			if id, ok := FromEvent(raw); ok {
				ctx = WithIdentity(ctx, id)
			}
		}
		return serve(ctx, &ev)
	}
}
