// Command lambdainvoke builds the gateway's Lambda bootstrap, runs it
// against an emulated Lambda Runtime API and invokes it once with a
// Function URL event, printing the status, headers and streamed body.
// -h prints how.
package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"sort"
	"syscall"
	"time"

	"github.com/llmgw/llmgw/pkg/cmdhelp"
	"github.com/llmgw/llmgw/pkg/config"
	"github.com/llmgw/llmgw/pkg/deployment"
	"github.com/llmgw/llmgw/pkg/lambdaemu"
	"github.com/llmgw/llmgw/pkg/teamkey"
)

// The variables lambdainvoke sets for the bootstrap it runs, and the one
// it reads itself (envKey); the bootstrap inherits the rest of the
// environment.
const (
	envRuntimeAPI = "AWS_LAMBDA_RUNTIME_API"
	envStage      = deployment.EnvStage
	envConfigFile = deployment.EnvConfigFile
	envKey        = deployment.EnvKey // read: the default of -key
)

var help = cmdhelp.Command{
	Name:     "lambdainvoke",
	Short:    "run the gateway's real Lambda bootstrap once, locally, against an emulated Lambda runtime",
	Synopsis: `go run ./scripts/lambdainvoke [-event FILE] [-config FILE [-key KEY]] [-timeout DURATION]    (from the repository root)`,
	About: `Builds the gateway's Lambda bootstrap (go build -tags lambda.norpc
./functions/gateway), starts an emulated Lambda Runtime API (pkg/lambdaemu),
runs the bootstrap against it as Lambda would, invokes it once with a Function
URL event and prints the HTTP status, the headers and the body as it streams.
The bootstrap's logs and EMF metrics go to standard error. No AWS is needed.

Lambda mode always needs a team key. Without -config, lambdainvoke serves
the demo config plus a team "local" whose key it generates for this run, and
sends that key as the event's Authorization header, so every sample event
works as it is. With -config, the event's Authorization header is replaced
by -key (default $` + envKey + `) when one is given.`,
	Modes: `Local only: it is the Lambda mode of the gateway that it exercises. The
bootstrap runs with ` + envRuntimeAPI + ` (the emulator), ` + envStage + `=local and
` + envConfigFile + ` (-config, or the demo config with its team); it inherits the rest of the environment, so any other
LLMGW_* variable (LLMGW_TABLE, LLMGW_CONFIG_PATH, ...) you set applies to it
(see gateway -h).`,
	Env: []cmdhelp.Env{
		{Name: envKey, About: "the team key to send with -config (default of -key)"},
		{Name: envRuntimeAPI, About: "not read: set for the bootstrap, to the emulator's address"},
		{Name: envStage, About: "not read: set to local for the bootstrap"},
		{Name: envConfigFile, About: "not read: set for the bootstrap to -config (or to the demo config with its team)"},
		{Name: "everything else", About: "passed on to the bootstrap, which reads the gateway's variables (gateway -h)"},
	},
	Examples: `go run ./scripts/lambdainvoke                                     # the demo config, a streamed chat
go run ./scripts/lambdainvoke -event events/function-url-chat.json -config gw.yaml -key "$LLMGW_KEY_SEARCH"
scripts/invoke-local.sh [EVENT] [CONFIG]                          # the same`,
}

func main() {
	fs := flag.NewFlagSet("lambdainvoke", flag.ContinueOnError)
	event := fs.String("event", "events/function-url-chat-stream.json", "Function URL event file (see events/)")
	cfg := fs.String("config", "", "gateway config file, passed as "+envConfigFile+" (empty: the built-in demo config with a team \"local\")")
	timeout := fs.Duration("timeout", time.Minute, "invocation deadline")
	key := fs.String("key", "", "with -config: the team key sent as the event's Authorization header (default $"+envKey+"; neither: the event's own)")
	err := help.Parse(fs, os.Args[1:], os.Stdout)
	if err == nil {
		if *key == "" {
			*key = os.Getenv(envKey)
		}
		// Ctrl-C, a closed pipe (| head) or a kill end the run through its
		// deferred cleanup (the bootstrap, the temp dir), not around it.
		signal.Ignore(syscall.SIGPIPE)
		ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
		err = run(ctx, *event, *cfg, *key, *timeout)
		stop()
	}
	if code := cmdhelp.ExitCode(err); code != 0 {
		fmt.Fprintln(os.Stderr, "lambdainvoke:", err)
		os.Exit(code)
	}
}

func run(ctx context.Context, eventFile, cfg, key string, timeout time.Duration) error {
	ev, err := os.ReadFile(eventFile)
	if err != nil {
		return err
	}
	dir, err := os.MkdirTemp("", "llmgw-invoke")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	if cfg == "" {
		if cfg, key, err = demoWithTeam(dir); err != nil {
			return err
		}
		fmt.Fprintln(os.Stderr, "lambdainvoke: the demo config, with a team \"local\" whose key (made for this run) is the event's Authorization")
	}
	if key != "" {
		if ev, err = withKey(ev, key); err != nil {
			return fmt.Errorf("%s: %w", eventFile, err)
		}
	}
	bin := filepath.Join(dir, "bootstrap")
	build := exec.CommandContext(ctx, "go", "build", "-tags", "lambda.norpc", "-o", bin, "./functions/gateway")
	build.Stdout, build.Stderr = os.Stderr, os.Stderr
	if err := build.Run(); err != nil {
		return fmt.Errorf("build: %w", err)
	}
	rt, err := lambdaemu.Start()
	if err != nil {
		return err
	}
	defer rt.Close()
	fn := exec.Command(bin)
	fn.Env = append(os.Environ(), envRuntimeAPI+"="+rt.Addr(), envStage+"=local")
	fn.Env = append(fn.Env, envConfigFile+"="+cfg)
	fn.Stdout, fn.Stderr = os.Stderr, os.Stderr // EMF metrics and logs
	if err := fn.Start(); err != nil {
		return err
	}
	defer func() { fn.Process.Kill(); fn.Wait() }()
	ctx, cancel := context.WithTimeout(ctx, timeout+10*time.Second)
	defer cancel()
	resp, err := rt.Invoke(ctx, ev, time.Now().Add(timeout))
	if err != nil {
		return err
	}
	if resp.Err != nil {
		return resp.Err
	}
	fmt.Printf("HTTP %d\n", resp.Status)
	keys := make([]string, 0, len(resp.Headers))
	for k := range resp.Headers {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		fmt.Printf("%s: %s\n", k, resp.Headers.Get(k))
	}
	fmt.Println()
	_, err = io.Copy(os.Stdout, resp.Body)
	return err
}

// demoWithTeam writes the demo config plus a team "local" with a new key
// into dir, and returns the file and the key.
func demoWithTeam(dir string) (file, key string, err error) {
	key, sum, err := teamkey.New()
	if err != nil {
		return "", "", err
	}
	doc := append(config.DemoYAML(), []byte("teams:\n  local:\n    keys: [{id: k1, sha256: \""+sum+"\"}]\n")...)
	file = filepath.Join(dir, "gw.yaml")
	return file, key, os.WriteFile(file, doc, 0o600)
}

// withKey returns the Function URL event with its Authorization header
// set to the team key.
func withKey(ev []byte, key string) ([]byte, error) {
	var doc map[string]any
	if err := json.Unmarshal(ev, &doc); err != nil {
		return nil, fmt.Errorf("not a JSON event: %w", err)
	}
	h, _ := doc["headers"].(map[string]any)
	if h == nil {
		h = map[string]any{}
		doc["headers"] = h
	}
	h["authorization"] = "Bearer " + key
	return json.Marshal(doc)
}
