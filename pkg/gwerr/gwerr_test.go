package gwerr

import (
	"errors"
	"net/http"
	"strings"
	"testing"
)

func TestCategoryStatuses(t *testing.T) {
	want := map[Category]int{InvalidRequest: 400, Authentication: 401, Permission: 403, NotFound: 404,
		RateLimited: 429, BudgetExceeded: 429, ContentPolicy: 400, ContextLength: 400, Timeout: 504, Overloaded: 503,
		Unavailable: 502, Interrupted: 502, Internal: 500}
	for _, c := range Categories {
		if c.Status() != want[c] {
			t.Errorf("%s -> %d, want %d", c, c.Status(), want[c])
		}
	}
	if InvalidRequest.ProviderFault() || ContentPolicy.ProviderFault() || !Overloaded.ProviderFault() || !RateLimited.ProviderFault() {
		t.Error("provider fault classification wrong")
	}
}

func TestClientMessageShowsUpstreamDetailOnlyForCallerErrors(t *testing.T) {
	e := &Error{Category: InvalidRequest, Message: "provider rejected the request", Detail: "max_tokens too large"}
	if got := ClientMessage(e); !strings.Contains(got, "max_tokens too large") {
		t.Errorf("caller error lost its detail: %q", got)
	}
	e = &Error{Category: Unavailable, Message: "provider failed", Detail: "internal host db-3.corp exploded"}
	if got := ClientMessage(e); strings.Contains(got, "db-3") {
		t.Errorf("infrastructure detail shown: %q", got)
	}
}

func TestRedact(t *testing.T) {
	in := "Incorrect API key provided: sk-proj-abcdefghijklmnop. Authorization: Bearer xyz123. secret=MYSECRETVALUE AKIAIOSFODNN7EXAMPLE"
	got := Redact(in, "MYSECRETVALUE")
	for _, leak := range []string{"sk-proj-abc", "xyz123", "MYSECRETVALUE", "AKIAIOSFODNN7EXAMPLE"} {
		if strings.Contains(got, leak) {
			t.Errorf("Redact left %q in %q", leak, got)
		}
	}
	if long := Redact(strings.Repeat("é", 1000)); len(long) > maxDetail+3 {
		t.Errorf("not truncated: %d bytes", len(long))
	}
}

func TestAsWrapsUnknownErrors(t *testing.T) {
	e := As(errors.New("boom"))
	if e.Category != Internal || e.Category.Status() != http.StatusInternalServerError {
		t.Errorf("As = %+v", e)
	}
}

func TestRedactAWSSessionTokensAndSignatures(t *testing.T) {
	in := "request credentials: X-Amz-Security-Token: IQoJb3JpZ2luX2VjSENTINELsession/////////wEaCXVzLWVhc3QtMSJHMEUCIQD+token==; Authorization: AWS4-HMAC-SHA256 Credential=AKIDEXAMPLE/20261130/us-east-1/bedrock/aws4_request, SignedHeaders=host, Signature=5d672d79c15b13162d9279b0855cfba6789a8edb4c82c400e06b5924a6f2b5d7"
	got := Redact(in)
	for _, leak := range []string{"SENTINEL", "IQoJb3", "AKIDEXAMPLE", "5d672d79c15b"} {
		if strings.Contains(got, leak) {
			t.Errorf("Redact left %q in %q", leak, got)
		}
	}
}

func TestFallbackCategories(t *testing.T) {
	for _, c := range Categories {
		want := c.Retryable() || c == ContextLength || c == ContentPolicy
		if c.Fallback() != want {
			t.Errorf("%s.Fallback() = %v", c, c.Fallback())
		}
	}
	if ContextLength.Retryable() || ContentPolicy.Retryable() || ContextLength.ProviderFault() {
		t.Error("context_length and content_policy must never be retried on the same target nor count against a breaker")
	}
}
