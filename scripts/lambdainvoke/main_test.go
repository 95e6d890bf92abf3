package main

import (
	"bufio"
	"encoding/json"
	"os"
	"os/exec"
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

// TestDemoWithTeamMatchesTheKeySent: without -config, the config served
// is the demo plus a team whose key is the one the event is sent with, so
// the sample events authenticate in Lambda mode.
func TestDemoWithTeamMatchesTheKeySent(t *testing.T) {
	file, key, err := demoWithTeam(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	cfg, err := config.LoadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	team := cfg.Teams["local"]
	if team == nil || len(team.Keys) != 1 || team.Keys[0].SHA256 != teamkey.Hash(key) || cfg.Routes["demo"] == nil {
		t.Fatalf("config %+v", cfg.Teams)
	}
	ev, err := os.ReadFile("../../events/function-url-chat-stream.json")
	if err != nil {
		t.Fatal(err)
	}
	out, err := withKey(ev, key)
	if err != nil {
		t.Fatal(err)
	}
	var doc struct {
		Headers map[string]string `json:"headers"`
		Body    string            `json:"body"`
	}
	if err := json.Unmarshal(out, &doc); err != nil || doc.Headers["authorization"] != "Bearer "+key ||
		doc.Headers["content-type"] != "application/json" || !strings.Contains(doc.Body, `"model":"demo"`) {
		t.Errorf("event %s (%v)", out, err)
	}
}

// TestClosedPipeStillCleansUp: `lambdainvoke | head -1` closes the pipe
// after the status line; the command still stops its bootstrap and
// removes its temp dir (a closed stdout no longer kills it outright).
func TestClosedPipeStillCleansUp(t *testing.T) {
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	tmp := t.TempDir()
	cmd := exec.Command(exe)
	cmd.Dir = "../.."
	cmd.Env = append(os.Environ(), "CMDHELPTEST_ARGS=[]", "TMPDIR="+tmp)
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	line, err := bufio.NewReader(out).ReadString('\n')
	out.Close()
	cmd.Wait()
	if line != "HTTP 200\n" {
		t.Fatalf("first line %q (%v)", line, err)
	}
	left, _ := os.ReadDir(tmp)
	for _, e := range left {
		t.Errorf("left in the temp dir: %s", e.Name())
	}
}
