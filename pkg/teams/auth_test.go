package teams_test

import (
	"crypto/sha256"
	"encoding/hex"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/llmgw/llmgw/pkg/config"
	"github.com/llmgw/llmgw/pkg/teams"
	"github.com/llmgw/llmgw/pkg/usage"
	"github.com/llmgw/llmgw/pkg/usage/usagetest"
)

func TestNewKeyFormatAndHash(t *testing.T) {
	k1, h1, err := teams.NewKey()
	if err != nil {
		t.Fatal(err)
	}
	k2, _, _ := teams.NewKey()
	if !strings.HasPrefix(k1, teams.KeyPrefix) || len(k1) != len(teams.KeyPrefix)+43 || k1 == k2 {
		t.Fatalf("keys %q %q", k1, k2)
	}
	sum := sha256.Sum256([]byte(k1))
	if h1 != hex.EncodeToString(sum[:]) || teams.HashKey(k1) != h1 {
		t.Fatalf("hash %s", h1)
	}
}

// TestAuthMatrix runs every way of calling through the real server: each
// refusal is the same 401 body; a route outside the team's allow-list is
// 403; revocation and disabling take effect on the next request, without
// a restart.
func TestAuthMatrix(t *testing.T) {
	usagetest.Run(t, []usagetest.Case{{Name: "Matrix", Fn: func(t *testing.T, open usagetest.Opener) {
		g := newGW(t, gwOptions{open: open})
		const rid = "req-auth-matrix-1"
		// Request and trace ids are the caller's, so every refusal body can be compared.
		const tp = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"
		sentinelKey := teams.KeyPrefix + "SENTINELxKEYxNOTxREALxxxxxxxxxxxxxxxxxxxxxxx"
		refusals := map[string]string{
			"missing":       "",
			"unknown":       sentinelKey,
			"revoked":       g.keys["revoked"],
			"disabled team": g.keys["gone"],
		}
		var first string
		for name, key := range refusals {
			resp, body := g.call(t, key, chatBody, "x-request-id", rid, "traceparent", tp)
			if resp.StatusCode != 401 || resp.Header.Get("x-gateway-error-category") != "authentication" {
				t.Fatalf("%s: %d %s", name, resp.StatusCode, body)
			}
			if first == "" {
				first = body
			} else if body != first {
				t.Fatalf("%s: body differs from another refusal:\n%s\n%s", name, body, first)
			}
		}
		for name, h := range map[string]string{"basic scheme": "Basic " + g.keys["search"], "no scheme": g.keys["search"], "empty bearer": "Bearer "} {
			req, _ := http.NewRequest(http.MethodPost, g.URL+"/v1/chat/completions", strings.NewReader(chatBody))
			req.Header.Set("Authorization", h)
			req.Header.Set("x-request-id", rid)
			req.Header.Set("traceparent", tp)
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			b := make([]byte, 4096)
			n, _ := resp.Body.Read(b)
			resp.Body.Close()
			if resp.StatusCode != 401 || string(b[:n]) != first {
				t.Fatalf("%s: %d %s", name, resp.StatusCode, b[:n])
			}
		}
		if !strings.Contains(first, `"code":"invalid_api_key"`) || !strings.Contains(first, `"type":"authentication"`) {
			t.Fatalf("401 body not in the OpenAI error shape: %s", first)
		}
		if g.up.hits.Load() != 0 {
			t.Fatalf("%d upstream calls for refused requests", g.up.hits.Load())
		}

		// A good key works; its team's route allow-list is enforced (403).
		if resp, body := g.call(t, g.keys["search"], chatBody); resp.StatusCode != 200 {
			t.Fatalf("search on m: %d %s", resp.StatusCode, body)
		}
		resp, body := g.call(t, g.keys["search"], `{"model":"other","messages":[{"role":"user","content":"hi"}]}`)
		if resp.StatusCode != 403 || !strings.Contains(body, `"type":"permission"`) {
			t.Fatalf("search on other: %d %s", resp.StatusCode, body)
		}
		if resp, body := g.call(t, g.keys["ads"], `{"model":"other","messages":[{"role":"user","content":"hi"}]}`); resp.StatusCode != 200 {
			t.Fatalf("ads on other: %d %s", resp.StatusCode, body)
		}
		recs := g.records(t, "search")
		if len(recs) != 2 || recs[0].Team != "search" {
			t.Fatalf("search records: %+v", recs)
		}

		// Revoke search's key and disable ads: a config change, no restart.
		y := strings.Replace(g.yaml, `{id: k1, sha256: "`+teams.HashKey(g.keys["search"])+`"}`,
			`{id: k1, sha256: "`+teams.HashKey(g.keys["search"])+`", revoked: true}`, 1)
		y = strings.Replace(y, "  ads:\n", "  ads:\n    disabled: true\n", 1)
		g.setConfig(t, y)
		for _, k := range []string{"search", "ads"} {
			if resp, body := g.call(t, g.keys[k], chatBody, "x-request-id", rid, "traceparent", tp); resp.StatusCode != 401 || body != first {
				t.Fatalf("%s after revocation: %d %s", k, resp.StatusCode, body)
			}
		}

		// The raw keys never reach a log line or a stored item.
		logs := g.logs.String()
		if !strings.Contains(logs, `"reason":"revoked key"`) || !strings.Contains(logs, `"reason":"unknown key"`) {
			t.Fatalf("refusal reasons not logged:\n%s", logs)
		}
		for name, k := range g.keys {
			assertAbsent(t, g, "key "+name, k)
		}
		assertAbsent(t, g, "sentinel key", sentinelKey)
		assertAbsent(t, g, "sentinel key (fragment)", "SENTINELxKEY")
	}}})
}

