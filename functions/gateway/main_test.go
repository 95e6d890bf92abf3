package main

import (
	"os"
	"strings"
	"testing"

	"github.com/llmgw/llmgw/pkg/cmdhelp/cmdhelptest"
)

func TestMain(m *testing.M) {
	cmdhelptest.MainIfChild(main)
	os.Exit(m.Run())
}

// TestHelp: -h explains both modes, every flag and every LLMGW_* variable
// the gateway reads, and exits 0 without starting anything.
func TestHelp(t *testing.T) {
	want := []string{"gateway - the llmgw LLM gateway", "Local (the default)", "Lambda:", "AWS_LAMBDA_RUNTIME_API",
		"-config", "-addr", "-store", "-state", "-table", "Environment:", "Examples:"}
	cmdhelptest.CheckHelp(t, append(want, cmdhelptest.EnvNames(t, ".", "../../pkg/app")...)...)
	if _, errOut, code := cmdhelptest.Run(t, nil, "-bogus"); code != 2 || !strings.Contains(errOut, "-bogus") {
		t.Errorf("bad flag: exit %d, stderr %q", code, errOut)
	}
	if _, errOut, code := cmdhelptest.Run(t, nil, "-config", "gw.yaml", "extra"); code != 2 || !strings.Contains(errOut, `unexpected argument "extra"`) {
		t.Errorf("stray argument: exit %d, stderr %q", code, errOut)
	}
}
