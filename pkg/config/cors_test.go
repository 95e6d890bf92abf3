package config

import (
	"slices"
	"strings"
	"testing"
	"time"
)

// TestCORSConfig: server.cors is off by default; with origins, the
// default headers and max age apply; every mistake is an error naming the
// field, the value and its line and column.
func TestCORSConfig(t *testing.T) {
	c, err := Parse([]byte(cfg))
	if err != nil {
		t.Fatal(err)
	}
	if c.Server.CORS.Enabled() {
		t.Error("CORS on by default")
	}
	c, err = Parse([]byte("server:\n  cors: {allow_origins: [https://app.example.com]}\n" + cfg))
	if err != nil {
		t.Fatal(err)
	}
	cors := c.Server.CORS
	if !cors.AllowsOrigin("https://app.example.com") || cors.AllowsOrigin("https://other.example.com") ||
		cors.MaxAge.D() != 10*time.Minute || !slices.Equal(cors.AllowHeaders, DefaultCORSHeaders()) ||
		!cors.AllowsHeader("Authorization") || !cors.AllowsHeader("X-Stainless-OS") || cors.AllowsHeader("cookie") {
		t.Errorf("defaults: %+v", cors)
	}
	c, err = Parse([]byte("server:\n  cors: {allow_origins: [http://localhost:5173], allow_headers: [Authorization, Content-Type], max_age: 1h}\n" + cfg))
	if err != nil {
		t.Fatal(err)
	}
	if cors := c.Server.CORS; !cors.AllowsHeader("authorization") || cors.AllowsHeader("x-gateway-tag") || cors.MaxAge.D() != time.Hour {
		t.Errorf("explicit: %+v", cors)
	}

	for _, tc := range []struct{ in, want string }{
		{"server:\n  cors:\n    allow_origins: [\"*\"]\n",
			`config: server.cors.allow_origins[0]: "*" is not accepted: list each origin (scheme://host[:port]) whose pages may call the gateway (line 3, column 21)`},
		{"server:\n  cors:\n    allow_origins: [https://a.example.com, app.example.com]\n",
			`config: server.cors.allow_origins[1]: "app.example.com" is not an origin: write scheme://host[:port], e.g. https://app.example.com (line 3, column 44)`},
		{"server:\n  cors:\n    allow_origins: [https://App.example.com/]\n",
			`config: server.cors.allow_origins[0]: "https://App.example.com/" is not written as a browser sends it: write "https://app.example.com" (lowercase, no path, query or trailing slash) (line 3, column 21)`},
		{"server:\n  cors:\n    allow_origins: [https://a.example.com]\n    allow_headers: [content-type, \"x-*\"]\n",
			`config: server.cors.allow_headers[1]: "x-*" is not a header name (letters, digits and - only; there is no wildcard) (line 4, column 35)`},
		{"server:\n  cors:\n    allow_origins: [https://a.example.com]\n    max_age: 48h\n",
			`config: server.cors.max_age: 48h0m0s must be whole seconds between 1s and 24h (line 4, column 14)`},
		{"server:\n  cors:\n    allow_headers: [authorization]\n",
			`config: server.cors.allow_headers: has no effect without allow_origins: list the origins allowed, or remove server.cors (line 3, column 20)`},
		{"server:\n  cors:\n    allow_origin: [https://a.example.com]\n",
			`config: server.cors.allow_origin: unknown field "allow_origin", did you mean "allow_origins"? (line 3, column 5)`},
	} {
		_, err := Parse([]byte(tc.in + cfg))
		if err == nil || err.Error() != tc.want {
			t.Errorf("%q:\n got %v\nwant %s", tc.in, err, tc.want)
		}
	}
}

// TestParseCORS reads server.cors alone, as Parse would, from a document
// that is not a whole config.
func TestParseCORS(t *testing.T) {
	c, err := ParseCORS([]byte("teams: {}\nserver:\n  cors: {allow_origins: [https://a.example.com], max_age: 5m}\n"))
	if err != nil || !c.AllowsOrigin("https://a.example.com") || c.MaxAge.D() != 5*time.Minute || !slices.Equal(c.AllowHeaders, DefaultCORSHeaders()) {
		t.Errorf("%+v %v", c, err)
	}
	if c, err := ParseCORS([]byte("teams: {}\n")); err != nil || c.Enabled() {
		t.Errorf("no server.cors: %+v %v", c, err)
	}
	if _, err := ParseCORS([]byte("server:\n  cors: {allow_origins: [\"*\"]}\n")); err == nil || !strings.Contains(err.Error(), "server.cors.allow_origins[0]") || !strings.Contains(err.Error(), "line 2") {
		t.Errorf("error %v", err)
	}
}
