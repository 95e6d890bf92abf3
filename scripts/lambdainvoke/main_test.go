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

// TestHelp: -h explains what it runs, every flag and the variables it
// sets for the bootstrap, and exits 0 without building anything.
func TestHelp(t *testing.T) {
	want := []string{"lambdainvoke - run the gateway's real Lambda bootstrap", "Local only", "-event", "-config", "-timeout",
		"AWS_LAMBDA_RUNTIME_API", "events/function-url-chat-stream.json"}
	cmdhelptest.CheckHelp(t, append(want, cmdhelptest.EnvNames(t, ".")...)...)
	if _, errOut, code := cmdhelptest.Run(t, nil, "-timeout", "soon"); code != 2 || !strings.Contains(errOut, "-timeout") {
		t.Errorf("bad flag: exit %d, stderr %q", code, errOut)
	}
}
