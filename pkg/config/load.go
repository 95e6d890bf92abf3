package config

import (
	"bytes"
	_ "embed"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"time"

	"go.yaml.in/yaml/v3"

	"github.com/llmgw/llmgw/pkg/gwerr"
)

//go:embed demo.yaml
var demoYAML []byte

// Demo returns the built-in demo config: fake providers only (one of them
// failing), so failover can be seen with curl and no API keys.
func Demo() *Config {
	c, err := Parse(demoYAML)
	if err != nil {
		panic("config: built-in demo config is invalid: " + err.Error())
	}
	return c
}

// DemoYAML returns the text of the built-in demo config.
func DemoYAML() []byte { return slices.Clone(demoYAML) }

// LoadFile reads, defaults and validates a config file. Its errors are
// *Error with Source set to path, except a failure to read the file.
func LoadFile(path string) (*Config, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("config: %w", err)
	}
	c, err := Parse(b)
	if err != nil {
		var e *Error
		if errors.As(err, &e) {
			e.Source = path
			return nil, e
		}
		return nil, fmt.Errorf("config %s: %w", path, err)
	}
	return c, nil
}

// Parse decodes YAML or JSON (JSON is YAML), rejecting unknown fields, then
// applies defaults and validates. Every error is an *Error naming the path
// of the offending field, its value, and its line and column.
//
// YAML is read as YAML 1.2 (yaml.v3): "n", "no" and "on" stay strings, so a
// route or provider may be called that. The document is turned into JSON
// and decoded strictly, so YAML and JSON configs behave the same.
func Parse(b []byte) (*Config, error) {
	c, err := decode(b)
	if err == nil {
		if err = c.prepare(); err == nil {
			return c, nil
		}
	}
	return nil, explain(b, err)
}

// decodeError is a failure of decode, to be explained from the document.
type decodeError struct{ err error }

// Error is the decoder's message.
func (d decodeError) Error() string { return d.err.Error() }

// decode is the loader's decoding: YAML to generic values, to JSON, decoded
// strictly into a Config. It defines what is accepted.
func decode(b []byte) (*Config, error) {
	var doc any
	if err := yaml.Unmarshal(b, &doc); err != nil {
		return nil, decodeError{err}
	}
	js, err := json.Marshal(doc)
	if err != nil {
		return nil, decodeError{err}
	}
	dec := json.NewDecoder(bytes.NewReader(js))
	dec.DisallowUnknownFields()
	var c Config
	if err := dec.Decode(&c); err != nil {
		return nil, decodeError{err}
	}
	return &c, nil
}

// explain turns a failure of decode or of validation into an *Error with
// a path, a line and a column, reading the document again as a node tree.
func explain(b []byte, err error) error {
	var root yaml.Node
	if yerr := yaml.Unmarshal(b, &root); yerr != nil {
		return syntaxError(b, yerr)
	}
	var e *Error
	if errors.As(err, &e) {
		e.position(&root)
		return e
	}
	c := checker{budget: 1 << 20}
	if cerr := c.check(&root, reflect.TypeFor[Config](), nil); cerr != nil && cerr != errStop {
		return cerr
	}
	// The walk found nothing: report the decoder's words.
	msg := err.Error()
	for _, p := range []string{"yaml: ", "json: ", "unmarshal errors:\n  "} {
		msg = strings.TrimPrefix(msg, p)
	}
	e = &Error{Msg: msg}
	if line, rest, ok := cutLine(msg); ok {
		e.Line, e.Msg = line, rest
	}
	return e
}

// syntaxError converts a parse error. A JSON document gets encoding/json's
// exact position. yaml.v3 reports a line but no column, and for the
// parser's errors (as opposed to the scanner's) a 0-based line: corrected.
func syntaxError(b []byte, err error) *Error {
	if t := bytes.TrimSpace(b); len(t) > 0 && t[0] == '{' {
		var v any
		var se *json.SyntaxError
		if jerr := json.Unmarshal(t, &v); errors.As(jerr, &se) {
			line, col := lineCol(b[:len(b)-len(bytes.TrimLeft(b, " \t\r\n"))+int(se.Offset)])
			return &Error{Msg: "JSON syntax: " + se.Error(), Line: line, Column: col}
		}
	}
	msg := strings.TrimPrefix(err.Error(), "yaml: ")
	line, rest, ok := cutLine(msg)
	e := &Error{Msg: "YAML syntax: " + rest, Line: line}
	var anchor string
	switch {
	case parserProblems[rest]:
		e.Line++ // 0-based, or absent for the first line
	case !ok && strings.HasPrefix(rest, "unknown anchor '"):
		anchor = strings.TrimSuffix(strings.TrimPrefix(rest, "unknown anchor '"), "' referenced")
		e.Msg = "YAML syntax: *" + anchor + " refers to no &" + anchor + " before it"
		for i := 0; i < len(b); i++ { // the first *anchor as a whole word
			if j := i + 1 + len(anchor); b[i] == '*' && bytes.HasPrefix(b[i+1:], []byte(anchor)) && (j == len(b) || strings.IndexByte(" ,]}\n\r\t", b[j]) >= 0) {
				e.Line, e.Column = lineCol(b[:i+1])
				break
			}
		}
	case !ok && !strings.Contains(rest, "anchor") && !strings.Contains(rest, "alias"):
		e.Line = 1 // yaml.v3 leaves the line out on the first line
	}
	if anchor == "" {
		positionSyntaxError(b, e, rest)
	}
	return e
}

