// Command gateway runs the LLM gateway: as a local HTTP server, or inside
// AWS Lambda behind a Function URL when AWS_LAMBDA_RUNTIME_API is set.
// Run it with -h for its modes, flags and environment (app.GatewayHelp).
package main

import (
	"context"
	"fmt"
	"log/slog"
	"os"

	"github.com/llmgw/llmgw/pkg/app"
	"github.com/llmgw/llmgw/pkg/cmdhelp"
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
		log.Error("gateway stopped", slog.Any("error", err))
		os.Exit(1)
	}
}
