package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"github.com/aws/jsii-runtime-go"

	"github.com/llmgw/llmgw/pkg/cmdhelp/cmdhelptest"
)

func TestMain(m *testing.M) {
	cmdhelptest.MainIfChild(main)
	code := m.Run()
	jsii.Close()
	os.Exit(code)
}

// TestSynthLeavesNothingInTheTempDir runs the CDK app as `cdk synth` does
// (context in CDK_CONTEXT_JSON, output in CDK_OUTDIR) with a temp
// directory of its own, and checks that it synthesized and left nothing
// there: the jsii runtime it unpacks is removed when the app closes it.
func TestSynthLeavesNothingInTheTempDir(t *testing.T) {
	if testing.Short() {
		t.Skip("synthesizes the stack in a child process")
	}
	tmp, out, assets := t.TempDir(), t.TempDir(), t.TempDir()
	for _, fn := range []string{"gateway", "rollup"} {
		if err := os.MkdirAll(filepath.Join(assets, fn), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(assets, fn, "bootstrap"), []byte("#!/bin/sh\n"), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	ctx, _ := json.Marshal(map[string]any{"assetDir": assets, "stage": "synthtest"})
	_, errOut, code := cmdhelptest.Run(t, []string{"TMPDIR=" + tmp, "CDK_OUTDIR=" + out, "CDK_CONTEXT_JSON=" + string(ctx),
		"JSII_SILENCE_WARNING_DEPRECATED_NODE_VERSION=1", "JSII_SILENCE_WARNING_END_OF_LIFE_NODE_VERSION=18,20,22"})
	if code != 0 {
		t.Fatalf("synth exited %d: %s", code, errOut)
	}
	if _, err := os.Stat(filepath.Join(out, "llmgw-synthtest.template.json")); err != nil {
		t.Errorf("no template: %v", err)
	}
	left, err := os.ReadDir(tmp)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range left {
		t.Errorf("left in the temp dir: %s", e.Name())
	}
}
