package gwstack

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// lintedFixtures are the fixtures whose templates cfn-lint checks: every
// stack shape the tests synthesize.
var lintedFixtures = []string{"default", "prod", "pinned", "allatonce", "guardrail"}

// cfnLintFinding matches a line of `cfn-lint --format parseable`:
// file:line:column:endline:endcolumn:rule:message.
var cfnLintFinding = regexp.MustCompile(`^(.+?):(\d+):(\d+):(\d+):(\d+):([EWI]\d+):(.*)$`)

// runCfnLint lints the templates and returns the findings per file base
// name, as "RULE message" lines.
func runCfnLint(t *testing.T, templates map[string]map[string]interface{}) map[string][]string {
	t.Helper()
	dir := t.TempDir()
	var files []string
	for name, tmpl := range templates {
		b, err := json.MarshalIndent(tmpl, "", " ")
		if err != nil {
			t.Fatal(err)
		}
		p := filepath.Join(dir, name+".template.json")
		if err := os.WriteFile(p, b, 0o644); err != nil {
			t.Fatal(err)
		}
		files = append(files, p)
	}
	out, err := exec.Command("cfn-lint", append([]string{"--format", "parseable", "--"}, files...)...).CombinedOutput()
	findings := map[string][]string{}
	n := 0
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		if m := cfnLintFinding.FindStringSubmatch(line); m != nil {
			name := strings.TrimSuffix(filepath.Base(m[1]), ".template.json")
			findings[name] = append(findings[name], m[6]+" "+m[7]+" (line "+m[2]+")")
			n++
		}
	}
	// cfn-lint exits with a bit mask of the levels found (2 error, 4
	// warning, 8 informational); anything else is a failure to run.
	if ee, ok := err.(*exec.ExitError); err != nil && (!ok || ee.ExitCode()&^14 != 0 || n == 0) {
		t.Fatalf("cfn-lint: %v\n%s", err, out)
	}
	return findings
}

// TestTemplatesPassCfnLint lints the template of every fixture with
// AWS's CloudFormation linter: no error, no warning (the last ones found,
// E3002 on the dashboard and W3005 on the functions, are fixed in the
// stack). A template with the dashboard tagged again proves the harness
// reports findings.
func TestTemplatesPassCfnLint(t *testing.T) {
	if why := cfnLintMissing(); why != "" {
		t.Skip("cannot lint the templates: " + why + " (pip install cfn-lint)")
	}
	templates := map[string]map[string]interface{}{}
	for _, name := range lintedFixtures {
		templates[name] = get(t, name).json
	}
	probe := deepCopy(t, templates["default"])
	for _, r := range probe["Resources"].(map[string]interface{}) {
		if r := r.(map[string]interface{}); r["Type"] == "AWS::CloudWatch::Dashboard" {
			r["Properties"].(map[string]interface{})["Tags"] = []interface{}{map[string]interface{}{"Key": "llmgw:stage", "Value": "dev"}}
		}
	}
	templates["probe"] = probe

	findings := runCfnLint(t, templates)
	for _, name := range lintedFixtures {
		for _, f := range findings[name] {
			t.Errorf("%s: cfn-lint %s", name, f)
		}
	}
	if p := strings.Join(findings["probe"], "\n"); !strings.Contains(p, "E3002") {
		t.Errorf("cfn-lint did not report the tagged dashboard (E3002): %q", p)
	}
}

func deepCopy(t *testing.T, v map[string]interface{}) map[string]interface{} {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	var out map[string]interface{}
	if err := json.Unmarshal(b, &out); err != nil {
		t.Fatal(err)
	}
	return out
}
