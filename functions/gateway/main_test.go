package main

import (
	"bytes"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/llmgw/llmgw/pkg/cmdhelp/cmdhelptest"
	"github.com/llmgw/llmgw/pkg/config"
	ingressregistry "github.com/llmgw/llmgw/pkg/ingress/registry"
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
	// Every endpoint: each client API's paths, and the gateway's own.
	for _, in := range ingressregistry.Ingresses {
		want = append(want, append(in.Paths, in.CountPaths...)...)
	}
	want = append(want, "GET /v1/models", "GET /v1/usage", "GET /healthz", "/model/{id}/converse", "docs/bedrock-clients.md")
	cmdhelptest.CheckHelp(t, append(want, cmdhelptest.EnvNames(t, ".", "../../pkg/app")...)...)
	if _, errOut, code := cmdhelptest.Run(t, nil, "-bogus"); code != 2 || !strings.Contains(errOut, "-bogus") {
		t.Errorf("bad flag: exit %d, stderr %q", code, errOut)
	}
	if _, errOut, code := cmdhelptest.Run(t, nil, "-config", "gw.yaml", "extra"); code != 2 || !strings.Contains(errOut, `unexpected argument "extra"`) {
		t.Errorf("stray argument: exit %d, stderr %q", code, errOut)
	}
}

// TestConfigErrorOnATerminalIsPlainText: a config error at start-up reads
// as plain text on a terminal (the did-you-mean and position unescaped),
// and stays one JSON log line otherwise.
func TestConfigErrorOnATerminalIsPlainText(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "gw.yaml")
	if err := os.WriteFile(path, []byte("routes:\n  fast:\n    first_token_timout: 1s\n    targets: [{provider: x, model: y}]\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	_, err := config.LoadFile(path)
	if err == nil {
		t.Fatal("the bad config loads")
	}
	want := `gateway: config ` + path + `: routes.fast.first_token_timout: unknown field "first_token_timout", did you mean "first_token_timeout"? (line 3, column 5)` + "\n"
	var tty, logs bytes.Buffer
	reportStop(&tty, true, slog.New(slog.NewJSONHandler(&logs, nil)), fmt.Errorf("start: %w", err))
	if tty.String() != want || logs.Len() != 0 {
		t.Errorf("terminal: %q, logs %q; want %q", tty.String(), logs.String(), want)
	}
	tty.Reset()
	reportStop(&tty, false, slog.New(slog.NewJSONHandler(&logs, nil)), err)
	if tty.Len() != 0 || !strings.HasPrefix(logs.String(), "{") || !strings.Contains(logs.String(), `\"first_token_timout\"`) {
		t.Errorf("not a terminal: %q, logs %q", tty.String(), logs.String())
	}
}
