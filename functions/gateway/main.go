// Command gateway runs the LLM gateway: as a local HTTP server, or inside
// AWS Lambda behind a Function URL when AWS_LAMBDA_RUNTIME_API is set.
package main

import (
	"context"
	"flag"
	"log/slog"
	"os"

	"github.com/llmgw/llmgw/pkg/app"
	"github.com/llmgw/llmgw/pkg/deployment"
)

func main() {
	log := slog.New(slog.NewJSONHandler(os.Stderr, nil))
	if app.OnLambda() {
		if err := app.RunLambda(context.Background(), log); err != nil {
			log.Error("gateway failed to start", slog.Any("error", err))
			os.Exit(1)
		}
		return
	}
	var o app.LocalOptions
	flag.StringVar(&o.ConfigPath, "config", "", "config file (YAML or JSON); empty runs the built-in demo config")
	flag.StringVar(&o.Addr, "addr", "127.0.0.1:8080", "listen address")
	flag.StringVar(&o.Store.Kind, "store", "embedded", "state store: embedded (a local file, no AWS) or dynamodb (AWS_ENDPOINT_URL_DYNAMODB, AWS_REGION, credentials chain)")
	flag.StringVar(&o.Store.StatePath, "state", app.DefaultStatePath, "embedded store file")
	flag.StringVar(&o.Store.Table, "table", deployment.DefaultTable, "DynamoDB table (created if missing)")
	flag.Parse()
	o.Logger = log
	if err := app.RunLocal(context.Background(), o); err != nil {
		log.Error("gateway stopped", slog.Any("error", err))
		os.Exit(1)
	}
}
