package config

import (
	"net/url"
	"slices"
	"strings"
	"sync"
)

// Kind is a provider kind as the config loader sees it: the part of a
// provider kind's descriptor (provider.Descriptor) that validation,
// defaults, Provider.Speaks and pricing read. Each kind's adapter package
// declares its own; pkg/provider/registry registers every kind built into
// the gateway with RegisterKind, so this package names no kind and never
// switches on one. A config naming a kind that is not registered is
// rejected.
type Kind struct {
	// Name is the kind's name in a config (kind: name).
	Name string
	// Speaks lists the client APIs a provider of this kind speaks natively
	// (so requests on them pass through, with every feature only those
	// APIs carry) when its config lists none in apis.
	Speaks []string
	// APIs lists the client APIs a provider of this kind may declare it
	// speaks (Provider.APIs); none: the kind takes no apis, it speaks
	// Speaks and translates the rest.
	APIs []string
	// TargetSpeaks, when set, reports whether a target of this kind with
	// this model and these options (Target.Options) speaks a client API
	// natively even though its provider does not (Bedrock: the Messages
	// API, through InvokeModel, for Anthropic's models). Nil: a target
	// speaks what its provider speaks (Provider.Speaks).
	TargetSpeaks func(api, model string, opts map[string]string) bool
	// AuthHeader is the header a key goes in unless the provider's
	// auth_header says otherwise ("authorization": a Bearer token).
	// Empty: the kind takes no keys (Bedrock signs with the AWS credential
	// chain), and a config giving it keys or an auth_header is rejected.
	AuthHeader string
	// ModelOptional lets a target of this kind leave its model out.
	ModelOptional bool
	// Scripted: the kind takes a fake script (Provider.Fake).
	Scripted bool
	// Moderates: a provider of this kind can serve a moderation policy's
	// endpoint (OpenAI's /moderations).
	Moderates bool
	// Validate checks, and defaults, a provider's kind-specific fields
	// (base_url, script); at is the provider's path. Its error is an
	// *Error (ErrAt). Nil: nothing more to check.
	Validate func(at Path, p *Provider) error
	// TargetOptions are the options a target on a provider of this kind
	// takes (Target.Options), each with its check of the value: a problem
	// is returned as a message about the value (Show it). None: targets
	// take no options.
	TargetOptions map[string]func(v string) string
	// ServiceTiers are the service tiers a target of this kind may ask
	// for (Target.ServiceTier), as the provider's API names them. None:
	// its targets take no service_tier.
	ServiceTiers []string
	// BaseModel is the kind's price rule: the base model a target model's
	// prices are looked up under when none is configured for the model
	// itself ("" for none: the model's own). Nil: the model's own.
	BaseModel func(model string) string
}

// kinds are the registered kinds, sorted by name (so messages do not
// depend on the order packages are initialised in); anyKind is set by
// AcceptAnyKind.
var kinds struct {
	sync.RWMutex
	list    []*Kind
	anyKind bool
}

// AcceptAnyKind makes the loader accept a provider kind no descriptor is
// registered for, checking nothing kind-specific about it (Speaks is
// false, no price rule). It is for programs that read a config's teams
// but never build a provider, and so link no adapter (the rollup:
// pkg/usage/usagecli); the gateway never calls it.
func AcceptAnyKind() {
	kinds.Lock()
	kinds.anyKind = true
	kinds.Unlock()
}

// RegisterKind makes a provider kind known to the config loader: each
// adapter package registers its descriptor's kind when it is linked in
// (its init), and the provider registry registers every kind it builds.
// Registering the same *Kind again does nothing; it panics when the name
// is empty or another Kind already has it (two adapters claiming one
// kind). k must not change afterwards.
func RegisterKind(k *Kind) {
	kinds.Lock()
	defer kinds.Unlock()
	for _, o := range kinds.list {
		if o == k {
			return
		}
		if o.Name == k.Name {
			panic("config: provider kind " + show(k.Name) + " is registered twice")
		}
	}
	if k.Name == "" {
		panic("config: a provider kind has no name")
	}
	i, _ := slices.BinarySearchFunc(kinds.list, k.Name, func(o *Kind, name string) int { return strings.Compare(o.Name, name) })
	kinds.list = slices.Insert(kinds.list, i, k)
}

