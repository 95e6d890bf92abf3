// Command lambdainvoke builds the gateway's Lambda bootstrap, runs it
// against an emulated Lambda Runtime API and invokes it once with a
// Function URL event, printing the status, headers and streamed body.
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

	"github.com/llmgw/llmgw/pkg/deployment"
	"github.com/llmgw/llmgw/pkg/lambdaemu"
)

func main() {
	event := flag.String("event", "events/function-url-chat-stream.json", "Function URL event file")
	cfg := flag.String("config", "", "gateway config file (empty: the built-in demo config)")
	timeout := flag.Duration("timeout", time.Minute, "invocation deadline")
	flag.Parse()
	if err := run(*event, *cfg, *timeout); err != nil {
		fmt.Fprintln(os.Stderr, "lambdainvoke:", err)
		os.Exit(1)
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
	fn.Env = append(os.Environ(), "AWS_LAMBDA_RUNTIME_API="+rt.Addr(), deployment.EnvStage+"=local")
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
