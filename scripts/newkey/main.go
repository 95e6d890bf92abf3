// Command newkey creates a team API key. It prints the key once (the
// gateway never stores it) and the config entry holding its SHA-256, or
// adds that entry to a config file itself.
//
//	go run ./scripts/newkey -team search            # key id k1
//	go run ./scripts/newkey -team search -id k2 -stage prod
//	go run ./scripts/newkey -team search -json      # for scripts
//	eval "$(go run ./scripts/newkey -team search -config gw.yaml -env)"
//
// It imports only the standard library and pkg/teamkey (no config or YAML
// package), so it builds in a moment.
package main

import (
	"flag"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/llmgw/llmgw/pkg/cmdhelp"
	"github.com/llmgw/llmgw/pkg/deployment"
	"github.com/llmgw/llmgw/pkg/teamkey"
)

// envKey is the variable -env sets to the new key (scripts/costs -url
// reads it); envKeyPrefix+TEAM is set too, so keys of several teams can be
// kept side by side. newkey itself reads no environment variable.
const (
	envKey       = deployment.EnvKey
	envKeyPrefix = deployment.EnvKey + "_"
)

var help = cmdhelp.Command{
	Name:  "newkey",
	Short: "create a team API key for the gateway",
	Synopsis: `go run ./scripts/newkey -team NAME [-id ID] [-stage STAGE] [-json]
go run ./scripts/newkey -team NAME -config FILE [-admin] [-env | -json]`,
	About: `Creates a new team API key: "llmgw_" and 32 random bytes in base64url. The key
is printed ONCE; the gateway keeps only its SHA-256, which goes in the config
under teams.NAME.keys as {id: ID, sha256: "<hex>"}.

Without -config it prints the key and the YAML entry to paste, and how to
install it in SSM Parameter Store for a deployed stage. With -config FILE it
adds the entry to the file itself: to the team's keys list when the team
exists, else as a new team under teams: (created at the end of the file when
missing). Only block-style YAML, as in the README and the demo config, is
edited; other layouts (JSON, a flow-style teams: {...}) are refused with an
explanation and left untouched. A running local gateway re-reads the file
within 2s.`,
	Modes: `Runs locally only; it needs no network and no AWS credentials.`,
	Examples: `go run ./scripts/newkey -team search                       # print the key and the entry
go run ./scripts/newkey -team search -id k2 -stage prod    # a second key, SSM example for prod
cp pkg/config/demo.yaml gw.yaml
eval "$(go run ./scripts/newkey -team search -config gw.yaml -env)"      # $LLMGW_KEY_SEARCH
eval "$(go run ./scripts/newkey -team ops -admin -config gw.yaml -env)"  # $LLMGW_KEY_OPS, admin`,
}

func main() {
	err := run(os.Args[1:], os.Stdout, os.Stderr)
	if err != nil && cmdhelp.ExitCode(err) != 0 {
		fmt.Fprintln(os.Stderr, "newkey:", err)
	}
	os.Exit(cmdhelp.ExitCode(err))
}

// options are newkey's flags.
type options struct {
	team, id, stage, config string
	asJSON, env, admin      bool
}

