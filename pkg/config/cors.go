package config

import (
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"
)

// CORS is server.cors: the web origins whose pages may call the gateway
// from a browser. It is off (no origin allowed, preflights refused) unless
// AllowOrigins lists at least one origin.
//
// Locally the gateway answers preflights and sets the Access-Control
// headers itself. On AWS the Function URL does both, from the same
// setting: the stack reads it from the seeded config (infra/seed-config.yaml)
// at deploy time, and the function adds no CORS headers of its own.
type CORS struct {
	// AllowOrigins are the origins allowed, exactly as a browser sends them
	// in the Origin header: scheme://host[:port], lowercase, no path (e.g.
	// https://app.example.com, http://localhost:5173). There is no wildcard.
	AllowOrigins []string `json:"allow_origins,omitempty"`
	// AllowHeaders are the request headers a page may send, matched without
	// regard to case (default DefaultCORSHeaders: authorization,
	// content-type, the gateway's own headers and those the OpenAI and
	// Anthropic JavaScript SDKs send).
	AllowHeaders []string `json:"allow_headers,omitempty"`
	// MaxAge is how long a browser may cache a preflight answer (default
	// 10m; whole seconds, at most 24h, the Function URL's limit).
	MaxAge Duration `json:"max_age,omitempty"`
}

// DefaultCORSHeaders returns the request headers allowed when
// server.cors.allow_headers is not given.
func DefaultCORSHeaders() []string {
	return []string{
		"authorization", "content-type", "x-gateway-tag", "x-request-id",
		// The Stainless-generated SDKs (openai, @anthropic-ai/sdk) send these
		// from a browser too.
		"x-stainless-arch", "x-stainless-lang", "x-stainless-os", "x-stainless-package-version",
		"x-stainless-retry-count", "x-stainless-runtime", "x-stainless-runtime-version",
		"x-stainless-timeout", "x-stainless-helper-method",
		// Anthropic's SDK: its key header, version, betas and browser opt-in.
		"x-api-key", "anthropic-version", "anthropic-beta", "anthropic-dangerous-direct-browser-access",
	}
}

const (
	defaultCORSMaxAge = 10 * time.Minute
	maxCORSMaxAge     = 24 * time.Hour
)

// Enabled reports whether any origin is allowed.
func (c CORS) Enabled() bool { return len(c.AllowOrigins) > 0 }

// AllowsOrigin reports whether a request's Origin header is allowed.
func (c CORS) AllowsOrigin(origin string) bool { return slices.Contains(c.AllowOrigins, origin) }

// AllowsHeader reports whether a page may send the named request header.
func (c CORS) AllowsHeader(name string) bool {
	return slices.ContainsFunc(c.AllowHeaders, func(h string) bool { return strings.EqualFold(h, name) })
}

// prepare defaults and validates server.cors.
func (c *CORS) prepare() error {
	at := pathOf("server", "cors")
	if !c.Enabled() {
		switch {
		case len(c.AllowHeaders) > 0:
			return errAt(at.Key("allow_headers"), "has no effect without allow_origins: list the origins allowed, or remove server.cors")
		case c.MaxAge != 0:
			return errAt(at.Key("max_age"), "has no effect without allow_origins: list the origins allowed, or remove server.cors")
		}
		return nil
	}
	for i, o := range c.AllowOrigins {
		if err := checkOrigin(o); err != "" {
			return errAt(at.Key("allow_origins").Index(i), "%q %s", o, err)
		}
	}
	if len(c.AllowHeaders) == 0 {
		c.AllowHeaders = DefaultCORSHeaders()
	}
	for i, h := range c.AllowHeaders {
		if !headerToken(h) {
			return errAt(at.Key("allow_headers").Index(i), "%q is not a header name (letters, digits and - only; there is no wildcard)", h)
		}
	}
	if c.MaxAge == 0 {
		c.MaxAge = Duration(defaultCORSMaxAge)
	}
	if d := c.MaxAge.D(); d < time.Second || d > maxCORSMaxAge || d%time.Second != 0 {
		return errAt(at.Key("max_age"), "%s must be whole seconds between 1s and 24h", d)
	}
	return nil
}

// checkOrigin explains what is wrong with an allow_origins entry ("" when
// nothing is).
func checkOrigin(o string) string {
	if o == "*" || o == "null" {
		return "is not accepted: list each origin (scheme://host[:port]) whose pages may call the gateway"
	}
	u, err := url.Parse(o)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return "is not an origin: write scheme://host[:port], e.g. https://app.example.com"
	}
	want := strings.ToLower(u.Scheme + "://" + u.Host)
	if o != want {
		return "is not written as a browser sends it: write " + strconv.Quote(want) + " (lowercase, no path, query or trailing slash)"
	}
	return ""
}

// headerToken reports whether s is a plausible header name.
func headerToken(s string) bool {
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '-' || c == '_') {
			return false
		}
	}
	return true
}

// ParseCORS reads only server.cors from a config document, with the
// defaults and validation Parse gives it, for a tool that configures the
// same CORS in front of the gateway (the stack: the Function URL's CORS,
// from the seeded config). The document may be one part of a merged config
// (no providers or routes); it must still be free of unknown fields. Its
// errors are *Error, as Parse's.
func ParseCORS(b []byte) (CORS, error) {
	c, err := decode(b)
	if err == nil {
		if err = c.Server.CORS.prepare(); err == nil {
			return c.Server.CORS, nil
		}
	}
	return CORS{}, explain(b, err)
}
