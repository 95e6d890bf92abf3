package config

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"go.yaml.in/yaml/v3"
)

const (
	pa  = "providers: {a: {kind: fake}}\n"
	rm  = "routes: {m: {targets: [{provider: a}]}}\n"
	h1  = `"1111111111111111111111111111111111111111111111111111111111111111"`
	h2  = `"2222222222222222222222222222222222222222222222222222222222222222"`
	cfg = pa + rm
)

// errorCases: one per kind of error, each with its full message: the
// path, the value, the line and column, and a suggestion where one helps.
var errorCases = []struct{ name, in, want string }{
	// Decoding: unknown fields, types, durations, keys, syntax.
	{"unknown field, suggestion", pa + "routes:\n  fast:\n    first_token_timout: 1s\n    targets: [{provider: a}]\n",
		`config: routes.fast.first_token_timout: unknown field "first_token_timout", did you mean "first_token_timeout"? (line 4, column 5)`},
	{"unknown field, known list", "providers:\n  a: {kind: fake, zzz: 1}\n" + rm,
		`config: providers.a.zzz: unknown field "zzz" (known fields: kind, base_url, keys, auth_header, headers, region, endpoint, connect_timeout, disabled, fake, options, apis) (line 2, column 19)`},
	{"unknown top-level section", "provders: {}\n" + cfg,
		`config: provders: unknown field "provders", did you mean "providers"? (line 1, column 1)`},
	{"integer expected", pa + "routes:\n  fast:\n    attempts: three\n    targets: [{provider: a}]\n",
		`config: routes.fast.attempts: expected an integer, got string "three" (line 4, column 15)`},
	{"integer expected, fraction", pa + "routes: {m: {targets: [{provider: a}], max_fallbacks: 2.5}}\n",
		`config: routes.m.max_fallbacks: expected an integer, got number 2.5 (line 2, column 55)`},
	{"integer out of range", pa + "routes: {m: {targets: [{provider: a}], attempts: 99999999999999999999}}\n",
		`config: routes.m.attempts: expected an integer, got number 99999999999999999999, which is out of range (line 2, column 50)`},
	{"number not finite", pa + "routes: {m: {targets: [{provider: a}], retry_budget: .nan}}\n",
		`config: routes.m.retry_budget: expected a finite number, got number .nan (line 2, column 54)`},
	{"string expected (JSON)", "{\"providers\": {\"a\": {\"kind\": \"fake\"}},\n \"routes\": {\"fast\": {\"targets\": [{\"provider\": \"a\", \"model\": 5}]}}}\n",
		`config: routes.fast.targets[0].model: expected a string, got integer 5 (line 2, column 61)`},
	{"boolean expected", "providers: {a: {kind: fake, disabled: maybe}}\n" + rm,
		`config: providers.a.disabled: expected true or false, got string "maybe" (line 1, column 39)`},
	{"list expected", pa + "routes: {m: {targets: {provider: a}}}\n",
		`config: routes.m.targets: expected a list, got a mapping (line 2, column 23)`},
	{"mapping expected", "providers: {a: fake}\n" + rm,
		`config: providers.a: expected a mapping, got string "fake" (line 1, column 16)`},
	{"document not a mapping", "- 1\n- 2\n",
		`config: expected a mapping of sections (server, defaults, breaker, providers, routes, teams, iam_callers, prices, usage, cache, moderation, telemetry), got a list (line 1, column 1)`},
	{"bad duration", pa + "routes: {m: {first_token_timeout: 10 parsecs, targets: [{provider: a}]}}\n",
		`config: routes.m.first_token_timeout: "10 parsecs" is not a duration (unknown unit " parsecs"); write it like "10s", "1.5s" or "250ms" (line 2, column 35)`},
	{"duration without unit", pa + "routes: {m: {idle_timeout: 10, targets: [{provider: a}]}}\n",
		`config: routes.m.idle_timeout: expected a duration like "10s" or "250ms", got integer 10 (line 2, column 28)`},
	{"null duration", pa + "routes: {m: {idle_timeout: , targets: [{provider: a}]}}\n",
		`config: routes.m.idle_timeout: expected a duration like "10s" or "250ms", got null (line 2, column 28)`},
	{"negative duration", pa + "routes: {m: {idle_timeout: -1s, targets: [{provider: a}]}}\n",
		`config: routes.m.idle_timeout: duration "-1s" must not be negative (line 2, column 28)`},
	{"key not a string", "providers: {1: {kind: fake}}\n" + rm,
		`config: providers.1: the key integer 1 is not a string: quote it ("1") (line 1, column 13)`},
	{"key given twice", "providers:\n  a: {kind: fake}\n  a: {kind: fake}\n" + rm,
		`config: providers.a: key "a" is given twice (first at line 2) (line 3, column 3)`},
	{"bad merge", "providers:\n  a: {kind: fake, <<: 3}\n" + rm,
		`config: providers.a: a << merge takes a mapping or a list of mappings, got integer 3 (line 2, column 23)`},
	{"YAML syntax (scanner)", "providers:\n  a: {kind: fake}\n  b: x: y\n",
		`config: YAML syntax: mapping values are not allowed in this context (line 3)`},
	{"YAML syntax (parser)", "providers:\n  a:\n    - x\n    y: 1\n",
		`config: YAML syntax: did not find expected '-' indicator (line 4)`},
	{"YAML syntax (first line)", "providers: a: b\n", `config: YAML syntax: mapping values are not allowed in this context (line 1)`},
	{"unknown anchor", pa + "routes: {m: {targets: [*t]}}\n", `config: YAML syntax: *t refers to no &t before it (line 2, column 24)`},
	{"JSON syntax", "{\"providers\": {\"a\": {\"kind\": \"fake\"}}\n \"routes\": {\"m\": {}}}\n",
		`config: JSON syntax: invalid character '"' after object key:value pair (line 2, column 2)`},
	{"a team key is never echoed", cfg + "teams: {t: {keys: [{id: k1, sha256: " + h1 + ", revoked: llmgw_SECRETKEYxxxxxxxxx}]}}\n",
		`config: teams.t.keys[0].revoked: expected true or false, got string "llmgw_…" (a team key? not shown) (line 3, column 114)`},

	// Validation: server, defaults and route policies, breaker.
	{"max body", "server: {max_body_bytes: -1}\n" + cfg, `config: server.max_body_bytes: must be positive, got -1 (line 1, column 26)`},
	{"max upstream body", "server: {max_upstream_body_bytes: -1}\n" + cfg, `config: server.max_upstream_body_bytes: must be positive, got -1 (line 1, column 35)`},
	{"attempts", "defaults: {attempts: 11}\n" + cfg, `config: defaults.attempts: 11 is not between 1 and 10 (line 1, column 22)`},
	{"max fallbacks", "defaults: {max_fallbacks: -1}\n" + cfg, `config: defaults.max_fallbacks: -1 must not be negative (line 1, column 27)`},
	{"fallback category", "defaults:\n  fallback_on: [timeout, rate_limitted]\n" + cfg,
		`config: defaults.fallback_on[1]: unknown category "rate_limitted", did you mean "rate_limited"? (want one of invalid_request, authentication, permission, not_found, rate_limited, budget_exceeded, content_policy, context_length, timeout, overloaded, unavailable, interrupted, internal) (line 2, column 26)`},
	{"retry budget", "defaults: {retry_budget: 1.5}\n" + cfg, `config: defaults.retry_budget: 1.5 is not between 0 and 1 (line 1, column 26)`},
	{"backoff (inherited base)", pa + "routes:\n  m:\n    backoff_max: 50ms\n    targets: [{provider: a}]\n",
		`config: routes.m.backoff_base: 100ms exceeds backoff_max 50ms (line 4, column 5)`},
	{"failure rate", "breaker: {failure_rate: 2}\n" + cfg, `config: breaker.failure_rate: 2 is not in (0, 1] (line 1, column 25)`},
	{"cooldown", "breaker: {cooldown: 10m, max_cooldown: 5m}\n" + cfg, `config: breaker.cooldown: 10m0s exceeds max_cooldown 5m0s (line 1, column 21)`},
	{"breaker counts", "breaker: {half_open_probes: -2}\n" + cfg, `config: breaker.half_open_probes: -2 must be at least 1 (line 1, column 29)`},

	// Providers.
	{"no providers", rm, `config: providers: at least one provider is required`},
	{"null provider", "providers: {a: }\n" + rm, `config: providers.a: empty provider (null): give it at least a kind (anthropic, bedrock, fake, gemini or openai) (line 1, column 16)`},
	{"kind", "providers: {a: {kind: opneai}}\n" + rm, `config: providers.a.kind: unknown kind "opneai", did you mean "openai"? (want anthropic, bedrock, fake, gemini or openai) (line 1, column 23)`},
	{"base url", "providers: {a: {kind: openai, base_url: \"ftp://x\"}}\n" + rm, `config: providers.a.base_url: "ftp://x" is not an http(s) URL (kind openai needs one) (line 1, column 41)`},
	{"base url missing", "providers: {a: {kind: openai}}\n" + rm, `config: providers.a.base_url: "" is not an http(s) URL (kind openai needs one) (line 1, column 16)`},
	{"gemini base url", "providers: {a: {kind: gemini, base_url: \"generativelanguage.googleapis.com\"}}\n" + rm,
		`config: providers.a.base_url: "generativelanguage.googleapis.com" is not an http(s) URL (leave it out for https://generativelanguage.googleapis.com/v1beta) (line 1, column 41)`},
	{"fake mode", "providers: {a: {kind: fake, fake: {fail: sometimes}}}\n" + rm,
		`config: providers.a.fake.fail: unknown failure mode "sometimes" (want status, reset, stall, after_chunks or empty) (line 1, column 42)`},
	{"fake status", "providers: {a: {kind: fake, fake: {status: 200}}}\n" + rm, `config: providers.a.fake.status: 200 is not an HTTP error status (400-599) (line 1, column 44)`},
	{"script on a real kind", "providers: {a: {kind: bedrock, fake: {reply: hi}}}\n" + rm,
		`config: providers.a.fake: only kind fake takes a script, this provider is kind bedrock (line 1, column 38)`},
	{"max tokens field", "providers: {a: {kind: fake, options: {max_tokens_field: max_tokenz}}}\n" + rm,
		`config: providers.a.options.max_tokens_field: "max_tokenz" is not max_tokens or max_completion_tokens (line 1, column 57)`},
	{"key reference", "providers:\n  a:\n    kind: openai\n    base_url: https://x.test\n    keys:\n      - {env: K}\n      - {env: K2, ssm: /p}\n" + rm,
		`config: providers.a.keys[1]: set exactly one of env or ssm, got env "K2" and ssm "/p" (keys are never written inline) (line 7, column 9)`},
	{"auth header", "providers: {a: {kind: openai, base_url: \"https://x.test\", auth_header: x-api-kee}}\n" + rm,
		`config: providers.a.auth_header: "x-api-kee" is not authorization, api-key, x-api-key or x-goog-api-key, did you mean "x-api-key"? (line 1, column 72)`},
	{"static header", "providers: {a: {kind: fake, headers: {X-Ok: \"1\", Authorization: secret}}}\n" + rm,
		`config: providers.a.headers.Authorization: "Authorization" may not be set as a static header (line 1, column 65)`},

	// Routes and targets.
	{"no routes", pa, `config: routes: at least one route is required`},
	{"null route", pa + "routes: {m: }\n", `config: routes.m: empty route (null): give it targets (line 2, column 13)`},
	{"empty chain", pa + "routes: {m: {targets: []}}\n", `config: routes.m.targets: the chain is empty: list at least one {provider, model} or {route} (line 2, column 23)`},
	{"route and provider", pa + "routes: {m: {targets: [{provider: a, route: n}]}, n: {targets: [{provider: a}]}}\n",
		`config: routes.m.targets[0]: a target is either {route} or {provider, model}, not both (got route "n", provider "a") (line 2, column 24)`},
	{"unknown route", pa + "routes: {m: {targets: [{route: nn}]}, n: {targets: [{provider: a}]}}\n",
		`config: routes.m.targets[0].route: unknown route "nn", did you mean "n"? (line 2, column 32)`},
	{"provider missing", pa + "routes:\n  m:\n    targets:\n      - {provider: a}\n      - {model: x}\n",
		`config: routes.m.targets[1].provider: required: the provider id (one of a), or use {route: name} (line 6, column 9)`},
	{"unknown provider", "providers: {openai: {kind: fake}}\nroutes: {m: {targets: [{provider: opnai}]}}\n",
		`config: routes.m.targets[0].provider: unknown provider "opnai", did you mean "openai"? (providers: openai) (line 2, column 35)`},
	{"model missing", "providers: {a: {kind: bedrock}}\n" + rm, `config: routes.m.targets[0].model: required for provider a (kind bedrock) (line 2, column 24)`},
	{"breaker override", pa + "routes: {m: {targets: [{provider: a, breaker: opne}]}}\n",
		`config: routes.m.targets[0].breaker: "opne" is not open or closed, did you mean "open"? (line 2, column 47)`},
	{"target attempts", pa + "routes: {m: {targets: [{provider: a, attempts: 11}]}}\n",
		`config: routes.m.targets[0].attempts: 11 is not between 0 (the route's) and 10 (line 2, column 48)`},
	{"target max tokens", pa + "routes: {m: {targets: [{provider: a, max_tokens: -1}]}}\n",
		`config: routes.m.targets[0].max_tokens: -1 must not be negative (line 2, column 50)`},
	{"target options on another kind", pa + "routes: {m: {targets: [{provider: a, options: {prompt_caching: \"on\"}}]}}\n",
		`config: routes.m.targets[0].options: provider a (kind fake) takes no target options; only kind bedrock targets do (line 2, column 47)`},
	{"bedrock target option", "providers: {b: {kind: bedrock}}\nroutes: {m: {targets: [{provider: b, model: x, options: {prompt_cachng: \"on\"}}]}}\n",
		`config: routes.m.targets[0].options.prompt_cachng: unknown bedrock target option "prompt_cachng", did you mean "prompt_caching"? (options: base_model, openai_endpoint, prompt_caching) (line 2, column 58)`},
	{"bedrock prompt caching value", "providers: {b: {kind: bedrock}}\nroutes: {m: {targets: [{provider: b, model: x, options: {prompt_caching: \"yes\"}}]}}\n",
		`config: routes.m.targets[0].options.prompt_caching: "yes" is not on or off (line 2, column 74)`},
	{"variant name", pa + "routes: {m: {targets: [{provider: a, variant: {system: Terse.}}]}}\n",
		`config: routes.m.targets[0].variant.name: required: a name for the usage records (e.g. "terse-v2") (line 2, column 47)`},
	{"variant override and prefix", pa + "routes: {m: {targets: [{provider: a, variant: {name: v, system: A, system_prefix: B}}]}}\n",
		`config: routes.m.targets[0].variant.system: system replaces the system prompt; it cannot be combined with system_prefix or system_suffix (line 2, column 65)`},
	{"variant temperature", pa + "routes: {m: {targets: [{provider: a, variant: {name: v, temperature: 3}}]}}\n",
		`config: routes.m.targets[0].variant.temperature: 3 is not between 0 and 2 (line 2, column 70)`},
	{"cycle", pa + "routes:\n  m: {targets: [{route: n}]}\n  n: {targets: [{provider: a, model: x}, {route: m}]}\n",
		`config: routes.m: route references form a cycle: m -> n -> m (line 3, column 6)`},

	// Usage, teams, prices.
	{"usage ttl", cfg + "usage: {ttl: 1h}\n", `config: usage.ttl: 1h0m0s is shorter than the minimum 72h0m0s (line 3, column 14)`},
	{"store timeout", cfg + "usage: {store_timeout: 1m}\n", `config: usage.store_timeout: 1m0s is longer than 10s (line 3, column 24)`},
	{"team name", cfg + "teams:\n  \"a#b\": {}\n", `config: teams.a#b: team name "a#b" must be 1-64 letters, digits, '-', '_' or '.' (line 4, column 10)`},
	{"reserved team", cfg + "teams:\n  anonymous: {}\n", `config: teams.anonymous: "anonymous" is reserved for unauthenticated usage (line 4, column 14)`},
	{"null team", cfg + "teams:\n  t:\n", `config: teams.t: empty team (null): give it keys, or {} for a team without any (line 4, column 5)`},
	{"key id", cfg + "teams:\n  t:\n    keys:\n      - {id: \"k 1\", sha256: " + h1 + "}\n",
		`config: teams.t.keys[0].id: "k 1" must be 1-64 letters, digits, '-', '_' or '.' (line 6, column 14)`},
	{"duplicate key id", cfg + "teams:\n  t:\n    keys:\n      - {id: k1, sha256: " + h1 + "}\n      - {id: k1, sha256: " + h2 + "}\n",
		`config: teams.t.keys[1].id: duplicate key id "k1" in team t (line 7, column 14)`},
	{"key instead of hash", cfg + "teams:\n  t:\n    keys:\n      - {id: k1, sha256: llmgw_SECRETxxxxxxxxxxxxx}\n",
		`config: teams.t.keys[0].sha256: not 64 hex digits (put the SHA-256 of the key here, never the key; scripts/newkey prints it); the value is not shown (line 6, column 26)`},
	{"same hash twice", cfg + "teams:\n  t: {keys: [{id: k1, sha256: " + h1 + "}]}\n  u: {keys: [{id: k1, sha256: " + h1 + "}]}\n",
		`config: teams.u.keys[0].sha256: the same key hash is also teams.t.keys[0] (line 5, column 31)`},
	{"team route", cfg + "teams:\n  t: {routes: [m, mm]}\n", `config: teams.t.routes[1]: unknown route "mm", did you mean "m"? (line 4, column 19)`},
	{"team limit", cfg + "teams:\n  t: {limits: {requests_per_minute: -5}}\n",
		`config: teams.t.limits.requests_per_minute: -5 must be between 0 (unlimited) and 1e12 (line 4, column 37)`},
	{"concurrency scope", cfg + "teams:\n  t: {limits: {max_concurrent_requests: 2, concurrency_scope: global}}\n",
		`config: teams.t.limits.concurrency_scope: "global" is not a concurrency scope (instance or fleet) (line 4, column 63)`},
	{"fleet without a limit", cfg + "teams:\n  t: {limits: {concurrency_scope: fleet}}\n",
		`config: teams.t.limits.max_concurrent_requests: concurrency_scope fleet needs max_concurrent_requests between 1 and 1000, not 0 (line 4, column 15)`},
	{"tag name", cfg + "teams:\n  t: {tags: {\"a b\": {}}}\n", `config: teams.t.tags.a b: tag "a b" must be 1-64 letters, digits, - _ . : or / (line 4, column 21)`},
	{"tag limit", cfg + "teams:\n  t: {tags: {checkout: {cost_per_day_usd: -1}}}\n",
		`config: teams.t.tags.checkout.cost_per_day_usd: -1 must be between 0 (unlimited) and 1e12 (line 4, column 43)`},
	{"unpriced cost limit", pa + "routes: {m: {targets: [{provider: a, model: x}]}}\nteams:\n  t: {limits: {cost_per_day_usd: 5}}\n",
		`config: teams.t: has a cost limit but target a/x (route m) has no entry in prices: add prices."a/x" or prices."x" (line 4, column 6)`},
	{"price key", cfg + "prices:\n  \"a/\": {input: 1, output: 1}\n", `config: prices.a/: a price is keyed by "provider/model" or "model", not "a/" (line 4, column 9)`},
	{"price value", cfg + "prices:\n  x: {input: 1, output: 1, cached_input: -1}\n",
		`config: prices.x.cached_input: -1 is not a price in USD per million tokens (0 to 1e6) (line 4, column 42)`},
	{"tool price kind", cfg + "prices:\n  x: {input: 1, output: 1, tool_calls: {web_serch: 0.01}}\n",
		`config: prices.x.tool_calls.web_serch: "web_serch" is not a priced tool kind (one of web_search, web_fetch, code_execution, file_search, grounded_prompt) (line 4, column 52)`},
	{"tool price value", cfg + "prices:\n  x: {input: 1, output: 1, tool_calls: {web_search: -1}}\n",
		`config: prices.x.tool_calls.web_search: -1 is not a price in USD per call (0 to 1000) (line 4, column 53)`},
	{"tool hour kind", cfg + "prices:\n  x: {input: 1, output: 1, tool_hours: {web_search: 0.01}}\n",
		`config: prices.x.tool_hours.web_search: "web_search" is not a tool kind priced per hour (one of code_execution) (line 4, column 53)`},
	{"tool hour value", cfg + "prices:\n  x: {input: 1, output: 1, tool_hours: {code_execution: -1}}\n",
		`config: prices.x.tool_hours.code_execution: -1 is not a price in USD per hour (0 to 1000) (line 4, column 57)`},
}

