package server_test

import (
	"bufio"
	"net/http"
	"strings"
	"testing"

	"github.com/llmgw/llmgw/pkg/exchange"
	"github.com/llmgw/llmgw/pkg/gwerr"
	"github.com/llmgw/llmgw/pkg/server"
)

const corsConfig = "server:\n  cors:\n    allow_origins: [https://app.example.com, http://localhost:5173]\n    max_age: 90s\n"

// preflight sends what a browser sends before a cross-origin POST with
// JSON and a key: OPTIONS with Origin, Access-Control-Request-Method and
// -Headers, and nothing else (no credentials).
func preflight(t *testing.T, url, origin, method, headers string) *http.Response {
	t.Helper()
	req, _ := http.NewRequest(http.MethodOptions, url, nil)
	req.Header.Set("Origin", origin)
	req.Header.Set("Access-Control-Request-Method", method)
	if headers != "" {
		req.Header.Set("Access-Control-Request-Headers", headers)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	readAll(t, resp.Body)
	resp.Body.Close()
	return resp
}

// corsHeaders returns the Access-Control-* headers of h, if any.
func corsHeaders(h http.Header) []string {
	var out []string
	for k := range h {
		if strings.HasPrefix(strings.ToLower(k), "access-control-") {
			out = append(out, k)
		}
	}
	return out
}

// TestCORSPreflight: with server.cors, a browser's preflight from an
// allowed origin is answered 204 with the origin, methods, headers, max
// age and Vary: Origin, before authentication (preflights carry no key);
// a preflight from another origin, for another method or with a header not
// allowed gets a 403 with no CORS headers. No preflight reaches a provider.
func TestCORSPreflight(t *testing.T) {
	up := newUpstream(t, okHandler)
	g := newGateway(t, corsConfig+oneRoute("", up.URL), func(o *server.Options) {
		o.Authenticate = func(r *http.Request) (*exchange.Caller, error) {
			return nil, gwerr.New(gwerr.Authentication, "no key")
		}
	})
	chat := g.URL + "/v1/chat/completions"
	sdkHeaders := "authorization,content-type,x-stainless-arch,x-stainless-lang,x-stainless-os,x-stainless-package-version,x-stainless-retry-count,x-stainless-runtime,x-stainless-runtime-version,x-stainless-timeout"
	for _, path := range []string{"/v1/chat/completions", "/v1/models", "/healthz", "/v1/usage"} {
		resp := preflight(t, g.URL+path, "https://app.example.com", "POST", sdkHeaders)
		if resp.StatusCode != http.StatusNoContent {
			t.Fatalf("%s: preflight status %d", path, resp.StatusCode)
		}
		h := resp.Header
		if h.Get("Access-Control-Allow-Origin") != "https://app.example.com" || h.Get("Access-Control-Allow-Methods") != "GET, HEAD, POST" ||
			h.Get("Access-Control-Max-Age") != "90" || h.Get("Vary") != "Origin" {
			t.Errorf("%s: preflight headers %v", path, h)
		}
		allowed := strings.Split(h.Get("Access-Control-Allow-Headers"), ", ")
		for _, want := range strings.Split(sdkHeaders, ",") {
			if !contains(allowed, want) {
				t.Errorf("%s: Access-Control-Allow-Headers %v lacks %s", path, allowed, want)
			}
		}
	}
	if resp := preflight(t, chat, "http://localhost:5173", "GET", ""); resp.StatusCode != http.StatusNoContent {
		t.Errorf("second origin: %d", resp.StatusCode)
	}
	for name, tc := range map[string][3]string{
		"other origin":       {"https://evil.example.com", "POST", "content-type"},
		"origin with a path": {"https://app.example.com/x", "POST", "content-type"},
		"origin case":        {"https://APP.example.com", "POST", "content-type"},
		"null origin":        {"null", "POST", "content-type"},
		"method":             {"https://app.example.com", "PUT", "content-type"},
		"header":             {"https://app.example.com", "POST", "content-type, x-secret-thing"},
	} {
		resp := preflight(t, chat, tc[0], tc[1], tc[2])
		if resp.StatusCode != http.StatusForbidden || len(corsHeaders(resp.Header)) > 0 {
			t.Errorf("%s: status %d, CORS headers %v", name, resp.StatusCode, corsHeaders(resp.Header))
		}
	}
	if !strings.Contains(g.logs.String(), `"msg":"cors preflight refused"`) || !strings.Contains(g.logs.String(), "x-secret-thing") {
		t.Errorf("refusals not logged with their reason: %s", g.logs.String())
	}
	if up.hits.Load() != 0 {
		t.Errorf("a preflight reached the upstream")
	}
}

// TestCORSHeadersOnResponsesAndStreams: a request from an allowed origin
// gets Access-Control-Allow-Origin and Expose-Headers (the gateway's
// trace headers) on whole bodies, streams and errors; from any other
// origin it gets none. Every response says Vary: Origin.
func TestCORSHeadersOnResponsesAndStreams(t *testing.T) {
	up := newUpstream(t, okHandler)
	g := newGateway(t, corsConfig+oneRoute("", up.URL))
	check := func(name string, resp *http.Response, allowed bool) {
		t.Helper()
		h := resp.Header
		if h.Get("Vary") != "Origin" {
			t.Errorf("%s: Vary %q", name, h.Get("Vary"))
		}
		if !allowed {
			if got := corsHeaders(h); len(got) > 0 {
				t.Errorf("%s: CORS headers %v for an origin not allowed", name, got)
			}
			return
		}
		expose := strings.Split(h.Get("Access-Control-Expose-Headers"), ", ")
		if h.Get("Access-Control-Allow-Origin") != "https://app.example.com" ||
			!contains(expose, "x-request-id") || !contains(expose, "x-gateway-provider") || !contains(expose, "x-gateway-error-category") {
			t.Errorf("%s: headers %v", name, h)
		}
	}
	origin := []string{"Origin", "https://app.example.com"}

	resp := g.post(t, chatBody, origin...)
	if body := readAll(t, resp.Body); resp.StatusCode != 200 || !strings.Contains(body, "Hello world") {
		t.Fatalf("status %d: %s", resp.StatusCode, body)
	}
	check("body", resp, true)

	resp = g.post(t, streamBody, origin...)
	check("stream", resp, true)
	sc := bufio.NewScanner(resp.Body)
	frames := 0
	for sc.Scan() {
		if strings.HasPrefix(sc.Text(), "data: ") {
			frames++
		}
	}
	if frames < 3 {
		t.Errorf("stream had %d frames", frames)
	}

	resp = g.post(t, `{"model":"nope","messages":[{"role":"user","content":"x"}]}`, origin...)
	readAll(t, resp.Body)
	if resp.StatusCode != 404 {
		t.Fatalf("unknown model: %d", resp.StatusCode)
	}
	check("error", resp, true)

	for _, path := range []string{"/v1/models", "/healthz"} {
		req, _ := http.NewRequest(http.MethodGet, g.URL+path, nil)
		req.Header.Set("Origin", "https://app.example.com")
		r, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		r.Body.Close()
		check(path, r, true)
	}

	resp = g.post(t, chatBody, "Origin", "https://evil.example.com")
	readAll(t, resp.Body)
	check("other origin", resp, false)
}

// TestCORSOffByDefaultAndWhenExternal: without server.cors, or with it
// and Options.ExternalCORS (Lambda: the Function URL does CORS), no
// response carries CORS headers and every preflight is refused.
func TestCORSOffByDefaultAndWhenExternal(t *testing.T) {
	up := newUpstream(t, okHandler)
	for name, g := range map[string]*gateway{
		"off":      newGateway(t, oneRoute("", up.URL)),
		"external": newGateway(t, corsConfig+oneRoute("", up.URL), func(o *server.Options) { o.ExternalCORS = true }),
	} {
		resp := preflight(t, g.URL+"/v1/chat/completions", "https://app.example.com", "POST", "content-type")
		if resp.StatusCode != http.StatusForbidden || len(corsHeaders(resp.Header)) > 0 {
			t.Errorf("%s: preflight %d, CORS headers %v", name, resp.StatusCode, corsHeaders(resp.Header))
		}
		resp = g.post(t, chatBody, "Origin", "https://app.example.com")
		readAll(t, resp.Body)
		if resp.StatusCode != 200 || len(corsHeaders(resp.Header)) > 0 || resp.Header.Get("Vary") != "" {
			t.Errorf("%s: status %d, headers %v", name, resp.StatusCode, resp.Header)
		}
	}
}

func contains(list []string, s string) bool {
	for _, v := range list {
		if v == s {
			return true
		}
	}
	return false
}
