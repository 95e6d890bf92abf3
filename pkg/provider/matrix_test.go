package provider_test

import (
	"bufio"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// TestSemanticsMatrixIsBackedByTests checks docs/semantics-matrix.md
// against the code: every feature row has a cell per provider kind, every
// cell says passthrough, translated or rejected, and every test it names
// exists (and, for a subtest, its name appears in that test's file). A
// renamed or deleted test breaks this, so the matrix cannot rot.
//
// The matrix has one table per client API (ingress): the Chat Completions
// table's header cell is "Feature"; another API's is "<api> feature" (e.g.
// "Messages feature"), and the tests its cells name may live in
// pkg/ingress/<api>, pkg/server or the column's adapter package.
func TestSemanticsMatrixIsBackedByTests(t *testing.T) {
	root := filepath.Join("..", "..")
	doc, err := os.ReadFile(filepath.Join(root, "docs", "semantics-matrix.md"))
	if err != nil {
		t.Fatal(err)
	}
	// Each Chat column's tests live in one package.
	pkgOf := map[string]string{"openai": "pkg/server", "anthropic": "pkg/provider/anthropic", "bedrock": "pkg/provider/bedrock"}
	adapterOf := map[string]string{"openai": "pkg/provider/openaicompat", "anthropic": "pkg/provider/anthropic", "bedrock": "pkg/provider/bedrock"}
	var columns []string
	ingress := "" // the table's client API; "" is Chat Completions
	required := map[string][]string{
		"": {"text", "system", "multi-turn", "images", "tools definition", "forced tool choice",
			"parallel tool calls", "tool results", "streaming tool-call deltas", "response_format json_object",
			"response_format json_schema", "stop sequences", "max tokens", "temperature/top_p", "usage accounting",
			"cached-token accounting", "cache_control", "stop-reason mapping", "mid-stream error", "n>1", "logprobs", "audio"},
		"messages": {"text", "system", "multi-turn", "images", "documents", "tools", "tool_choice", "tool_use/tool_result round trip",
			"tool_result is_error", "streaming tool-call deltas", "extended thinking", "thinking blocks and signatures", "cache_control",
			"stop_sequences", "metadata.user_id", "top_k and unknown fields", "usage with cache tokens", "stop-reason mapping",
			"event sequence", "mid-stream error", "failover before the first token", "errors", "count_tokens"},
	}
	seen := map[string]map[string]bool{}
	testRef := regexp.MustCompile("`(Test[A-Za-z0-9_]+)(/[^`]+)?`")
	kinds := 0
	sc := bufio.NewScanner(strings.NewReader(string(doc)))
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		if !strings.HasPrefix(line, "|") || strings.HasPrefix(line, "|---") || strings.HasPrefix(line, "| ---") {
			continue
		}
		cells := strings.Split(strings.Trim(line, "|"), "|")
		for i := range cells {
			cells[i] = strings.TrimSpace(cells[i])
		}
		if h := strings.ToLower(cells[0]); h == "feature" || strings.HasSuffix(h, " feature") {
			kinds = len(cells) - 1
			columns = cells[1:]
			ingress = strings.TrimSuffix(strings.TrimSuffix(h, "feature"), " ")
			continue
		}
		feature := strings.ToLower(strings.Trim(cells[0], "*`"))
		if seen[ingress] == nil {
			seen[ingress] = map[string]bool{}
		}
		seen[ingress][feature] = true
		if len(cells)-1 != kinds || kinds < 3 {
			t.Errorf("row %q has %d cells, want %d", feature, len(cells)-1, kinds)
			continue
		}
		for ci, cell := range cells[1:] {
			dir, ok := pkgOf[columns[ci]]
			if !ok {
				t.Fatalf("unknown provider kind column %q", columns[ci])
			}
			tests := indexTests(t, filepath.Join(root, dir))
			if ingress != "" {
				tests = map[string]string{}
				for _, d := range []string{"pkg/ingress/" + ingress, "pkg/server", adapterOf[columns[ci]]} {
					for name, file := range testsIn(filepath.Join(root, d)) {
						tests[name] = file
					}
				}
				dir = "pkg/ingress/" + ingress + ", pkg/server or " + adapterOf[columns[ci]]
			}
			lc := strings.ToLower(cell)
			if !strings.HasPrefix(lc, "passthrough") && !strings.HasPrefix(lc, "translated") && !strings.HasPrefix(lc, "rejected") {
				t.Errorf("row %q: cell %q must start with passthrough, translated or rejected", feature, cell)
			}
			refs := testRef.FindAllStringSubmatch(cell, -1)
			if len(refs) == 0 {
				t.Errorf("row %q: cell %q names no test", feature, cell)
			}
			for _, r := range refs {
				file, ok := tests[r[1]]
				if !ok {
					t.Errorf("row %q: test %s does not exist in %s", feature, r[1], dir)
					continue
				}
				if sub := strings.TrimPrefix(r[2], "/"); sub != "" {
					src, _ := os.ReadFile(file)
					first := strings.Split(sub, "/")[0]
					if !strings.Contains(string(src), first) && !strings.Contains(string(src), strings.ReplaceAll(first, "_", " ")) {
						t.Errorf("row %q: subtest %q not found in %s", feature, sub, file)
					}
				}
			}
		}
	}
	for api, rows := range required {
		for _, f := range rows {
			if !seen[api][f] {
				t.Errorf("matrix (ingress %q) lacks the %q row", api, f)
			}
		}
	}
}

// indexTests maps every Test function name of one package to its file.
func indexTests(t *testing.T, dir string) map[string]string {
	out := testsIn(dir)
	if len(out) == 0 {
		t.Fatal("no tests found")
	}
	return out
}

// testsIn maps every Test function name of one package to its file.
func testsIn(dir string) map[string]string {
	fn := regexp.MustCompile(`(?m)^func (Test[A-Za-z0-9_]+)\(`)
	out := map[string]string{}
	filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && p != dir {
			return filepath.SkipDir
		}
		if d.IsDir() || !strings.HasSuffix(p, "_test.go") {
			return nil
		}
		src, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		for _, m := range fn.FindAllStringSubmatch(string(src), -1) {
			out[m[1]] = p
		}
		return nil
	})
	return out
}
