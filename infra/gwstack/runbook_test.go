package gwstack

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"reflect"
	"regexp"
	"slices"
	"strings"
	"testing"

	awsconfig "github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/service/ssm"
	yaml "go.yaml.in/yaml/v3"

	"github.com/llmgw/llmgw/pkg/config"
	"github.com/llmgw/llmgw/pkg/deployment"
	"github.com/llmgw/llmgw/pkg/ssmconfig"
	"github.com/llmgw/llmgw/pkg/ssmconfig/ssmtest"
)

// runbookStage is the stage the runbook examples (docs/operations.md) are written for.
const runbookStage = "prod"

// runbookTeams is the operator's teams parameter the team examples edit
// (the seed has no teams; Deploy step 4 adds them as 50-teams).
var runbookTeams = map[string]string{
	"<k1 sha256>": strings.Repeat("1a", 32),
	"<k2 sha256>": strings.Repeat("2b", 32),
}

func runbookTeamsDoc() string {
	return fmt.Sprintf("teams:\n  search:\n    keys: [{id: k1, sha256: %q}, {id: k2, sha256: %q}]\n    limits: {requests_per_minute: 600}\n",
		runbookTeams["<k1 sha256>"], runbookTeams["<k2 sha256>"])
}

// runbookIntent is what each runbook example's prose says it does, as an
// edit of the deployed config (the merged YAML document as a generic map).
var runbookIntent = map[string]func(t *testing.T, m map[string]any){
	"disable-provider": func(t *testing.T, m map[string]any) {
		at(t, m, "providers", "anthropic")["disabled"] = true
	},
	"reorder-chain": func(t *testing.T, m map[string]any) {
		r := at(t, m, "routes", "claude-sonnet")
		ts := r["targets"].([]any)
		if len(ts) != 3 {
			t.Fatalf("the seeded claude-sonnet chain has %d targets; the example is written for 3", len(ts))
		}
		r["targets"] = []any{ts[1], ts[0], ts[2]}
	},
	"force-breaker": func(t *testing.T, m map[string]any) {
		at(t, m, "routes", "claude-sonnet")["targets"].([]any)[0].(map[string]any)["breaker"] = "open"
	},
	"revoke-team": func(t *testing.T, m map[string]any) {
		at(t, m, "teams", "search")["disabled"] = true
	},
	"revoke-key": func(t *testing.T, m map[string]any) {
		at(t, m, "teams", "search")["keys"].([]any)[0].(map[string]any)["revoked"] = true
	},
}

func at(t *testing.T, m map[string]any, path ...string) map[string]any {
	t.Helper()
	for _, p := range path {
		next, ok := m[p].(map[string]any)
		if !ok {
			t.Fatalf("the deployed config has no %s", strings.Join(path, "."))
		}
		m = next
	}
	return m
}

// runbookExample is one marked `aws ssm put-parameter` of docs/operations.md.
type runbookExample struct {
	id, name, typ, value string
	overwrite            bool
}

var runbookMark = regexp.MustCompile("(?s)<!-- runbook: ([a-z0-9-]+) -->\\s*```sh\\n(.*?)```")

// readRunbook extracts the marked examples from docs/operations.md.
func readRunbook(t *testing.T) []runbookExample {
	t.Helper()
	b, err := os.ReadFile("../../docs/operations.md")
	if err != nil {
		t.Fatal(err)
	}
	var out []runbookExample
	for _, m := range runbookMark.FindAllStringSubmatch(string(b), -1) {
		ex := runbookExample{id: m[1]}
		var cmds [][]string
		for _, line := range strings.Split(strings.ReplaceAll(m[2], "\\\n", " "), "\n") {
			if l := strings.TrimSpace(line); l == "" || strings.HasPrefix(l, "#") {
				continue
			}
			cmds = append(cmds, shellWords(t, line))
		}
		if len(cmds) != 1 || !slices.Equal(cmds[0][:min(3, len(cmds[0]))], []string{"aws", "ssm", "put-parameter"}) {
			t.Fatalf("runbook example %s: want exactly one aws ssm put-parameter, got %q", ex.id, cmds)
		}
		args := cmds[0][3:]
		for i := 0; i < len(args); i++ {
			switch args[i] {
			case "--overwrite":
				ex.overwrite = true
			case "--name", "--type", "--value":
				if i+1 == len(args) {
					t.Fatalf("runbook example %s: %s without a value", ex.id, args[i])
				}
				*map[string]*string{"--name": &ex.name, "--type": &ex.typ, "--value": &ex.value}[args[i]] = args[i+1]
				i++
			default:
				t.Fatalf("runbook example %s: unexpected argument %q", ex.id, args[i])
			}
		}
		out = append(out, ex)
	}
	return out
}

