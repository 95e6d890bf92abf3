// Command lambdainvoke builds the gateway's Lambda bootstrap, runs it
// against an emulated Lambda Runtime API and invokes it once with a
// Function URL event, printing the status, headers and streamed body.
// -h prints how.
package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"time"

	"github.com/llmgw/llmgw/pkg/cmdhelp"
	"github.com/llmgw/llmgw/pkg/deployment"
	"github.com/llmgw/llmgw/pkg/lambdaemu"
)

// The variables lambdainvoke sets for the bootstrap it runs; it reads
// none itself, and the bootstrap inherits the rest of the environment.
const (
	envRuntimeAPI = "AWS_LAMBDA_RUNTIME_API"
	envStage      = deployment.EnvStage
	envConfigFile = deployment.EnvConfigFile
)

var help = cmdhelp.Command{
	Name:     "lambdainvoke",
	Short:    "run the gateway's real Lambda bootstrap once, locally, against an emulated Lambda runtime",
	Synopsis: `go run ./scripts/lambdainvoke [-event FILE] [-config FILE] [-timeout DURATION]    (from the repository root)`,
	About: `Builds the gateway's Lambda bootstrap (go build -tags lambda.norpc
./functions/gateway), starts an emulated Lambda Runtime API (pkg/lambdaemu),
runs the bootstrap against it as Lambda would, invokes it once with a Function
URL event and prints the HTTP status, the headers and the body as it streams.
The bootstrap's logs and EMF metrics go to standard error. No AWS is needed.`,
	Modes: `Local only: it is the Lambda mode of the gateway that it exercises. The
bootstrap runs with ` + envRuntimeAPI + ` (the emulator), ` + envStage + `=local and, with
-config, ` + envConfigFile + `; it inherits the rest of the environment, so any other
LLMGW_* variable (LLMGW_TABLE, LLMGW_CONFIG_PATH, ...) you set applies to it
(see gateway -h).`,
	Env: []cmdhelp.Env{
		{Name: envRuntimeAPI, About: "not read: set for the bootstrap, to the emulator's address"},
		{Name: envStage, About: "not read: set to local for the bootstrap"},
		{Name: envConfigFile, About: "not read: set for the bootstrap to -config, when given"},
		{Name: "everything else", About: "passed on to the bootstrap, which reads the gateway's variables (gateway -h)"},
	},
	Examples: `go run ./scripts/lambdainvoke                                     # the demo config, a streamed chat
go run ./scripts/lambdainvoke -event events/function-url-chat.json -config gw.yaml
scripts/invoke-local.sh [EVENT] [CONFIG]                          # the same`,
}

func main() {
	fs := flag.NewFlagSet("lambdainvoke", flag.ContinueOnError)
	event := fs.String("event", "events/function-url-chat-stream.json", "Function URL event file (see events/)")
	cfg := fs.String("config", "", "gateway config file, passed as "+envConfigFile+" (empty: the built-in demo config)")
	timeout := fs.Duration("timeout", time.Minute, "invocation deadline")
	err := help.Parse(fs, os.Args[1:], os.Stdout)
	if err == nil {
		err = run(*event, *cfg, *timeout)
	}
	if code := cmdhelp.ExitCode(err); code != 0 {
		fmt.Fprintln(os.Stderr, "lambdainvoke:", err)
		os.Exit(code)
	}
}

func run(eventFile, cfg string, timeout time.Duration) error {
	ev, err := os.ReadFile(eventFile)
	if err != nil {
		return err
	}
	dir, err := os.MkdirTemp("", "llmgw-invoke")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	bin := filepath.Join(dir, "bootstrap")
	build := exec.Command("go", "build", "-tags", "lambda.norpc", "-o", bin, "./functions/gateway")
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
	if cfg != "" {
		fn.Env = append(fn.Env, deployment.EnvConfigFile+"="+cfg)
	}
	fn.Stdout, fn.Stderr = os.Stderr, os.Stderr // EMF metrics and logs
	if err := fn.Start(); err != nil {
		return err
	}
	defer func() { fn.Process.Kill(); fn.Wait() }()
	ctx, cancel := context.WithTimeout(context.Background(), timeout+10*time.Second)
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