// parserProblems are yaml.v3's parser errors (parserc.go), whose line it
// reports 0-based.
var parserProblems = map[string]bool{
	"did not find expected <stream-start>": true, "did not find expected <document start>": true,
	"found undefined tag handle": true, "did not find expected node content": true,
	"did not find expected '-' indicator": true, "did not find expected key": true,
	"did not find expected ',' or ']'": true, "did not find expected ',' or '}'": true,
	"found duplicate %YAML directive": true, "found incompatible YAML document": true,
	"found duplicate %TAG directive": true,
}

// lineCol is the 1-based line and column of the last byte of b.
func lineCol(b []byte) (line, col int) {
	line = 1 + bytes.Count(b[:max(len(b)-1, 0)], []byte("\n"))
	return line, len(b) - 1 - bytes.LastIndexByte(b[:max(len(b)-1, 0)], '\n')
}

// cutLine splits "line N: rest".
func cutLine(msg string) (int, string, bool) {
	num, rest, ok := strings.Cut(strings.TrimPrefix(msg, "line "), ": ")
	if !ok || !strings.HasPrefix(msg, "line ") {
		return 0, msg, false
	}
	n, err := strconv.Atoi(num)
	if err != nil {
		return 0, msg, false
	}
	return n, rest, true
}

// Built-in defaults.
const (
	defaultMaxBody        = 4 << 20
	defaultRequestTimeout = 10 * time.Minute
	defaultDeadlineMargin = 2 * time.Second
	// DefaultClientIdleTimeout is server.client_idle_timeout's default.
	DefaultClientIdleTimeout = 30 * time.Second
)

// BuiltinPolicy is the policy every unset field falls back to.
func BuiltinPolicy() Policy {
	return Policy{
		FirstTokenTimeout: Duration(10 * time.Second),
		IdleTimeout:       Duration(30 * time.Second),
		ResponseTimeout:   Duration(5 * time.Minute),
		Attempts:          2,
		FallbackOn:        []gwerr.Category{gwerr.RateLimited, gwerr.Timeout, gwerr.Overloaded, gwerr.Unavailable, gwerr.ContextLength},
		RetryAfterCap:     Duration(2 * time.Second),
		BackoffBase:       Duration(100 * time.Millisecond),
		BackoffMax:        Duration(2 * time.Second),
		RetryBudget:       0.1,
		MinRetriesPerMin:  5,
	}
}

// BuiltinBreaker is the breaker settings every unset field falls back to.
// The short cooldown lets a healed provider back quickly: with one probe
// per cooldown across all instances, a primary that recovers serves again
// within max_cooldown plus one request gap (docs/failover.md).
func BuiltinBreaker() BreakerSettings {
	return BreakerSettings{
		Window:              Duration(60 * time.Second),
		MinRequests:         10,
		FailureRate:         0.5,
		ConsecutiveFailures: 5,
		Cooldown:            Duration(5 * time.Second),
		MaxCooldown:         Duration(10 * time.Second),
		HalfOpenProbes:      1,
	}
}

// merge fills p's zero fields from d.
func (p Policy) merge(d Policy) Policy {
	set := func(v *Duration, dv Duration) {
		if *v == 0 {
			*v = dv
		}
	}
	set(&p.FirstTokenTimeout, d.FirstTokenTimeout)
	set(&p.IdleTimeout, d.IdleTimeout)
	set(&p.ResponseTimeout, d.ResponseTimeout)
	set(&p.RetryAfterCap, d.RetryAfterCap)
	set(&p.BackoffBase, d.BackoffBase)
	set(&p.BackoffMax, d.BackoffMax)
	if p.Attempts == 0 {
		p.Attempts = d.Attempts
	}
	if p.MaxFallbacks == nil {
		p.MaxFallbacks = d.MaxFallbacks
	}
	if p.FallbackOn == nil {
		p.FallbackOn = d.FallbackOn
	}
	if p.RetryBudget == 0 {
		p.RetryBudget = d.RetryBudget
	}
	if p.MinRetriesPerMin == 0 {
		p.MinRetriesPerMin = d.MinRetriesPerMin
	}
	if p.HeadBuffer == nil {
		p.HeadBuffer = d.HeadBuffer
	}
	if p.Continuation == nil {
		p.Continuation = d.Continuation
	}
	if !p.RetrySameTargetOnTimeout {
		p.RetrySameTargetOnTimeout = d.RetrySameTargetOnTimeout
	}
	if p.TranslateWithout == nil {
		p.TranslateWithout = d.TranslateWithout
	}
	return p
}