// shellWords splits one line the way sh does for the quoting the runbook
// uses: single quotes, double quotes with backslash escapes, bare words.
func shellWords(t *testing.T, line string) []string {
	var words []string
	var cur strings.Builder
	inWord := false
	for i := 0; i < len(line); i++ {
		switch c := line[i]; {
		case c == ' ' || c == '\t':
			if inWord {
				words, inWord = append(words, cur.String()), false
				cur.Reset()
			}
		case c == '\'':
			j := strings.IndexByte(line[i+1:], '\'')
			if j < 0 {
				t.Fatalf("unterminated ' in %q", line)
			}
			cur.WriteString(line[i+1 : i+1+j])
			i, inWord = i+1+j, true
		case c == '"':
			for i++; i < len(line) && line[i] != '"'; i++ {
				if line[i] == '\\' && i+1 < len(line) {
					i++
				}
				cur.WriteByte(line[i])
			}
			if i == len(line) {
				t.Fatalf("unterminated \" in %q", line)
			}
			inWord = true
		default:
			cur.WriteByte(c)
			inWord = true
		}
	}
	if inWord {
		words = append(words, cur.String())
	}
	return words
}

// loadThroughSSM seeds a fake Parameter Store with the stack's seed
// parameters (rendered and split exactly as the stack deploys them), the
// operator's teams parameter and extra, and loads them with the runtime's
// loader (same ordering and merge).
func loadThroughSSM(t *testing.T, extra map[string]string) *config.Config {
	t.Helper()
	srv := ssmtest.New()
	defer srv.Close()
	chunks, err := SplitConfig(RenderSeedConfig(readSeed(t), runbookStage), MaxParameterBytes)
	if err != nil {
		t.Fatal(err)
	}
	path := deployment.ConfigPath(runbookStage)
	for _, c := range chunks {
		srv.Put(path+c.Name, "String", c.Value)
	}
	srv.Put(path+"50-teams", "String", runbookTeamsDoc())
	for name, v := range extra {
		srv.Put(name, "String", v)
	}
	t.Setenv("AWS_ENDPOINT_URL_SSM", srv.URL)
	t.Setenv("AWS_REGION", "us-east-1")
	t.Setenv("AWS_ACCESS_KEY_ID", "AKIDTEST")
	t.Setenv("AWS_SECRET_ACCESS_KEY", "secret")
	awsCfg, err := awsconfig.LoadDefaultConfig(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	cfg, _, err := (&ssmconfig.Loader{API: ssm.NewFromConfig(awsCfg), Path: path}).Load(context.Background())
	if err != nil {
		t.Fatalf("the runtime refuses the config: %v", err)
	}
	return cfg
}

// TestRunbookExamples applies each marked `aws ssm put-parameter` example
// of the incident runbook (docs/operations.md) to the config the stack seeds, through
// the runtime's loader, and checks the result is exactly the deployed
// config changed as the example's prose says: nothing dropped, nothing
// else changed.
func TestRunbookExamples(t *testing.T) {
	examples := readRunbook(t)
	var ids []string
	for _, ex := range examples {
		ids = append(ids, ex.id)
	}
	var want []string
	for id := range runbookIntent {
		want = append(want, id)
	}
	slices.Sort(want)
	if got := slices.Sorted(slices.Values(ids)); !slices.Equal(got, want) {
		t.Fatalf("docs/operations.md runbook examples %v, checked intents %v: mark every example and state its intent here", got, want)
	}
	path := deployment.ConfigPath(runbookStage)
	deployed := loadThroughSSM(t, nil)
	for _, ex := range examples {
		t.Run(ex.id, func(t *testing.T) {
			if ex.name != path+"90-incident" || ex.typ != "String" || !ex.overwrite {
				t.Fatalf("example writes %s (type %q, overwrite %v); the runbook's parameter is %s90-incident, String, --overwrite",
					ex.name, ex.typ, ex.overwrite, path)
			}
			value := ex.value
			for ph, v := range runbookTeams {
				value = strings.ReplaceAll(value, ph, v)
			}
			got := loadThroughSSM(t, map[string]string{ex.name: value})

			// The intent, applied to the deployed document.
			var docs []string
			chunks, _ := SplitConfig(RenderSeedConfig(readSeed(t), runbookStage), MaxParameterBytes)
			for _, c := range chunks {
				docs = append(docs, c.Value)
			}
			merged, err := ssmconfig.Merge(append(docs, runbookTeamsDoc()))
			if err != nil {
				t.Fatal(err)
			}
			var m map[string]any
			if err := yaml.Unmarshal(merged, &m); err != nil {
				t.Fatal(err)
			}
			runbookIntent[ex.id](t, m)
			b, _ := yaml.Marshal(m)
			intended, err := config.Parse(b)
			if err != nil {
				t.Fatalf("intended config does not validate: %v", err)
			}
			if reflect.DeepEqual(got, deployed) {
				t.Fatal("the example changes nothing")
			}
			if !reflect.DeepEqual(got, intended) {
				g, _ := json.MarshalIndent(got, "", " ")
				w, _ := json.MarshalIndent(intended, "", " ")
				t.Fatalf("the example yields\n%s\nthe prose says\n%s", g, w)
			}
		})
	}
}
