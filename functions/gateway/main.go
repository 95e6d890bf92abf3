// Command gateway runs the LLM gateway: as a local HTTP server, or inside
// AWS Lambda behind a Function URL when AWS_LAMBDA_RUNTIME_API is set.
// Run it with -h for its modes, flags and environment (app.GatewayHelp).
package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"

	"github.com/llmgw/llmgw/pkg/app"
	"github.com/llmgw/llmgw/pkg/cmdhelp"
	"github.com/llmgw/llmgw/pkg/config"
	"github.com/llmgw/llmgw/pkg/requestlog"
)

func main() {
	log := slog.New(requestlog.NewJSONHandler(os.Stderr, nil))
	if app.OnLambda() {
		if err := app.RunLambda(context.Background(), log); err != nil {
			log.Error("gateway failed to start", slog.Any("error", err))
			os.Exit(1)
		}
		return
	}
	o, err := app.ParseLocalFlags(os.Args[1:], os.Stdout)
	if err != nil {
		if code := cmdhelp.ExitCode(err); code != 0 {
			fmt.Fprintln(os.Stderr, "gateway:", err)
			os.Exit(code)
		}
		return // -h
	}
	o.Logger = log
	if err := app.RunLocal(context.Background(), o); err != nil {
		reportStop(os.Stderr, isTerminal(os.Stderr), log, err)
		os.Exit(1)
	}
}

// reportStop reports why the local gateway stopped. A config error read by
// someone at a terminal is printed as the plain text it is (file, line,
// column, field and the did-you-mean), not as an escaped JSON log line;
// anything else, and everything when stderr is not a terminal (a log
// collector), is one JSON log line.
func reportStop(w io.Writer, tty bool, log *slog.Logger, err error) {
	var ce *config.Error
	if tty && errors.As(err, &ce) {
		fmt.Fprintf(w, "gateway: %v\n", ce)
		return
	}
	log.Error("gateway stopped", slog.Any("error", err))
}

// isTerminal reports whether f is a terminal (a character device).
func isTerminal(f *os.File) bool {
	st, err := f.Stat()
	return err == nil && st.Mode()&os.ModeCharDevice != 0
}
