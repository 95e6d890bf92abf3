package config

import "time"

// ModerationSettings hold the moderation policies:
//
//	moderation:
//	  policies:
//	    kids:
//	      mode: fail_closed
//	      endpoint: {provider: openai, model: omni-moderation-latest, timeout: 2s}
//	      check: {route: mod-check, prompt: "Block anything unsuitable for children under 13.", timeout: 5s}
//	      output: true
//	routes: {tutor: {moderation: kids, targets: [...]}}
//	teams: {kids-app: {moderation: kids, keys: [...]}}
type ModerationSettings struct {
	// Policies by name; routes and teams refer to them.
	Policies map[string]*ModerationPolicy `json:"policies,omitempty"`
	// GuardrailPrices price Bedrock guardrail text units (defaults:
	// Bedrock's list prices, see GuardrailPrices).
	GuardrailPrices GuardrailPrices `json:"guardrail_prices,omitempty"`
}

// ModerationPolicy is one moderation policy: which layers run, and what an
// error in them means.
type ModerationPolicy struct {
	// Mode is off, fail_open (a layer that errs or times out lets the
	// request through, after at most its timeout) or fail_closed (it
	// blocks the request); default fail_closed. A violation blocks in
	// both.
	Mode string `json:"mode,omitempty"`
	// Endpoint is layer one: an OpenAI-compatible /moderations endpoint.
	Endpoint *ModerationEndpoint `json:"endpoint,omitempty"`
	// Check is layer two: a chat model asked for a verdict; it runs only
	// when layer one passed.
	Check *ModerationCheck `json:"check,omitempty"`
	// Guardrail is a Bedrock guardrail (ApplyGuardrail); it runs after
	// the layers above passed.
	Guardrail *ModerationGuardrail `json:"guardrail,omitempty"`
	// Output moderates the answer too: it is held until complete, checked,
	// and only then sent (streamed answers included) - or, with
	// OutputWindow, checked and released window by window.
	Output bool `json:"output,omitempty"`
	// OutputWindow, when set, checks the answer in windows of this many
	// characters of text instead of holding it whole: at most this many
	// characters (plus the rest of the event that crosses the mark) are
	// held back before they are checked and released, each window checked
	// with the ModerationWindowOverlap characters before it. A violation
	// ends the answer where it is, with an error in the client's format.
	// Default: DefaultGuardrailWindow for a policy with a guardrail, else
	// 0 (the whole answer is held).
	OutputWindow int `json:"output_window,omitempty"`
	// MaxOutputBytes bounds a held answer (default 1 MiB); a longer one is
	// a moderation error (blocked in fail_closed, released in fail_open).
	MaxOutputBytes int `json:"max_output_bytes,omitempty"`
}

// ModerationEndpoint is an OpenAI-compatible moderation endpoint: POST
// <provider base_url>/moderations with the provider's keys.
type ModerationEndpoint struct {
	// Provider is a configured provider of kind openai.
	Provider string `json:"provider"`
	// Model is the moderation model (default omni-moderation-latest).
	Model string `json:"model,omitempty"`
	// Timeout bounds the call (default 2s).
	Timeout Duration `json:"timeout,omitempty"`
	// Categories, when set, block only results flagged in one of these
	// categories (e.g. sexual/minors, self-harm); default: any flag.
	Categories []string `json:"categories,omitempty"`
}

// ModerationCheck is a chat-based check: the policy prompt and the text go
// to a route, whose answer must be the verdict
// {"verdict":"allow"|"block","category":"..."}.
type ModerationCheck struct {
	// Route is the configured route that answers (its own failover applies).
	Route string `json:"route"`
	// Prompt is the policy, sent as the system message.
	Prompt string `json:"prompt"`
	// Timeout bounds the whole check, failover included (default 5s).
	Timeout Duration `json:"timeout,omitempty"`
	// MaxTokens caps the verdict's length (default 64).
	MaxTokens int `json:"max_tokens,omitempty"`
}

// Moderation modes.
const (
	ModerationOff        = "off"
	ModerationFailOpen   = "fail_open"
	ModerationFailClosed = "fail_closed"
)

// Moderation defaults and bounds.
const (
	DefaultModerationModel = "omni-moderation-latest"
	DefaultEndpointTimeout = 2 * time.Second
	DefaultCheckTimeout    = 5 * time.Second
	DefaultCheckMaxTokens  = 64
	DefaultModerationHold  = 1 << 20
	maxModerationTimeout   = time.Minute
	maxModerationHoldBytes = 16 << 20
)

// ModerationFor returns the names of the policies a request of route and
// team is checked under: the route's, then the team's (each once; "off"
// ones left out).
func (c *Config) ModerationFor(route, team string) []string {
	var names []string
	if r := c.Routes[route]; r != nil && r.Moderation != "" {
		names = append(names, r.Moderation)
	}
	if t := c.Teams[team]; t != nil && t.Moderation != "" && (len(names) == 0 || names[0] != t.Moderation) {
		names = append(names, t.Moderation)
	}
	out := names[:0]
	for _, n := range names {
		if p := c.Moderation.Policies[n]; p != nil && p.Mode != ModerationOff {
			out = append(out, n)
		}
	}
	return out
}

