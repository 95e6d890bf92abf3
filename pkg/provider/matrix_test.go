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
func TestSemanticsMatrixIsBackedByTests(t *testing.T) {
	root := filepath.Join("..", "..")
	doc, err := os.ReadFile(filepath.Join(root, "docs", "semantics-matrix.md"))
	if err != nil {
		t.Fatal(err)
	}
	// Each column's tests live in one package.
	pkgOf := map[string]string{"openai": "pkg/server", "anthropic": "pkg/provider/anthropic", "bedrock": "pkg/provider/bedrock", "gemini": "pkg/provider/gemini"}
	var columns []string
	required := []string{"text", "system", "multi-turn", "images", "tools definition", "forced tool choice",
		"parallel tool calls", "tool results", "streaming tool-call deltas", "response_format json_object",
		"response_format json_schema", "stop sequences", "max tokens", "temperature/top_p", "usage accounting",
		"cached-token accounting", "cache_control", "stop-reason mapping", "mid-stream error", "n>1", "logprobs", "audio"}
	seen := map[string]bool{}
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
		if strings.EqualFold(cells[0], "feature") {
			kinds = len(cells) - 1
			columns = cells[1:]
			continue
		}
		feature := strings.ToLower(strings.Trim(cells[0], "*`"))
		seen[feature] = true
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
	for _, f := range required {
		if !seen[f] {
			t.Errorf("matrix lacks the %q row", f)
		}
	}
}

// indexTests maps every Test function name of one package to its file.
func indexTests(t *testing.T, dir string) map[string]string {
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
	if len(out) == 0 {
		t.Fatal("no tests found")
	}
	return out
}
