package config

import "slices"

// validateAPIs checks a provider's apis: known API names, each once, and
// only those its kind may declare (Kind.APIs; a kind with none translates
// every request it does not speak by default).
func (p *Provider) validateAPIs(at Path) error {
	if len(p.APIs) == 0 || p.unchecked() {
		return nil
	}
	allowed := p.kind().APIs
	if len(allowed) == 0 {
		return errAt(at.Key("apis"), "only kinds %s declare the APIs they speak; kind %s translates every request",
			kindsWith(func(k Kind) bool { return len(k.APIs) > 0 }), p.Kind)
	}
	for i, api := range p.APIs {
		if err := oneOf(at.Key("apis").Index(i), "API", api, allowed...); err != nil {
			return err
		}
		if slices.Contains(p.APIs[:i], api) {
			return errAt(at.Key("apis").Index(i), "%s is listed twice", show(api))
		}
	}
	return nil
}