// assertAbsent fails when s appears in any log line or stored item.
func assertAbsent(t *testing.T, g *gw, what, s string) {
	t.Helper()
	if strings.Contains(g.logs.String(), s) {
		t.Fatalf("%s found in the logs", what)
	}
	written := g.spy.Written()
	if len(written) == 0 {
		t.Fatal("nothing was stored: the scan would prove nothing")
	}
	for _, it := range written {
		if strings.Contains(usagetest.Dump(it), s) {
			t.Fatalf("%s found in stored item %s", what, it.Key)
		}
	}
}

// TestUsageEndpointScopes mounts the usage handler with the
// Authenticator's viewer: a team key reads its own team, an admin key
// every team, a bad key nothing.
func TestUsageEndpointScopes(t *testing.T) {
	g := newGW(t, gwOptions{open: openEmbedded})
	for _, k := range []string{"search", "ads", "ads"} {
		if resp, body := g.call(t, g.keys[k], `{"model":"`+map[string]string{"search": "m", "ads": "other"}[k]+`","messages":[{"role":"user","content":"hi"}]}`); resp.StatusCode != 200 {
			t.Fatalf("%s: %d %s", k, resp.StatusCode, body)
		}
	}
	current := func() *config.Config { return g.cfg.Load() }
	roller := usage.NewRoller(g.sw, current)
	if _, err := roller.RunMode(ctxT(t), usage.Hourly); err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(usage.NewHandler(g.sw, current, usage.HandlerOptions{Viewer: g.auth.UsageViewer}))
	defer srv.Close()
	get := func(key, query string) (int, string) {
		req, _ := http.NewRequest(http.MethodGet, srv.URL+"/v1/usage"+query, nil)
		if key != "" {
			req.Header.Set("Authorization", "Bearer "+key)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		var b strings.Builder
		_, _ = io.Copy(&b, resp.Body)
		return resp.StatusCode, b.String()
	}
	if code, body := get(g.keys["search"], ""); code != 200 || !strings.Contains(body, `"team": "search"`) || strings.Contains(body, `"team": "ads"`) {
		t.Fatalf("search: %d %s", code, body)
	}
	if code, _ := get(g.keys["search"], "?team=ads"); code != 403 {
		t.Fatalf("search reading ads: %d", code)
	}
	code, body := get(g.keys["ops"], "")
	if code != 200 || !strings.Contains(body, `"team": "search"`) || !strings.Contains(body, `"team": "ads"`) ||
		strings.Index(body, `"team": "ads"`) > strings.Index(body, `"team": "search"`) {
		t.Fatalf("admin: %d %s", code, body)
	}
	if code, _ := get("llmgw_nope", ""); code != 401 {
		t.Fatalf("bad key: %d", code)
	}
}