func run(args []string, out, errOut io.Writer) error {
	var o options
	fs := flag.NewFlagSet("newkey", flag.ContinueOnError)
	fs.StringVar(&o.team, "team", "", "team name (required): "+teamkey.NameRule+"; not \""+teamkey.Anonymous+"\"")
	fs.StringVar(&o.id, "id", "", "key id, unique within the team; it names the key in logs and usage and is not secret\n(default k1; with -config the first of k1, k2, ... the team does not have yet)")
	fs.StringVar(&o.stage, "stage", "<stage>", "deployment stage, for the SSM example")
	fs.BoolVar(&o.asJSON, "json", false, "print {team, id, key, sha256} as JSON, for scripts")
	fs.StringVar(&o.config, "config", "", "add the key to this block-style YAML config file (the team is created when missing)")
	fs.BoolVar(&o.env, "env", false, "print only shell lines, export "+envKeyPrefix+"TEAM=<key> and export "+envKey+"=<key>,\nfor eval \"$(...)\"; notes go to standard error")
	fs.BoolVar(&o.admin, "admin", false, "with -config: make the team an admin team (admin: true: it may read every team's usage)")
	if err := help.Parse(fs, args, out); err != nil {
		return err
	}
	if err := o.check(); err != nil {
		return err
	}
	key, sum, err := teamkey.New()
	if err != nil {
		return err
	}
	if o.config != "" {
		if o.id, err = addKeyToFile(o.config, o.team, o.id, sum, o.admin); err != nil {
			return err
		}
	} else if o.id == "" {
		o.id = "k1"
	}
	entry := fmt.Sprintf(`{id: %s, sha256: "%s"}`, o.id, sum)
	switch {
	case o.asJSON:
		fields := []string{"team", o.team, "id", o.id, "key", key, "sha256", sum}
		if o.config != "" {
			fields = append(fields, "config", o.config)
		}
		_, err := io.WriteString(out, jsonObject(fields...)+"\n")
		return err
	case o.env:
		v := envName(o.team)
		fmt.Fprintf(out, "export %s='%s'\nexport %s=\"$%s\"\n", v, key, envKey, v)
		if o.config != "" {
			fmt.Fprintf(errOut, "newkey: added key %s of team %s to %s; the key is in $%s and $%s\n", o.id, o.team, o.config, v, envKey)
		} else {
			fmt.Fprintf(errOut, "newkey: the key is in $%s and $%s; add this entry to teams.%s.keys: %s\n", v, envKey, o.team, entry)
		}
		return nil
	case o.config != "":
		fmt.Fprintf(out, `New API key for team %q (key id %s), added to %s. It is shown ONCE: give
it to the team or put it in your secret manager now. Clients send it as
"Authorization: Bearer <key>" (the api_key of any OpenAI SDK).

    %s

A local gateway running with -config %s picks it up within 2s.
`, o.team, o.id, o.config, key, o.config)
		return nil
	}
	fmt.Fprintf(out, `New API key for team %q (key id %s). It is shown ONCE: give it to the team
or put it in your secret manager now. Clients send it as "Authorization: Bearer <key>"
(the api_key of any OpenAI SDK).

    %s

The gateway keeps only the key's SHA-256. Add this entry to the team's keys
(or run newkey with -config FILE to have it added):

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
`, o.team, o.id, key, o.team, entry, deployment.ConfigPath(o.stage), deployment.ConfigPath(o.stage), o.team, o.team, entry)
	return nil
}

// check validates the flags the way the gateway's config will.
func (o *options) check() error {
	if o.team == "" {
		return cmdhelp.Usagef("-team is required (run newkey -h for help)")
	}
	if err := teamkey.CheckTeam(o.team); err != nil {
		return cmdhelp.Usagef("-team: %v", err)
	}
	if o.id != "" {
		if err := teamkey.CheckID(o.id); err != nil {
			return cmdhelp.Usagef("-id: %v", err)
		}
	}
	if o.asJSON && o.env {
		return cmdhelp.Usagef("-json and -env exclude each other")
	}
	if o.admin && o.config == "" {
		return cmdhelp.Usagef("-admin needs -config FILE (or add admin: true to the team by hand)")
	}
	return nil
}

// envName is the shell variable -env sets for team: LLMGW_KEY_ and the
// name in upper case, '-' and '.' as '_'.
func envName(team string) string {
	return envKeyPrefix + strings.Map(func(r rune) rune {
		if r == '-' || r == '.' {
			return '_'
		}
		return r
	}, strings.ToUpper(team))
}

// jsonObject writes {"k1":"v1",...} from key, value pairs of strings (no
// encoding/json: it would cost newkey a dozen packages).
func jsonObject(kv ...string) string {
	var b strings.Builder
	b.WriteByte('{')
	for i := 0; i+1 < len(kv); i += 2 {
		if i > 0 {
			b.WriteByte(',')
		}
		b.WriteString(jsonString(kv[i]) + ":" + jsonString(kv[i+1]))
	}
	b.WriteByte('}')
	return b.String()
}

// jsonString quotes s as a JSON string.
func jsonString(s string) string {
	var b strings.Builder
	b.WriteByte('"')
	for _, r := range s {
		switch {
		case r == '"' || r == '\\':
			b.WriteByte('\\')
			b.WriteRune(r)
		case r < 0x20 || r == 0x7f || r == 0x2028 || r == 0x2029:
			fmt.Fprintf(&b, "\\u%04x", r)
		default:
			b.WriteRune(r)
		}
	}
	b.WriteByte('"')
	return b.String()
}
