package config_test

import (
	"slices"
	"strings"
	"testing"

	"github.com/llmgw/llmgw/pkg/config"
	"github.com/llmgw/llmgw/pkg/provider/openaicompat"

	// The config's tests parse configs naming the built-in provider kinds,
	// which their adapters' descriptors define: linking the provider
	// registry registers them (config.RegisterKind).
	_ "github.com/llmgw/llmgw/pkg/provider/registry"
)

// A kind without keys (its descriptor gives no key header: bedrock signs
// with the AWS credential chain) is refused keys and an auth_header, which
// it would silently ignore.
func TestAKindWithoutKeysRefusesKeys(t *testing.T) {
	for name, tc := range map[string]struct{ provider, want string }{
		"keys":        {`{kind: bedrock, region: us-east-1, keys: [{env: K}]}`, `providers.p.keys: kind bedrock takes no keys`},
		"auth_header": {`{kind: bedrock, region: us-east-1, auth_header: x-api-key}`, `providers.p.auth_header: kind bedrock takes no keys`},
	} {
		_, err := config.Parse([]byte("providers:\n  p: " + tc.provider + "\nroutes:\n  m: {targets: [{provider: p, model: x}]}\n"))
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: err = %v, want %q", name, err, tc.want)
		}
	}
	if _, err := config.Parse([]byte("providers: {p: {kind: anthropic, base_url: \"https://api.anthropic.com\", keys: [{env: K}]}}\nroutes: {m: {targets: [{provider: p, model: x}]}}\n")); err != nil {
		t.Errorf("a kind with a key header takes keys: %v", err)
	}
}

// Two descriptors claiming one kind name is a programming error, caught
// when the second registers; registering the same kind again is harmless.
func TestRegisterKindRefusesASecondKindOfTheSameName(t *testing.T) {
	before := config.KindNames()
	config.RegisterKind(&openaicompat.Descriptor.Config)
	func() {
		defer func() {
			if recover() == nil {
				t.Error("a second kind named openai registered without a panic")
			}
		}()
		config.RegisterKind(&config.Kind{Name: "openai"})
	}()
	if after := config.KindNames(); !slices.Equal(before, after) {
		t.Errorf("kinds changed: %v, then %v", before, after)
	}
}
