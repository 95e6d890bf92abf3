package iamcaller

import (
	"os"
	"testing"
)

// FromEvent reads the whole IAM authorizer of a Function URL event,
// principalOrgId included (aws-lambda-go's event type has no field for
// it); an event without one (auth type NONE) has no identity.
func TestFromEvent(t *testing.T) {
	raw, err := os.ReadFile("../../events/function-url-iam-chat.json")
	if err != nil {
		t.Fatal(err)
	}
	id, ok := FromEvent(raw)
	want := Identity{AccountID: "123456789012", UserARN: "arn:aws:sts::123456789012:assumed-role/search-indexer/indexer-session",
		UserID: "AROAEXAMPLEROLEID1234:indexer-session", PrincipalOrgID: "o-a1b2c3d4e5"}
	if !ok || id != want {
		t.Fatalf("FromEvent = %+v %v", id, ok)
	}
	none, err := os.ReadFile("../../events/function-url-chat.json")
	if err != nil {
		t.Fatal(err)
	}
	if id, ok := FromEvent(none); ok {
		t.Fatalf("an event without an authorizer gave %+v", id)
	}
}
