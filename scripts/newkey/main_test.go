package main

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"

	"github.com/llmgw/llmgw/pkg/config"
	"github.com/llmgw/llmgw/pkg/teams"
)

func TestNewKeyPrintsKeyOnceAndAValidEntry(t *testing.T) {
	var b bytes.Buffer
	if err := run([]string{"-team", "search", "-id", "k2", "-json"}, &b); err != nil {
		t.Fatal(err)
	}
	var out map[string]string
	if err := json.Unmarshal(b.Bytes(), &out); err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(out["key"], teams.KeyPrefix) || teams.HashKey(out["key"]) != out["sha256"] || out["id"] != "k2" {
		t.Fatalf("output %v", out)
	}

	b.Reset()
	if err := run([]string{"-team", "search", "-stage", "prod"}, &b); err != nil {
		t.Fatal(err)
	}
	text := b.String()
	var key string
	for _, f := range strings.Fields(text) {
		if strings.HasPrefix(f, teams.KeyPrefix) {
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
	if got := cfg.Teams["search"].Keys[0]; got.SHA256 != teams.HashKey(key) || got.ID != "k1" {
		t.Fatalf("entry %+v", got)
	}
	if !strings.Contains(text, "/llmgw/prod/config/50-team-search") {
		t.Fatalf("no SSM example:\n%s", text)
	}
	for _, bad := range [][]string{{}, {"-team", "a b"}, {"-team", "anonymous"}, {"-team", "x", "-id", "k 1"}, {"-team", "x: {}, y"}} {
		if err := run(bad, &b); err == nil {
			t.Errorf("%v accepted", bad)
		}
	}
}
