package teams_test

import (
	"bytes"
	"errors"
	"log/slog"
	"net/http"
	"strings"
	"testing"

	"github.com/llmgw/llmgw/pkg/config"
	"github.com/llmgw/llmgw/pkg/gwerr"
	"github.com/llmgw/llmgw/pkg/teams"
)

// TestKeylessRefusesForeignHosts is the review's DNS-rebinding attack: a
// keyless local gateway served a request carrying Host: attacker.example
// (what a browser sends once the attacker's name resolves to 127.0.0.1).
func TestKeylessRefusesForeignHosts(t *testing.T) {
	cfg, err := config.Parse([]byte("providers: {a: {kind: fake}}\nroutes: {m: {targets: [{provider: a, model: x}]}}\n"))
	if err != nil {
		t.Fatal(err)
	}
	var logs bytes.Buffer
	a := teams.NewAuthenticator(func() *config.Config { return cfg }, slog.New(slog.NewTextHandler(&logs, nil)))
	a.AnonymousWithoutTeams = true
	a.BoundHosts = []string{"127.0.0.7"}
	for host, ok := range map[string]bool{
		"localhost:8080": true, "LOCALHOST": true, "127.0.0.1:8080": true, "127.0.0.1": true, "[::1]:8080": true, "[::1]": true,
		"127.0.0.7:9000":             true, // the bound address
		"attacker.example":           false,
		"attacker.example:8080":      false,
		"localhost.attacker.example": false,
		"127.0.0.1.nip.io:8080":      false,
		"10.0.0.5:8080":              false,
		"":                           false,
		strings.Repeat("x", 1<<20):   false,
	} {
		r, _ := http.NewRequest(http.MethodPost, "/v1/chat/completions", nil)
		r.Host = host
		c, err := a.Authenticate(r)
		if ok {
			if err != nil || c == nil {
				t.Errorf("Host %.40q: refused (%v), want served", host, err)
			}
			continue
		}
		var ge *gwerr.Error
		if !errors.As(err, &ge) || ge.Category != gwerr.Permission || ge.Code != "host_not_allowed" {
			t.Errorf("Host %.40q: got %v, want permission host_not_allowed", host, err)
		} else if len(ge.Message) > 600 {
			t.Errorf("Host %.40q: the refusal echoes %d bytes", host, len(ge.Message))
		}
	}
	if logs.Len() > 10_000 {
		t.Errorf("refusal logs hold %d bytes: the Host is not bounded", logs.Len())
	}
	// A gateway with teams authenticates by key whatever the Host.
	keyed, err := config.Parse([]byte("providers: {a: {kind: fake}}\nroutes: {m: {targets: [{provider: a, model: x}]}}\nteams: {t: {}}\n"))
	if err != nil {
		t.Fatal(err)
	}
	cfg = keyed
	r, _ := http.NewRequest(http.MethodPost, "/v1/chat/completions", nil)
	r.Host = "attacker.example"
	var ge *gwerr.Error
	if _, err := a.Authenticate(r); !errors.As(err, &ge) || ge.Category != gwerr.Authentication {
		t.Errorf("keyed gateway, no key: %v, want authentication", err)
	}
}
