package main

import (
	"bytes"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/llmgw/llmgw/pkg/cmdhelp/cmdhelptest"
	"github.com/llmgw/llmgw/pkg/config"
	"github.com/llmgw/llmgw/pkg/teamkey"
)

func TestMain(m *testing.M) {
	cmdhelptest.MainIfChild(main)
	os.Exit(m.Run())
}

func TestHelpExitsZeroAndExplainsEverything(t *testing.T) {
	want := []string{"newkey - create a team API key", "Usage:", "Runs locally only",
		"-team", "-id", "-stage", "-json", "-config", "-env", "-admin", "Environment: reads no LLMGW_*",
		"LLMGW_KEY_TEAM", "eval \"$(go run ./scripts/newkey -team search -config gw.yaml -env)\""}
	cmdhelptest.CheckHelp(t, append(want, cmdhelptest.EnvNames(t, ".")...)...)
	if _, errOut, code := cmdhelptest.Run(t, nil, "-bogus"); code != 2 || !strings.Contains(errOut, "-bogus") || !strings.Contains(errOut, "-h") {
		t.Errorf("bad flag: exit %d, stderr %q", code, errOut)
	}
	if _, errOut, code := cmdhelptest.Run(t, nil); code != 2 || !strings.Contains(errOut, "-team is required") {
		t.Errorf("no -team: exit %d, stderr %q", code, errOut)
	}
}

func TestNewKeyPrintsKeyOnceAndAValidEntry(t *testing.T) {
	var b, e bytes.Buffer
	if err := run([]string{"-team", "search", "-id", "k2", "-json"}, &b, &e); err != nil {
		t.Fatal(err)
	}
	var out map[string]string
	if err := json.Unmarshal(b.Bytes(), &out); err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(out["key"], teamkey.Prefix) || teamkey.Hash(out["key"]) != out["sha256"] || out["id"] != "k2" || out["team"] != "search" {
		t.Fatalf("output %v", out)
	}

	b.Reset()
	if err := run([]string{"-team", "search", "-stage", "prod"}, &b, &e); err != nil {
		t.Fatal(err)
	}
	text := b.String()
	var key string
	for _, f := range strings.Fields(text) {
		if strings.HasPrefix(f, teamkey.Prefix) {
			key = f
			break
		}
	}
	if key == "" || strings.Count(text, key) != 1 {
		t.Fatalf("the key must be printed exactly once:\n%s", text)
	}
	// The printed YAML entry, pasted into a config, authenticates the key.
	yamlStart := strings.Index(text, "teams:\n")
	yamlEnd := strings.Index(text, "\nLocal run:")
	cfg, err := config.Parse([]byte("providers: {a: {kind: fake}}\nroutes: {m: {targets: [{provider: a, model: x}]}}\n" + text[yamlStart:yamlEnd]))
	if err != nil {
		t.Fatalf("printed entry does not parse: %v\n%s", err, text)
	}
	if got := cfg.Teams["search"].Keys[0]; got.SHA256 != teamkey.Hash(key) || got.ID != "k1" {
		t.Fatalf("entry %+v", got)
	}
	if !strings.Contains(text, "/llmgw/prod/config/50-team-search") {
		t.Fatalf("no SSM example:\n%s", text)
	}
	for _, bad := range [][]string{{}, {"-team", "a b"}, {"-team", "anonymous"}, {"-team", "x", "-id", "k 1"},
		{"-team", "x: {}, y"}, {"-team", "x", "-json", "-env"}, {"-team", "x", "-admin"}} {
		if err := run(bad, &b, &e); err == nil {
			t.Errorf("%v accepted", bad)
		}
	}
}

