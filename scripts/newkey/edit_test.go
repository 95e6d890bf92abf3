package main

import (
	"strings"
	"testing"

	"github.com/llmgw/llmgw/pkg/config"
)

const head = "providers:\n  a: {kind: fake}\nroutes:\n  m: {targets: [{provider: a, model: x}]}\n"

var (
	h1 = strings.Repeat("1", 64)
	h2 = strings.Repeat("2", 64)
)

func TestAddKeyLayouts(t *testing.T) {
	cases := []struct {
		name, in string
		id       string // the id addKey picks
		ids      []string
		admin    bool
	}{
		{"no teams", head, "k1", []string{"k1"}, false},
		{"no teams, no final newline", strings.TrimSuffix(head, "\n"), "k1", []string{"k1"}, false},
		{"empty teams", head + "teams:\n", "k1", []string{"k1"}, false},
		{"teams: {} with a comment", head + "teams: {}   # none yet\n", "k1", []string{"k1"}, false},
		{"teams before other sections", "teams:\n  other:\n    keys: [{id: k1, sha256: \"" + h2 + "\"}]\n\n# prices\n" + head, "k1", []string{"k1"}, false},
		{"README flow keys", head + "teams:\n  search:\n    keys: [{id: k1, sha256: \"" + h1 + "\"}, {id: k0, sha256: '" + h2 + "', revoked: true}]   # hashes\n    routes: [m]\n",
			"k2", []string{"k1", "k0", "k2"}, true},
		{"block keys, items at the key's indent", head + "teams:\n    search:\n        keys:\n        - id: k1\n          sha256: \"" + h1 + "\"\n        limits: {requests_per_minute: 5}\n",
			"k2", []string{"k1", "k2"}, false},
		{"block keys, then another team", head + "teams:\n  search:\n    keys:\n      - {id: k1, sha256: \"" + h1 + "\"}\n\n  other: {}\nusage: {ttl: 100h}\n",
			"k2", []string{"k1", "k2"}, true},
		{"team without keys", head + "teams:\n  search:\n    limits: {requests_per_minute: 5}\n    admin: true\n", "k1", []string{"k1"}, true},
		{"team: {}", head + "teams:\n  search: {}\n", "k1", []string{"k1"}, false},
		{"keys: []", head + "teams:\n  search:\n    keys: []\n", "k1", []string{"k1"}, false},
		{"document marker, CRLF", strings.ReplaceAll("---\n"+head+"teams:\n  search:\n    keys:\n      - {id: k1, sha256: \""+h1+"\"}\n", "\n", "\r\n"),
			"k2", []string{"k1", "k2"}, false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			sum := strings.Repeat("f", 64)
			out, id, err := addKey([]byte(c.in), "search", "", sum, c.admin)
			if err != nil {
				t.Fatal(err)
			}
			if id != c.id {
				t.Errorf("id %s, want %s", id, c.id)
			}
			cfg, err := config.Parse(out)
			if err != nil {
				t.Fatalf("%v\n%s", err, out)
			}
			tm := cfg.Teams["search"]
			var ids []string
			for _, k := range tm.Keys {
				ids = append(ids, k.ID)
				if k.ID == id && k.SHA256 != sum {
					t.Errorf("key %s has hash %s", id, k.SHA256)
				}
			}
			if strings.Join(ids, ",") != strings.Join(c.ids, ",") || c.admin && !tm.Admin {
				t.Errorf("ids %v admin %v, want %v %v\n%s", ids, tm.Admin, c.ids, c.admin, out)
			}
			if strings.Contains(c.in, "other") && cfg.Teams["other"] == nil {
				t.Errorf("team other lost:\n%s", out)
			}
			if strings.Contains(c.in, "\r\n") != strings.Contains(string(out), "\r\n") || strings.Count(string(out), "\n")-strings.Count(string(out), "\r\n") > 0 && strings.Contains(c.in, "\r\n") {
				t.Errorf("line endings changed:\n%q", out)
			}
			if strings.Contains(c.in, "# none yet") && !strings.Contains(string(out), "# none yet") {
				t.Errorf("comment lost:\n%s", out)
			}
		})
	}
}

func TestAddKeyRefusesWhatItCannotEditSafely(t *testing.T) {
	cases := map[string]struct{ in, want string }{
		"JSON":            {`{"providers": {"a": {"kind": "fake"}}}`, "line 1: the file is not a block-style YAML mapping"},
		"flow teams":      {head + "teams: {search: {keys: []}}\n", `line 5: teams: is written as "{search: {keys: []}}"`},
		"flow team":       {head + "teams:\n  search: {keys: [{id: k1, sha256: x}]}\n", `line 6: team search is written as`},
		"alias keys":      {head + "teams:\n  search:\n    keys: *k\n", `line 7: keys: of team search is written as "*k"`},
		"multi-line flow": {head + "teams:\n  search:\n    keys: [{id: k1,\n      sha256: x}]\n", `keys: of team search is written as`},
		"two documents":   {head + "---\nteams:\n", "line 5: the file holds several YAML documents"},
		"two teams keys":  {head + "teams:\nteams:\n", "line 6: teams: appears twice"},
		"tabs":            {head + "teams:\n\tsearch:\n", "line 6: indented with a tab"},
		"merge key":       {head + "teams:\n  <<: *base\n", "line 6: unexpected layout under teams:"},
		"teams as a list": {head + "teams:\n  - search\n", "line 6: unexpected layout under teams:"},
		"admin false":     {head + "teams:\n  search:\n    admin: false\n", "line 7: team search has admin: false"},
	}
	for name, c := range cases {
		t.Run(name, func(t *testing.T) {
			_, _, err := addKey([]byte(c.in), "search", "", strings.Repeat("f", 64), true)
			if err == nil || !strings.Contains(err.Error(), c.want) || !strings.Contains(err.Error(), "add the entry by hand") {
				t.Fatalf("err = %v, want %q", err, c.want)
			}
		})
	}
}
