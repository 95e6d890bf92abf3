package main

import (
	"github.com/llmgw/llmgw/pkg/cmdhelp"
	"github.com/llmgw/llmgw/pkg/deployment"
	"github.com/llmgw/llmgw/pkg/usage/usagecli"
)

// envKey holds the team key that -url sends to the gateway.
const envKey = deployment.EnvKey

var help = cmdhelp.Command{
	Name:  "costs",
	Short: "print the per-team cost table for a date range, highest cost first",
	Synopsis: `go run ./scripts/costs [-from DAY] [-to DAY] [-refresh] [-detail] [-json] [-config FILE] [-store embedded|dynamodb] [-state FILE] [-table NAME]
LLMGW_KEY=<key> go run ./scripts/costs -url http://HOST:PORT [-from DAY] [-to DAY] [-refresh] [-detail] [-json]`,
	About: `Prints each team's requests, tokens and cost over a range of UTC days (default:
this month so far), from the usage rollups, highest cost first; -detail adds
each team's routes and tags, -json the whole report. -refresh runs the rollup
for the range first, so the table includes the last minutes.`,
	Modes: `From the store (default): reads the rollups directly, from the embedded file of
a local gateway (-state; stop the gateway first, it holds the file) or from
DynamoDB (-store dynamodb). The team list comes from the gateway's config
(-config, else LLMGW_CONFIG_FILE, else LLMGW_CONFIG_PATH in SSM, else the demo
config); "anonymous" is always included.

Through a gateway (-url): asks a running gateway's GET /v1/usage with the team
key in LLMGW_KEY. A team key sees its own team; an admin key sees every team.
Use it while a local gateway holds the embedded file, or against AWS.`,
	Env: append([]cmdhelp.Env{
		{Name: envKey, About: "-url: the team key sent as Authorization: Bearer (an admin key sees every team)"},
	}, usagecli.ConfigEnv...),
	Examples: `go run ./scripts/costs -config gw.yaml -refresh        # this month, .llmgw/state.db
go run ./scripts/costs -from 2026-11-01 -to 2026-11-30 -detail
go run ./scripts/costs -store dynamodb -table llmgw-prod -config gw.yaml
LLMGW_KEY=$LLMGW_KEY_OPS go run ./scripts/costs -url http://127.0.0.1:8080 -refresh`,
}