func TestErrorsNamePathValueLineAndColumn(t *testing.T) {
	for _, tc := range errorCases {
		t.Run(tc.name, func(t *testing.T) {
			c, err := Parse([]byte(tc.in))
			if err == nil || c != nil {
				t.Fatalf("accepted:\n%s", tc.in)
			}
			if err.Error() != tc.want {
				t.Fatalf("got  %s\nwant %s", err, tc.want)
			}
			var e *Error
			if !errors.As(err, &e) {
				t.Fatalf("%T is not an *Error", err)
			}
			if strings.Contains(err.Error(), "SECRET") {
				t.Fatalf("the error echoes what may be a key: %v", err)
			}
			if strings.Contains(err.Error(), "Go struct") || strings.Contains(err.Error(), "config.") {
				t.Fatalf("the error speaks Go: %v", err)
			}
		})
	}
}

// TestLoadFileNamesTheFile: the file name leads the message.
func TestLoadFileNamesTheFile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "gw.yaml")
	if err := os.WriteFile(path, []byte(pa+"routes:\n  fast:\n    attempts: three\n    targets: [{provider: a}]\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	_, err := LoadFile(path)
	want := "config " + path + `: routes.fast.attempts: expected an integer, got string "three" (line 4, column 15)`
	if err == nil || err.Error() != want {
		t.Fatalf("got  %v\nwant %s", err, want)
	}
}

func TestLocate(t *testing.T) {
	doc := "base: &b {kind: fake}\nproviders:\n  \"gpt-4.1\": {<<: *b, Base_URL: x}\nroutes:\n  m:\n    targets:\n      - {provider: a}\n"
	root := parseNode(t, doc)
	for _, c := range []struct {
		path       Path
		line, col  int
		n          int
		keyLine    int
		keyPresent bool
	}{
		{pathOf("routes", "m", "targets", 0, "provider"), 7, 20, 5, 7, true},
		{pathOf("routes", "m", "targets", 0, "model"), 7, 9, 4, 0, false},
		{pathOf("providers", "gpt-4.1", "kind"), 1, 17, 3, 1, true},     // through the merge, to the anchor
		{pathOf("providers", "gpt-4.1", "base_url"), 3, 33, 3, 3, true}, // a key in other case sets the field
		{pathOf("routes", "x"), 5, 3, 1, 4, true},
	} {
		k, v, n := Locate(root, c.path)
		if n != c.n || v == nil || v.Line != c.line || v.Column != c.col || (k != nil) != c.keyPresent || k != nil && k.Line != c.keyLine {
			t.Errorf("Locate(%s) = key %v, value %d:%d, n %d", c.path, k, v.Line, v.Column, n)
		}
	}
}

func parseNode(t *testing.T, doc string) *yaml.Node {
	t.Helper()
	var n yaml.Node
	if err := yaml.Unmarshal([]byte(doc), &n); err != nil {
		t.Fatal(err)
	}
	return &n
}
