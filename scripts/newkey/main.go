// Command newkey creates a team API key. It prints the key once (the
// gateway never stores it) and the config entry holding its SHA-256.
//
//	go run ./scripts/newkey -team search            # key id k1
//	go run ./scripts/newkey -team search -id k2 -stage prod
//	go run ./scripts/newkey -team search -json      # for scripts
package main

import (
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"os"

	"github.com/llmgw/llmgw/pkg/config"
	"github.com/llmgw/llmgw/pkg/deployment"
	"github.com/llmgw/llmgw/pkg/teams"
)

func main() {
	if err := run(os.Args[1:], os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "newkey:", err)
		os.Exit(2)
	}
}

func run(args []string, out io.Writer) error {
	fs := flag.NewFlagSet("newkey", flag.ContinueOnError)
	team := fs.String("team", "", "team name (required): letters, digits, - _ .")
	id := fs.String("id", "k1", "key id, unique within the team (it names the key in logs and usage; not secret)")
	stage := fs.String("stage", "<stage>", "deployment stage, for the SSM example")
	asJSON := fs.Bool("json", false, "print {team, id, key, sha256} as JSON")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if *team == "" {
		fs.Usage()
		return fmt.Errorf("-team is required")
	}
	for _, v := range []struct{ flag, val string }{{"-team", *team}, {"-id", *id}} {
		if !plain(v.val) {
			return fmt.Errorf("%s %q: use 1-64 letters, digits, '-', '_' or '.'", v.flag, v.val)
		}
	}
	key, sum, err := teams.NewKey()
	if err != nil {
		return err
	}
	entry := fmt.Sprintf(`{id: %s, sha256: "%s"}`, *id, sum)
	// Check the entry the way the gateway will read it.
	probe := fmt.Sprintf("providers: {a: {kind: fake}}\nroutes: {m: {targets: [{provider: a, model: x}]}}\nteams: {%s: {keys: [%s]}}\n", *team, entry)
	if _, err := config.Parse([]byte(probe)); err != nil {
		return err
	}
	if *asJSON {
		return json.NewEncoder(out).Encode(map[string]string{"team": *team, "id": *id, "key": key, "sha256": sum})
	}
	fmt.Fprintf(out, `New API key for team %q (key id %s). It is shown ONCE: give it to the team
or put it in your secret manager now. Clients send it as "Authorization: Bearer <key>"
(the api_key of any OpenAI SDK).

    %s

The gateway keeps only the key's SHA-256. Add this entry to the team's keys:

teams:
  %s:
    keys:
      - %s

Local run: put it in the file given to -config; the gateway reads it at start.
On AWS the config is every parameter under %s, merged in name
order; maps merge, lists are replaced, so a parameter that sets a team's keys
must list all of them. For example:

    aws ssm put-parameter --type String --overwrite \
      --name %s50-team-%s \
      --value 'teams: {%s: {keys: [%s]}}'

It takes effect at the next config refresh, without a deploy. To revoke the key
later, set revoked: true on its entry (or disabled: true on the team).
`, *team, *id, key, *team, entry, deployment.ConfigPath(*stage), deployment.ConfigPath(*stage), *team, *team, entry)
	return nil
}

// plain reports whether s is a valid team or key id name (the config's rule),
// so that it can be pasted into YAML as it is.
func plain(s string) bool {
	if len(s) == 0 || len(s) > 64 {
		return false
	}
	for _, c := range s {
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '-' || c == '_' || c == '.') {
			return false
		}
	}
	return true
}