// merge fills b's zero fields from d.
func (b BreakerSettings) merge(d BreakerSettings) BreakerSettings {
	if b.MaxCooldown == 0 && b.Cooldown > d.MaxCooldown {
		b.MaxCooldown = b.Cooldown // a longer cooldown than the default cap: it is the cap
	}
	for _, f := range []struct{ v, dv *Duration }{{&b.Window, &d.Window}, {&b.Cooldown, &d.Cooldown}, {&b.MaxCooldown, &d.MaxCooldown}} {
		if *f.v == 0 {
			*f.v = *f.dv
		}
	}
	if b.MinRequests == 0 {
		b.MinRequests = d.MinRequests
	}
	if b.FailureRate == 0 {
		b.FailureRate = d.FailureRate
	}
	if b.ConsecutiveFailures == 0 {
		b.ConsecutiveFailures = d.ConsecutiveFailures
	}
	if b.HalfOpenProbes == 0 {
		b.HalfOpenProbes = d.HalfOpenProbes
	}
	if l := b.Latency; l != nil {
		c := *l
		if c.Percentile == 0 {
			c.Percentile = 0.95
		}
		if c.MinRequests == 0 {
			c.MinRequests = 20
		}
		if c.Window == 0 {
			c.Window = Duration(60 * time.Second)
		}
		if c.Cooldown == 0 {
			c.Cooldown = Duration(30 * time.Second)
		}
		b.Latency = &c
	}
	return b
}

// prepare applies defaults and validates. Its errors are *Error, without
// a position yet (Parse adds it).
func (c *Config) prepare() error {
	if c.Server.MaxBodyBytes == 0 {
		c.Server.MaxBodyBytes = defaultMaxBody
	}
	if c.Server.MaxUpstreamBodyBytes == 0 {
		c.Server.MaxUpstreamBodyBytes = DefaultMaxUpstreamBodyBytes
	}
	if c.Server.AnthropicBetas == nil {
		c.Server.AnthropicBetas = DefaultAnthropicBetas
	}
	if c.Server.RequestTimeout == 0 {
		c.Server.RequestTimeout = Duration(defaultRequestTimeout)
	}
	if c.Server.DeadlineMargin == 0 {
		c.Server.DeadlineMargin = Duration(defaultDeadlineMargin)
	}
	if c.Server.ClientIdleTimeout == 0 {
		c.Server.ClientIdleTimeout = Duration(DefaultClientIdleTimeout)
	}
	if c.Server.MaxBodyBytes < 0 {
		return errAt(pathOf("server", "max_body_bytes"), "must be positive, got %d", c.Server.MaxBodyBytes)
	}
	if c.Server.MaxUpstreamBodyBytes < 0 {
		return errAt(pathOf("server", "max_upstream_body_bytes"), "must be positive, got %d", c.Server.MaxUpstreamBodyBytes)
	}
	if err := c.Server.CORS.prepare(); err != nil {
		return err
	}
	if err := c.Telemetry.prepare(); err != nil {
		return err
	}
	c.Defaults = c.Defaults.merge(BuiltinPolicy())
	if err := c.Defaults.validate(pathOf("defaults")); err != nil {
		return err
	}
	c.Breaker = c.Breaker.merge(BuiltinBreaker())
	if err := c.Breaker.validate(); err != nil {
		return err
	}
	if len(c.Providers) == 0 {
		return errAt(pathOf("providers"), "at least one provider is required")
	}
	for _, id := range sortedKeys(c.Providers) {
		if err := c.Providers[id].validate(pathOf("providers", id)); err != nil {
			return err
		}
	}
	if len(c.Routes) == 0 {
		return errAt(pathOf("routes"), "at least one route is required")
	}
	for _, name := range sortedKeys(c.Routes) {
		r, at := c.Routes[name], pathOf("routes", name)
		if r == nil {
			return errAt(at, "empty route (null): give it targets")
		}
		r.Policy = r.Policy.merge(c.Defaults)
		if err := r.Policy.validate(at); err != nil {
			return err
		}
		if len(r.Targets) == 0 {
			return errAt(at.Key("targets"), "the chain is empty: list at least one {provider, model} or {route}")
		}
		for i, t := range r.Targets {
			if err := c.validateTarget(at.Key("targets").Index(i), t); err != nil {
				return err
			}
		}
	}
	if err := c.validateBedrockIDs(); err != nil {
		return err
	}
	done := map[string]bool{}
	for _, name := range sortedKeys(c.Routes) {
		if err := c.checkCycle(name, nil, done); err != nil {
			return err
		}
	}
	c.resolveChains()
	if err := c.prepareTeams(); err != nil {
		return err
	}
	if err := c.prepareIAMCallers(); err != nil {
		return err
	}
	return c.prepareServing()
}
