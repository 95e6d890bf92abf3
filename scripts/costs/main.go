// Command costs prints the per-team cost table for a date range, highest
// cost first, from the usage rollups.
//
//	go run ./scripts/costs                                   # this month, .llmgw/state.db
//	go run ./scripts/costs -from 2026-11-01 -to 2026-11-30 -refresh -detail
//	go run ./scripts/costs -store dynamodb -table llmgw-prod -config gw.yaml
//	LLMGW_KEY=<admin key> go run ./scripts/costs -url http://127.0.0.1:8080 -refresh
//
// Reading the store directly needs the gateway's config for the team list
// (-config, $LLMGW_CONFIG_FILE or $LLMGW_CONFIG_PATH; "anonymous" is always
// included). -refresh runs the rollup for the range first. With -url it
// asks a running gateway (GET /v1/usage) with the key in $LLMGW_KEY: an
// admin key sees every team. Use -url while a local gateway holds the
// embedded store file. -h prints all of this.
package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"strings"
	"time"

	"github.com/llmgw/llmgw/pkg/cmdhelp"
	"github.com/llmgw/llmgw/pkg/config"
	"github.com/llmgw/llmgw/pkg/deployment"
	"github.com/llmgw/llmgw/pkg/store"
	"github.com/llmgw/llmgw/pkg/usage"
	"github.com/llmgw/llmgw/pkg/usage/usagecli"
)

func main() {
	if err := run(context.Background(), os.Args[1:], os.Stdout, time.Now()); cmdhelp.ExitCode(err) != 0 {
		fmt.Fprintln(os.Stderr, "costs:", err)
		os.Exit(cmdhelp.ExitCode(err))
	}
}

func run(ctx context.Context, args []string, out io.Writer, now time.Time) error {
	fs := flag.NewFlagSet("costs", flag.ContinueOnError)
	var sf usagecli.StoreFlags
	sf.Register(fs)
	cfgPath := fs.String("config", "", "gateway config file (for the team list); default $"+deployment.EnvConfigFile+", $"+deployment.EnvConfigPath+" (SSM) or the demo config")
	from := fs.String("from", "", "first UTC day YYYY-MM-DD (default: the first day of this month)")
	to := fs.String("to", "today", "last UTC day YYYY-MM-DD, included")
	refresh := fs.Bool("refresh", false, "run the rollup for the range before reading")
	detail := fs.Bool("detail", false, "also list each team's routes and tags")
	asJSON := fs.Bool("json", false, "print the report as JSON instead of a table")
	gateway := fs.String("url", "", "read through a running gateway's GET /v1/usage (key in $"+deployment.EnvKey+") instead of the store")
	if err := help.Parse(fs, args, out); err != nil {
		return err // flag.ErrHelp after -h: exit 0
	}
	if *from == "" {
		*from = now.UTC().Format("2006-01") + "-01"
	}
	lo, err := usagecli.ParseDay(*from, now)
	if err != nil {
		return fmt.Errorf("-from: %w", err)
	}
	hi, err := usagecli.ParseDay(*to, now)
	if err != nil {
		return fmt.Errorf("-to: %w", err)
	}
	if hi.Before(lo) {
		return fmt.Errorf("-to %s is before -from %s", store.Day(hi), store.Day(lo))
	}
	var rep *usage.Report
	if *gateway != "" {
		rep, err = fetch(ctx, *gateway, os.Getenv(deployment.EnvKey), lo, hi, *refresh)
	} else {
		rep, err = fromStore(ctx, sf, *cfgPath, lo, hi, *refresh)
	}
	if err != nil {
		return err
	}
	if *asJSON {
		enc := json.NewEncoder(out)
		enc.SetIndent("", "  ")
		return enc.Encode(rep)
	}
	return rep.WriteTable(out, *detail)
}

func fromStore(ctx context.Context, sf usagecli.StoreFlags, cfgPath string, lo, hi time.Time, refresh bool) (*usage.Report, error) {
	st, err := sf.Open(ctx)
	if err != nil {
		return nil, err
	}
	defer st.Close()
	// From SSM, a config that does not validate is reported and the
	// gateway's last good config (in the store) is used.
	cfg, err := usagecli.LoadConfigWith(ctx, usagecli.ConfigOptions{Path: cfgPath, LastGood: st})
	if err != nil {
		return nil, err
	}
	if len(cfg.Teams) == 0 {
		fmt.Fprintln(os.Stderr, "costs: note: the config has no teams, so only anonymous usage is listed; pass the gateway's -config FILE")
	}
	r := usage.NewRoller(st, func() *config.Config { return cfg })
	if refresh {
		if _, err := r.Run(ctx, lo, hi); err != nil {
			return nil, fmt.Errorf("rollup: %w", err)
		}
	}
	return usage.BuildReport(ctx, st, r.Teams(), lo, hi, false)
}

// fetch reads the report from a gateway's GET /v1/usage.
func fetch(ctx context.Context, base, key string, lo, hi time.Time, refresh bool) (*usage.Report, error) {
	if key == "" {
		return nil, fmt.Errorf("-url needs a team key in $%s (an admin key sees every team)", deployment.EnvKey)
	}
	q := url.Values{"from": {store.Day(lo)}, "to": {store.Day(hi)}}
	if refresh {
		q.Set("refresh", "true")
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, strings.TrimRight(base, "/")+"/v1/usage?"+q.Encode(), nil)
	if err != nil {
		return nil, err
	}
	req.Header.Set("Authorization", "Bearer "+key)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, 32<<20))
	if err != nil {
		return nil, err
	}
	if resp.StatusCode != http.StatusOK {
		var e struct {
			Error struct {
				Message string `json:"message"`
			} `json:"error"`
		}
		_ = json.Unmarshal(body, &e)
		return nil, fmt.Errorf("%s: %s %s", req.URL.Redacted(), resp.Status, e.Error.Message)
	}
	var rep usage.Report
	if err := json.Unmarshal(body, &rep); err != nil {
		return nil, fmt.Errorf("%s: %w", req.URL.Redacted(), err)
	}
	return &rep, nil
}