// KindNames returns the registered provider kinds, sorted.
func KindNames() []string {
	kinds.RLock()
	defer kinds.RUnlock()
	out := make([]string, len(kinds.list))
	for i, k := range kinds.list {
		out[i] = k.Name
	}
	return out
}

// LookupKind returns the registered kind of that name.
func LookupKind(name string) (Kind, bool) {
	kinds.RLock()
	defer kinds.RUnlock()
	for _, k := range kinds.list {
		if k.Name == name {
			return *k, true
		}
	}
	return Kind{}, false
}

// kindsWith names the registered kinds for which has is true, for messages
// ("openai and fake").
func kindsWith(has func(Kind) bool) string {
	kinds.RLock()
	defer kinds.RUnlock()
	var names []string
	for _, k := range kinds.list {
		if has(*k) {
			names = append(names, k.Name)
		}
	}
	return andList(names)
}

// andList writes "a, b and c".
func andList(s []string) string {
	if len(s) <= 1 {
		return strings.Join(s, "")
	}
	return strings.Join(s[:len(s)-1], ", ") + " and " + s[len(s)-1]
}

// kind returns the provider's registered kind (the zero Kind when it is
// not registered; validation rejects such a provider).
func (p *Provider) kind() Kind {
	k, _ := LookupKind(p.Kind)
	return k
}

// unchecked reports whether the provider's kind is one the loader accepts
// without checking it (not registered, after AcceptAnyKind).
func (p *Provider) unchecked() bool {
	if _, ok := LookupKind(p.Kind); ok {
		return false
	}
	kinds.RLock()
	defer kinds.RUnlock()
	return kinds.anyKind && p.Kind != ""
}

// ErrAt returns an *Error at path, positioned later by Parse: the error a
// Kind's hooks return.
func ErrAt(p Path, format string, args ...any) *Error { return errAt(p, format, args...) }

// Show quotes a value from the document for a message (shortened when
// long, never a team key).
func Show(s string) string { return show(s) }

// OneOf validates an enumerated value: nil when v is allowed, else an
// error naming v, the closest allowed value and all of them.
func OneOf(p Path, what, v string, allowed ...string) *Error { return oneOf(p, what, v, allowed...) }

// BaseURLRequired is the Validate of a kind that needs an http(s)
// base_url.
func BaseURLRequired(at Path, p *Provider) error {
	if !httpURL(p.BaseURL) {
		return errAt(at.Key("base_url"), "%s is not an http(s) URL (kind %s needs one)", show(p.BaseURL), p.Kind)
	}
	return nil
}

// BaseURLOptional returns the Validate of a kind whose base_url defaults
// to def: empty, or an http(s) URL.
func BaseURLOptional(def string) func(at Path, p *Provider) error {
	return func(at Path, p *Provider) error {
		if p.BaseURL != "" && !httpURL(p.BaseURL) {
			return errAt(at.Key("base_url"), "%s is not an http(s) URL (leave it out for %s)", show(p.BaseURL), def)
		}
		return nil
	}
}

// httpURL reports whether s is an absolute http(s) URL with a host.
func httpURL(s string) bool {
	u, err := url.Parse(s)
	return s != "" && err == nil && (u.Scheme == "http" || u.Scheme == "https") && u.Host != ""
}

// SpeaksAt reports whether target s of the provider speaks a client API
// natively, so a request on it passes through (with every feature only
// that API carries): when the provider does (Speaks), or its kind says
// the target's model does (Kind.TargetSpeaks).
func (p *Provider) SpeaksAt(api string, s Step) bool {
	if p.Speaks(api) {
		return true
	}
	k := p.kind()
	return k.TargetSpeaks != nil && k.TargetSpeaks(api, s.Model, s.Options)
}
