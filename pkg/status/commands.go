package status

import (
	"encoding/json"
	"strings"

	"github.com/llmgw/llmgw/pkg/config"
	"github.com/llmgw/llmgw/pkg/deployment"
)

// IncidentParameter is the SSM parameter the runbook's incident edits go
// in, under the stage's config path: merged last over every other one, one
// document at a time (each command below replaces it whole), deleted to
// undo.
const IncidentParameter = "90-incident"

// DefaultConfigPath is the config path the commands name when the gateway
// does not read its config from SSM (local mode): the runbook's prod path.
var DefaultConfigPath = deployment.ConfigPath("prod")

// Command is one runbook edit: the put-parameter command an operator
// copies, and what it writes.
type Command struct {
	// Action is pull (a provider out of every chain), reorder (a target to
	// the front of its chain), force_open, force_closed (a target's
	// breaker), revoke_team or revoke_key.
	Action string `json:"action"`
	// Key is the key id a revoke_key command revokes.
	Key string `json:"key,omitempty"`
	// Name is the parameter written; Value the YAML document.
	Name  string `json:"name"`
	Value string `json:"value"`
	// Shell is the command line, quoted for a POSIX shell.
	Shell string `json:"shell"`
}

// command is the runbook's put-parameter line for a document.
func command(action, path string, doc any) Command {
	b, _ := json.Marshal(doc) // JSON is YAML: every field of a target kept exactly
	name := strings.TrimRight(path, "/") + "/" + IncidentParameter
	return Command{Action: action, Name: name, Value: string(b),
		Shell: "aws ssm put-parameter --overwrite --type String --name " + shellQuote(name) + " --value " + shellQuote(string(b))}
}

// shellQuote quotes s in single quotes for a POSIX shell.
func shellQuote(s string) string {
	if s != "" && strings.Trim(s, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789/-_.") == "" {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}

// m is a one-key map: the path of a document to its edit.
func m(k string, v any) map[string]any { return map[string]any{k: v} }

// pullCommand pulls provider out of every chain (providers.P.disabled).
func pullCommand(path, provider string) Command {
	return command("pull", path, m("providers", m(provider, m("disabled", true))))
}

// targetCommands are the edits of target i of route: move it to the front
// of the chain, force its breaker open or closed. Lists are replaced when
// the documents merge, so each writes the route's whole chain, every
// target with every field it has.
func targetCommands(path, route string, targets []config.Target, i int) []Command {
	var out []Command
	if i > 0 {
		re := append([]config.Target{targets[i]}, targets[:i]...)
		re = append(re, targets[i+1:]...)
		out = append(out, command("reorder", path, m("routes", m(route, m("targets", re)))))
	}
	for _, f := range []string{"open", "closed"} {
		if targets[i].Breaker == f {
			continue
		}
		ts := append([]config.Target(nil), targets...)
		ts[i].Breaker = f
		out = append(out, command("force_"+f, path, m("routes", m(route, m("targets", ts)))))
	}
	return out
}

// teamCommands revoke team (teams.T.disabled) or one of its keys (its
// whole key list, that one marked revoked; keys by id and hash only).
func teamCommands(path, team string, t *config.Team) []Command {
	out := []Command{command("revoke_team", path, m("teams", m(team, m("disabled", true))))}
	for i, k := range t.Keys {
		if k.Revoked {
			continue
		}
		keys := append([]config.TeamKey(nil), t.Keys...)
		keys[i].Revoked = true
		c := command("revoke_key", path, m("teams", m(team, m("keys", keys))))
		c.Key = k.ID
		out = append(out, c)
	}
	return out
}
