package status

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	awsconfig "github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/service/ssm"

	"github.com/llmgw/llmgw/pkg/config"
	"github.com/llmgw/llmgw/pkg/ssmconfig"
	"github.com/llmgw/llmgw/pkg/ssmconfig/ssmtest"
)

// runCommand runs a command line in sh with a stand-in aws that records
// its arguments, one per line, and returns the --name and --value it got:
// what an operator's paste would hand the AWS CLI.
func runCommand(t *testing.T, line string) (name, value string) {
	t.Helper()
	dir := t.TempDir()
	out := filepath.Join(dir, "args")
	script := "#!/bin/sh\nfor a in \"$@\"; do printf '%s\\n' \"$a\" >> " + out + "; printf '\\0' >> " + out + "; done\n"
	if err := os.WriteFile(filepath.Join(dir, "aws"), []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command("sh", "-c", line)
	cmd.Env = append(os.Environ(), "PATH="+dir+":"+os.Getenv("PATH"))
	if b, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("%s: %v %s", line, err, b)
	}
	b, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	var args []string
	for _, a := range strings.Split(string(b), "\x00") {
		if a != "" {
			args = append(args, strings.TrimSuffix(a, "\n"))
		}
	}
	want := []string{"ssm", "put-parameter", "--overwrite", "--type", "String", "--name"}
	if len(args) != 9 || strings.Join(args[:6], " ") != strings.Join(want, " ") || args[7] != "--value" {
		t.Fatalf("aws got %q", args)
	}
	return args[6], args[8]
}

// applyIncident loads base plus the incident parameter through the real
// SSM loader (an in-memory Parameter Store speaking the AWS protocol), as
// the gateway would after the paste.
func applyIncident(t *testing.T, name, value string) *config.Config {
	t.Helper()
	srv := ssmtest.New()
	defer srv.Close()
	t.Setenv("AWS_ENDPOINT_URL_SSM", srv.URL)
	t.Setenv("AWS_REGION", "us-east-1")
	t.Setenv("AWS_ACCESS_KEY_ID", "AKIDTEST")
	t.Setenv("AWS_SECRET_ACCESS_KEY", "test")
	ac, err := awsconfig.LoadDefaultConfig(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	srv.Put("/llmgw/prod/config/00-base", "String", fleetDoc)
	srv.Put(name, "String", value)
	l := &ssmconfig.Loader{API: ssm.NewFromConfig(ac), Path: "/llmgw/prod/config/"}
	cfg, _, err := l.Load(context.Background())
	if err != nil {
		t.Fatalf("the incident document does not load: %v\n%s", err, value)
	}
	return cfg
}

// paste runs a command and loads the config it leaves.
func paste(t *testing.T, c Command) *config.Config {
	t.Helper()
	name, value := runCommand(t, c.Shell)
	if name != c.Name || value != c.Value {
		t.Errorf("the shell handed aws %q %q, the page says %q %q", name, value, c.Name, c.Value)
	}
	return applyIncident(t, name, value)
}

func find(t *testing.T, cs []Command, action, key string) Command {
	t.Helper()
	for _, c := range cs {
		if c.Action == action && c.Key == key {
			return c
		}
	}
	t.Fatalf("no %s %s command among %+v", action, key, cs)
	return Command{}
}

// TestRunbookCommandsDoWhatTheySay: each command, pasted into a shell,
// hands the AWS CLI the incident parameter and a document that, merged
// over the config by the real loader, makes exactly the edit: a provider
// pulled, a target moved to the front or its breaker forced (every other
// target and setting kept), a team or one key revoked.
func TestRunbookCommandsDoWhatTheySay(t *testing.T) {
	snap := Build(context.Background(), seededFleet(t))
	route := snap.Routes[0] // claude-sonnet
	bedrock, anthropic := route.Targets[1], route.Targets[0]

	name, value := runCommand(t, find(t, bedrock.Commands, "reorder", "").Shell)
	if name != "/llmgw/prod/config/90-incident" {
		t.Errorf("parameter %q", name)
	}
	cfg := applyIncident(t, name, value)
	ts := cfg.Routes["claude-sonnet"].Targets
	if len(ts) != 3 || ts[0].Provider != "bedrock" || ts[0].Model != "us.anthropic.claude-sonnet-4-5-20250929-v1:0" ||
		ts[1].Provider != "anthropic" || ts[1].Attempts != 2 || ts[1].FirstTokenTimeout.D().String() != "4s" || ts[2].Provider != "openai" {
		t.Errorf("reorder: %+v", ts)
	}

	cfg = paste(t, find(t, anthropic.Commands, "force_open", ""))
	ts = cfg.Routes["claude-sonnet"].Targets
	if ts[0].Breaker != "open" || ts[0].Attempts != 2 || ts[1].Breaker != "" || ts[2].Breaker != "" || len(ts) != 3 {
		t.Errorf("force open: %+v", ts)
	}
	cfg = paste(t, find(t, anthropic.Commands, "force_closed", ""))
	if ts = cfg.Routes["claude-sonnet"].Targets; ts[0].Breaker != "closed" {
		t.Errorf("force closed: %+v", ts)
	}

	cfg = paste(t, find(t, anthropic.Commands, "pull", ""))
	if !cfg.Providers["anthropic"].Disabled || cfg.Providers["openai"].Disabled {
		t.Errorf("pull: anthropic disabled %v", cfg.Providers["anthropic"].Disabled)
	}

	var search TeamState
	for _, tm := range snap.Teams {
		if tm.Name == "search" {
			search = tm
		}
	}
	cfg = paste(t, find(t, search.Commands, "revoke_team", ""))
	if !cfg.Teams["search"].Disabled || cfg.Teams["ops"].Disabled {
		t.Error("revoke team")
	}
	cfg = paste(t, find(t, search.Commands, "revoke_key", "k2"))
	keys := cfg.Teams["search"].Keys
	if len(keys) != 2 || keys[0].Revoked || !keys[1].Revoked || keys[1].SHA256 != strings.Repeat("2", 64) || cfg.Teams["search"].Limits.CostPerDayUSD != 50 {
		t.Errorf("revoke key: %+v", cfg.Teams["search"])
	}
}

func TestShellQuoteSurvivesQuotes(t *testing.T) {
	c := command("x", "/llmgw/it's/config/", m("a", "it's"))
	name, value := runCommand(t, c.Shell)
	if name != "/llmgw/it's/config/90-incident" || value != `{"a":"it's"}` {
		t.Errorf("got %q %q", name, value)
	}
}
