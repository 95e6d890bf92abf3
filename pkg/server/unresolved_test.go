package server_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"testing"

	"github.com/llmgw/llmgw/pkg/config"
	"github.com/llmgw/llmgw/pkg/keyledger"
	"github.com/llmgw/llmgw/pkg/server"
)

// TestUnresolvedKeyIsSkippedAndShownInHealth: a key reference that does
// not resolve (a missing SSM parameter, or a failed read) skips that key,
// is reported and listed in /healthz by name; the config still applies
// and the other keys serve.
func TestUnresolvedKeyIsSkippedAndShownInHealth(t *testing.T) {
	const secret = "sk-SENTINEL-present-key-0123456789"
	up := newUpstream(t, okHandler)
	cfg := fastPolicy + `
providers:
  p0: {kind: openai, base_url: "` + up.URL + `/v1", keys: [{ssm: /keys/p0/missing}, {ssm: /keys/p0/present}, {ssm: /keys/p0/throttled}]}
routes:
  alpha: {targets: [{provider: p0, model: a}]}
`
	resolve := func(_ context.Context, ref config.KeyRef) (string, bool, error) {
		switch ref.SSM {
		case "/keys/p0/present":
			return secret, true, nil
		case "/keys/p0/missing":
			return "", false, fmt.Errorf("ssm: key parameter %s: %w", ref.SSM, keyledger.ErrNotFound)
		}
		return "", false, errors.New("ssm: throttled")
	}
	var reported []string
	g := newGateway(t, cfg, func(o *server.Options) {
		o.ResolveKey = resolve
		o.OnKeyError = func(provider string, i int, err error) { reported = append(reported, fmt.Sprint(provider, i)) }
	})
	if fmt.Sprint(reported) != "[p00 p02]" || g.h.UnresolvedKeys() != 2 {
		t.Fatalf("reported %v, unresolved %d", reported, g.h.UnresolvedKeys())
	}
	resp := g.post(t, `{"model":"alpha","messages":[{"role":"user","content":"x"}]}`)
	readAll(t, resp.Body)
	if resp.StatusCode != 200 || up.header(0).Get("Authorization") != "Bearer "+secret {
		t.Fatalf("status %d, Authorization %q", resp.StatusCode, up.header(0).Get("Authorization"))
	}
	hr, err := http.Get(g.URL + "/healthz")
	if err != nil {
		t.Fatal(err)
	}
	body := readAll(t, hr.Body)
	var h struct {
		Targets []struct {
			Keys []keyledger.Status `json:"keys"`
		} `json:"targets"`
	}
	if err := json.Unmarshal([]byte(body), &h); err != nil || len(h.Targets) != 1 {
		t.Fatalf("healthz: %s", body)
	}
	ks := h.Targets[0].Keys
	if len(ks) != 3 || !ks[0].Available || !strings.HasPrefix(ks[0].Fingerprint, "k-") ||
		ks[1].Available || ks[1].Fingerprint != "" || ks[1].Reason != keyledger.ReasonMissing || ks[1].Ref != "/keys/p0/missing" ||
		ks[2].Available || ks[2].Reason != keyledger.ReasonUnresolved || ks[2].Ref != "/keys/p0/throttled" {
		t.Errorf("healthz keys = %+v", ks)
	}
	if strings.Contains(body, "SENTINEL") || strings.Contains(g.logs.String(), "SENTINEL") {
		t.Error("a key leaked")
	}
	if !strings.Contains(g.logs.String(), "/keys/p0/missing") {
		t.Errorf("the skipped key is not logged by name: %s", g.logs.String())
	}

}

// TestUnsetKeyVariableIsNamed: a provider whose only key is an environment
// variable that is not set is named with the variable in the start-up
// warning, reported degraded in /healthz with the variable as the reason,
// and a request gets a 502 naming the variable (never a key value).
func TestUnsetKeyVariableIsNamed(t *testing.T) {
	const unset = "LLMGW_TEST_KEY_THAT_IS_NEVER_SET"
	up := newUpstream(t, okHandler)
	cfg := fastPolicy + `
providers:
  p0: {kind: openai, base_url: "` + up.URL + `/v1", keys: [{env: ` + unset + `}]}
  free: {kind: openai, base_url: "` + up.URL + `/v1"}
routes:
  alpha: {targets: [{provider: p0, model: a}]}
  beta: {targets: [{provider: free, model: a}]}
`
	g := newGateway(t, cfg, func(o *server.Options) { o.ResolveKey = keyledger.Env })
	if !strings.Contains(g.logs.String(), "provider key skipped: environment variable "+unset+" is not set") ||
		!strings.Contains(g.logs.String(), `"provider":"p0"`) {
		t.Errorf("the warning does not name the provider and the variable: %s", g.logs.String())
	}
	hr, err := http.Get(g.URL + "/healthz")
	if err != nil {
		t.Fatal(err)
	}
	body := readAll(t, hr.Body)
	var h struct {
		Status  string `json:"status"`
		Targets []struct {
			ID, Status, Reason string
		} `json:"targets"`
	}
	if err := json.Unmarshal([]byte(body), &h); err != nil || len(h.Targets) != 2 {
		t.Fatalf("healthz: %s", body)
	}
	if h.Status != "degraded" || h.Targets[0].ID != "p0/a" || h.Targets[0].Status != "degraded" ||
		h.Targets[0].Reason != "no usable provider key: environment variable "+unset+" is not set" ||
		h.Targets[1].Status != "" {
		t.Errorf("healthz: %s", body)
	}
	resp := g.post(t, `{"model":"alpha","messages":[{"role":"user","content":"x"}]}`)
	out := readAll(t, resp.Body)
	if resp.StatusCode != http.StatusBadGateway || !strings.Contains(out, "environment variable "+unset+" is not set") {
		t.Errorf("status %d: %s", resp.StatusCode, out)
	}
	if n := up.hits.Load(); n != 0 {
		t.Errorf("%d upstream calls without a key", n)
	}
}
