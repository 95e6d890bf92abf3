package bedrock

import (
	"errors"
	"testing"

	"github.com/llmgw/llmgw/pkg/gwerr"
)

// TestConverseRefusesCaseVariantAndDuplicateKeys: the Bedrock ingress shares
// the other ingresses' refusal of nested duplicate or case-variant keys
// (the review's {"text": "<phrase>", "Text": "hello"}).
func TestConverseRefusesCaseVariantAndDuplicateKeys(t *testing.T) {
	valid := `{"messages":[{"role":"user","content":[{"text":"hello"}]}]}`
	if _, _, err := decodeConverse([]byte(valid), []string{"messages", "system"}); err != nil {
		t.Fatalf("valid body refused: %v", err)
	}
	for _, body := range []string{
		`{"messages":[{"role":"user","content":[{"text":"forbidden","Text":"hello"}]}]}`,
		`{"messages":[{"role":"user","content":[{"text":"forbidden","text":"hello"}]}]}`,
		`{"system":[{"text":"a","TEXT":"b"}],"messages":[{"role":"user","content":[{"text":"hello"}]}]}`,
	} {
		_, _, err := decodeConverse([]byte(body), []string{"messages", "system"})
		var ge *gwerr.Error
		if !errors.As(err, &ge) || ge.Category != gwerr.InvalidRequest || ge.Param == "" {
			t.Errorf("%s: %v, want invalid_request naming the key", body, err)
		}
	}
}