// exports runs newkey -env and returns the variables it exports.
func exports(t *testing.T, args ...string) (map[string]string, string) {
	t.Helper()
	var out, errOut bytes.Buffer
	if err := run(append(args, "-env"), &out, &errOut); err != nil {
		t.Fatal(err)
	}
	vars := map[string]string{}
	for _, l := range strings.Split(strings.TrimSpace(out.String()), "\n") {
		name, val, ok := strings.Cut(strings.TrimPrefix(l, "export "), "=")
		if !ok || !strings.HasPrefix(l, "export ") {
			t.Fatalf("not an export line: %q", l)
		}
		if ref, isRef := strings.CutPrefix(val, `"$`); isRef {
			val = vars[strings.TrimSuffix(ref, `"`)]
		}
		vars[name] = strings.Trim(val, "'")
	}
	if k := vars[envKey]; k == "" || strings.Contains(errOut.String(), k) {
		t.Fatalf("no key exported, or the key is on stderr: %q", errOut.String())
	}
	return vars, errOut.String()
}

func TestConfigFileGetsBothTeamsAndStaysValid(t *testing.T) {
	path := filepath.Join(t.TempDir(), "gw.yaml")
	if err := os.WriteFile(path, config.DemoYAML(), 0o600); err != nil {
		t.Fatal(err)
	}
	search, note := exports(t, "-team", "search", "-config", path)
	if !strings.Contains(note, "added key k1 of team search to "+path) {
		t.Errorf("note %q", note)
	}
	ops, _ := exports(t, "-team", "ops", "-admin", "-config", path)
	again, _ := exports(t, "-team", "search", "-config", path)
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if strings.Count(string(b), "\nteams:") != 1 || !strings.HasPrefix(string(b), string(config.DemoYAML())) {
		t.Fatalf("the demo config was not extended in place:\n%s", b)
	}
	cfg, err := config.Parse(b)
	if err != nil {
		t.Fatalf("%v\n%s", err, b)
	}
	want := map[string][]string{"search": {search["LLMGW_KEY_SEARCH"], again["LLMGW_KEY_SEARCH"]}, "ops": {ops["LLMGW_KEY_OPS"]}}
	for team, keys := range want {
		tm := cfg.Teams[team]
		if tm == nil || len(tm.Keys) != len(keys) {
			t.Fatalf("team %s: %+v\n%s", team, tm, b)
		}
		for i, k := range keys {
			if tm.Keys[i].SHA256 != teamkey.Hash(k) || tm.Keys[i].ID != "k"+string(rune('1'+i)) {
				t.Errorf("team %s key %d: %+v", team, i, tm.Keys[i])
			}
		}
	}
	if !cfg.Teams["ops"].Admin || cfg.Teams["search"].Admin {
		t.Errorf("admin flags: ops %v search %v", cfg.Teams["ops"].Admin, cfg.Teams["search"].Admin)
	}
	if st, _ := os.Stat(path); st.Mode().Perm() != 0o600 {
		t.Errorf("mode %v", st.Mode())
	}
	var out, e bytes.Buffer
	if err := run([]string{"-team", "search", "-id", "k2", "-config", path}, &out, &e); err == nil || !strings.Contains(err.Error(), "already has a key with id k2") {
		t.Errorf("duplicate id: %v", err)
	}
	if err := run([]string{"-team", "x", "-config", filepath.Join(t.TempDir(), "none.yaml")}, &out, &e); err == nil {
		t.Error("a missing file was accepted")
	}
}

func TestNewKeyDoesNotImportTheGateway(t *testing.T) {
	goTool, err := exec.LookPath("go")
	if err != nil {
		t.Skip("no go tool")
	}
	out, err := exec.Command(goTool, "list", "-deps", ".").Output()
	if err != nil {
		t.Fatal(err)
	}
	deps := strings.Fields(string(out))
	for _, d := range deps {
		if strings.HasPrefix(d, "github.com/llmgw/llmgw/pkg/") && d != "github.com/llmgw/llmgw/pkg/teamkey" && d != "github.com/llmgw/llmgw/pkg/cmdhelp" && d != "github.com/llmgw/llmgw/pkg/deployment" ||
			strings.Contains(d, "yaml") || strings.HasPrefix(d, "github.com/aws") {
			t.Errorf("newkey imports %s", d)
		}
	}
	if len(deps) > 110 {
		t.Errorf("newkey has %d dependencies, want at most 110", len(deps))
	}
}
