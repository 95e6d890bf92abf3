package keyledger

import (
	"bytes"
	"context"
	"fmt"
	"log/slog"
	"reflect"
	"strings"
	"testing"

	"github.com/llmgw/llmgw/pkg/config"
)

// A Key printed, formatted or logged by mistake shows its fingerprint,
// never its secret.
func TestKeyNeverShowsItsSecret(t *testing.T) {
	k := NewKey("sk-very-secret", 0)
	if !strings.HasPrefix(k.Fingerprint, "k-") || len(k.Fingerprint) != 14 || k.Fingerprint != Fingerprint("sk-very-secret") {
		t.Fatalf("fingerprint %q", k.Fingerprint)
	}
	var logs bytes.Buffer
	slog.New(slog.NewJSONHandler(&logs, nil)).Info("x", "key", k)
	for _, out := range []string{fmt.Sprint(k), fmt.Sprintf("%v %+v %#v %s", k, k, k, k), logs.String()} {
		if strings.Contains(out, k.Secret) || !strings.Contains(out, k.Fingerprint) {
			t.Errorf("output shows the secret or hides the fingerprint: %s", out)
		}
	}
}

func TestResolve(t *testing.T) {
	cfg, err := config.Parse([]byte(`
providers:
  a: {kind: openai, base_url: "http://127.0.0.1:1/v1", keys: [{env: ONE}, {env: MISSING}, {env: TWO, priority: 7}, {env: THREE}]}
  b: {kind: openai, base_url: "http://127.0.0.1:1/v1", keys: [{env: MISSING}]}
  c: {kind: openai, base_url: "http://127.0.0.1:1/v1"}
routes:
  m: {targets: [{provider: a, model: x}, {provider: b, model: x}, {provider: c, model: x}]}
`))
	if err != nil {
		t.Fatal(err)
	}
	secrets := map[string]string{"ONE": "s1", "TWO": "s2", "THREE": "s3"}
	var logs bytes.Buffer
	res := Resolve(context.Background(), cfg, func(_ context.Context, ref config.KeyRef) (string, bool, error) {
		s, ok := secrets[ref.Env]
		return s, ok, nil
	}, slog.New(slog.NewJSONHandler(&logs, nil)), nil)
	ks := res.Keys
	// An unset variable is listed as missing, by name, for /healthz and
	// the error of a target left without a key.
	if u := res.Unresolved; len(u) != 2 || len(u["a"]) != 1 || len(u["b"]) != 1 ||
		!reflect.DeepEqual(u["a"][0], Status{Reason: ReasonMissing, Ref: "MISSING", RefKind: "env"}) ||
		u["b"][0].Describe() != "environment variable MISSING is not set" {
		t.Fatalf("unresolved %+v: the unset variables, by name", res.Unresolved)
	}
	a := ks["a"]
	if len(a) != 3 || a[0] != NewKey("s1", 0) || a[1] != NewKey("s2", 7) || a[2] != NewKey("s3", 3) {
		t.Fatalf("provider a: %v (priorities: configured, else the index)", a)
	}
	if b, ok := ks["b"]; !ok || len(b) != 0 {
		t.Fatalf("provider b, whose keys all resolve to nothing, must have an empty list: %v %v", b, ok)
	}
	if _, ok := ks["c"]; ok {
		t.Fatal("provider c has no keys configured: it must be absent")
	}
	if n := strings.Count(logs.String(), "provider key skipped: environment variable MISSING is not set"); n != 2 {
		t.Fatalf("%d skip warnings naming the variable, want 2:\n%s", n, logs.String())
	}

	boom := fmt.Errorf("ssm down")
	var reported []string
	res = Resolve(context.Background(), cfg, func(_ context.Context, ref config.KeyRef) (string, bool, error) {
		if ref.Env == "TWO" {
			return "", false, fmt.Errorf("ssm: %w", ErrNotFound)
		}
		return "", false, boom
	}, nil, func(p string, i int, err error) { reported = append(reported, fmt.Sprintf("%s[%d]", p, i)) })
	if len(res.Keys["a"]) != 0 || len(res.Unresolved["a"]) != 4 || strings.Join(reported, ",") != "a[0],a[1],a[2],a[3],b[0]" {
		t.Fatalf("failed references must be skipped, listed and reported: %+v, reported %v", res, reported)
	}
	if u := res.Unresolved["a"]; u[0].Reason != ReasonUnresolved || u[2].Reason != ReasonMissing || u[2].Ref != "TWO" || u[0].Ref != "ONE" || u[0].Fingerprint != "" {
		t.Fatalf("unresolved statuses %+v", u)
	}
}

func TestEnvResolver(t *testing.T) {
	t.Setenv("KEYLEDGER_TEST_KEY", "sk-env")
	if s, ok, err := Env(context.Background(), config.KeyRef{Env: "KEYLEDGER_TEST_KEY"}); s != "sk-env" || !ok || err != nil {
		t.Fatalf("set variable: %q %v %v", s, ok, err)
	}
	t.Setenv("KEYLEDGER_TEST_EMPTY", "")
	for _, ref := range []config.KeyRef{{Env: "KEYLEDGER_TEST_EMPTY"}, {SSM: "/x"}} {
		if _, ok, err := Env(context.Background(), ref); ok || err != nil {
			t.Fatalf("%+v must be skipped: %v %v", ref, ok, err)
		}
	}
}