// prepareModeration defaults and validates the policies and the names
// routes and teams give.
func (c *Config) prepareModeration() error {
	for _, name := range sortedKeys(c.Moderation.Policies) {
		p, at := c.Moderation.Policies[name], pathOf("moderation", "policies", name)
		if !plainName(name, "-_.") {
			return errAt(at, "policy name %s must be 1-64 letters, digits, - _ or .", show(name))
		}
		if p == nil {
			return errAt(at, "empty policy (null): give it a mode and an endpoint or a check")
		}
		if p.Mode == "" {
			p.Mode = ModerationFailClosed
		}
		if err := oneOf(at.Key("mode"), "mode", p.Mode, ModerationOff, ModerationFailOpen, ModerationFailClosed); err != nil {
			return err
		}
		if p.Endpoint == nil && p.Check == nil && p.Guardrail == nil && p.Mode != ModerationOff {
			return errAt(at, "policy %s has neither an endpoint, a check nor a guardrail", name)
		}
		if g := p.Guardrail; g != nil {
			if err := prepareGuardrail(at.Key("guardrail"), g); err != nil {
				return err
			}
			if p.OutputWindow == 0 {
				p.OutputWindow = DefaultGuardrailWindow
			}
		}
		if p.OutputWindow < 0 || p.OutputWindow > maxModerationWindow {
			return errAt(at.Key("output_window"), "%d is not between 0 (hold the whole answer) and %d characters", p.OutputWindow, maxModerationWindow)
		}
		if p.MaxOutputBytes == 0 {
			p.MaxOutputBytes = DefaultModerationHold
		}
		if p.MaxOutputBytes < 1 || p.MaxOutputBytes > maxModerationHoldBytes {
			return errAt(at.Key("max_output_bytes"), "%d is not between 1 and %d", p.MaxOutputBytes, maxModerationHoldBytes)
		}
		if e := p.Endpoint; e != nil {
			eat := at.Key("endpoint")
			prov, ok := c.Providers[e.Provider]
			if !ok {
				return errAt(eat.Key("provider"), "unknown provider %s%s", show(e.Provider), didYouMean(e.Provider, c.ProviderIDs()))
			}
			if !prov.kind().Moderates && !prov.unchecked() {
				return errAt(eat.Key("provider"), "provider %s is kind %s; a moderation endpoint is an OpenAI-compatible (kind %s) provider", e.Provider, prov.Kind,
					kindsWith(func(k Kind) bool { return k.Moderates }))
			}
			if e.Model == "" {
				e.Model = DefaultModerationModel
			}
			if e.Timeout == 0 {
				e.Timeout = Duration(DefaultEndpointTimeout)
			}
			if err := checkModerationTimeout(eat.Key("timeout"), e.Timeout); err != nil {
				return err
			}
		}
		if k := p.Check; k != nil {
			kat := at.Key("check")
			if _, ok := c.Routes[k.Route]; !ok {
				return errAt(kat.Key("route"), "unknown route %s%s", show(k.Route), didYouMean(k.Route, c.RouteNames()))
			}
			if k.Prompt == "" {
				return errAt(kat.Key("prompt"), "the policy prompt is empty")
			}
			if k.Timeout == 0 {
				k.Timeout = Duration(DefaultCheckTimeout)
			}
			if err := checkModerationTimeout(kat.Key("timeout"), k.Timeout); err != nil {
				return err
			}
			if k.MaxTokens == 0 {
				k.MaxTokens = DefaultCheckMaxTokens
			}
			if k.MaxTokens < 8 || k.MaxTokens > 4096 {
				return errAt(kat.Key("max_tokens"), "%d is not between 8 and 4096", k.MaxTokens)
			}
		}
	}
	names := sortedKeys(c.Moderation.Policies)
	for _, r := range sortedKeys(c.Routes) {
		if n := c.Routes[r].Moderation; n != "" && c.Moderation.Policies[n] == nil {
			return errAt(pathOf("routes", r, "moderation"), "unknown moderation policy %s%s", show(n), didYouMean(n, names))
		}
	}
	for _, t := range sortedKeys(c.Teams) {
		if n := c.Teams[t].Moderation; n != "" && c.Moderation.Policies[n] == nil {
			return errAt(pathOf("teams", t, "moderation"), "unknown moderation policy %s%s", show(n), didYouMean(n, names))
		}
	}
	return nil
}

func checkModerationTimeout(at Path, d Duration) error {
	if d.D() < time.Millisecond || d.D() > maxModerationTimeout {
		return errAt(at, "%s is not between 1ms and %s", d.D(), maxModerationTimeout)
	}
	return nil
}
