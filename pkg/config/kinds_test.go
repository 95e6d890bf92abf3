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

// A target's service_tier is one of its kind's tiers, named as the
// provider's API names them; tier prices and cache_locality are checked.
func TestServiceTiersPricesAndLocalityAreValidated(t *testing.T) {
	const providers = "providers:\n  o: {kind: openai, base_url: \"https://api.openai.com/v1\"}\n" +
		"  a: {kind: anthropic, base_url: \"https://api.anthropic.com\"}\n  g: {kind: gemini}\n"
	for name, tc := range map[string]struct{ rest, want string }{
		"openai priority":       {"routes: {m: {targets: [{provider: o, model: x, service_tier: priority}]}}", ""},
		"anthropic priority":    {"routes: {m: {targets: [{provider: a, model: x, service_tier: priority}]}}", `routes.m.targets[0].service_tier: "priority" is not a anthropic service tier (tiers: auto, standard_only)`},
		"gemini has none":       {"routes: {m: {targets: [{provider: g, model: x, service_tier: flex}]}}", `routes.m.targets[0].service_tier: provider g (kind gemini) has no service tiers`},
		"typo":                  {"routes: {m: {targets: [{provider: o, model: x, service_tier: priorty}]}}", `did you mean "priority"?`},
		"tier price":            {"routes: {m: {targets: [{provider: o, model: x}]}}\nprices: {x: {input: 1, output: 2, tiers: {flex: {input: -1, output: 1}}}}", `prices.x.tiers.flex.input: -1 is not a price`},
		"nested tiers":          {"routes: {m: {targets: [{provider: o, model: x}]}}\nprices: {x: {input: 1, output: 2, tiers: {flex: {input: 1, output: 1, tiers: {a: {input: 1, output: 1}}}}}}", `prices.x.tiers.flex.tiers: a tier's price takes no tiers`},
		"1h write price":        {"routes: {m: {targets: [{provider: o, model: x}]}}\nprices: {x: {input: 1, output: 2, cache_write_1h: .inf}}", `prices.x.cache_write_1h`},
		"locality ttl too long": {"routes: {m: {cache_locality: {ttl: 48h}, targets: [{provider: o, model: x}]}}", `routes.m.cache_locality.ttl: 48h0m0s is not between 0 (the default, 1h) and 24h`},
	} {
		_, err := config.Parse([]byte(providers + tc.rest + "\n"))
		switch {
		case tc.want == "" && err != nil:
			t.Errorf("%s: %v", name, err)
		case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)):
			t.Errorf("%s: err = %v, want %q", name, err, tc.want)
		}
	}
	cfg, err := config.Parse([]byte(providers + "routes: {m: {targets: [{provider: o, model: x, service_tier: priority}, {provider: o, model: x}]}}\n" +
		"prices: {x: {input: 1, output: 2, tiers: {priority: {input: 3, output: 4}}}}\n"))
	if err != nil {
		t.Fatal(err)
	}
	steps, _, _ := cfg.Chain("m")
	if len(steps) != 2 || steps[0].ID != "o/x#priority" || steps[0].ServiceTier != "priority" || steps[1].ID != "o/x" {
		t.Fatalf("the same model at two tiers is two targets: %+v", steps)
	}
	if p, _ := cfg.PriceFor("o", "x"); p.AtTier("priority").Input != 3 || p.AtTier("flex").Input != 1 || p.AtTier("").Input != 1 {
		t.Errorf("tier prices: %+v", p)
	}
	if prov, model, tier := config.SplitTargetID("br/us.anthropic.claude:0#flex"); prov != "br" || model != "us.anthropic.claude:0" || tier != "flex" {
		t.Errorf("SplitTargetID = %q %q %q", prov, model, tier)
	}
}
