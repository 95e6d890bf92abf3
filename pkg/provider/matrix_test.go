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
// The page holds one table per client API (ingress). The Chat Completions
// table's header starts "Feature"; another ingress's starts "<api>
// feature" (e.g. "Responses feature"). A column is named by its provider
// kind, optionally qualified ("openai (responses)"). Tests of the Chat
// table live in the column's package; an ingress table's tests may also
// live in pkg/server (end to end) and pkg/ingress/<api>.
func TestSemanticsMatrixIsBackedByTests(t *testing.T) {
	root := filepath.Join("..", "..")
	doc, err := os.ReadFile(filepath.Join(root, "docs", "semantics-matrix.md"))
	if err != nil {
		t.Fatal(err)
	}
	// Each Chat column's tests live in one package.
	pkgOf := map[string]string{"openai": "pkg/server", "anthropic": "pkg/provider/anthropic", "bedrock": "pkg/provider/bedrock", "gemini": "pkg/provider/gemini"}
	// The rows each table must have, by ingress ("" is Chat Completions).
	required := map[string][]string{
		"": {"text", "system", "multi-turn", "images", "tools definition", "forced tool choice",
			"parallel tool calls", "tool results", "streaming tool-call deltas", "response_format json_object",
			"response_format json_schema", "stop sequences", "max tokens", "temperature/top_p", "usage accounting",
			"cached-token accounting", "cache_control", "stop-reason mapping", "mid-stream error", "n>1", "logprobs", "audio"},
		"responses": {"text", "instructions and developer/system messages", "multi-turn", "images", "function tools",
			"tool_choice", "parallel_tool_calls", "function call round trip", "streaming function-call arguments",
			"reasoning", "text.format json_schema", "max_output_tokens", "usage accounting", "event lifecycle",
			"non-streaming", "mid-stream failure", "failover before the first token", "built-in and custom tools",
			"namespace tools", "previous_response_id / conversation", "unknown fields"},
		"messages": {"text", "system", "multi-turn", "images", "documents", "tools", "tool_choice", "tool_use/tool_result round trip",
			"tool_result is_error", "streaming tool-call deltas", "extended thinking", "thinking blocks and signatures", "cache_control",
			"stop_sequences", "metadata.user_id", "top_k and unknown fields", "usage with cache tokens", "stop-reason mapping",
			"event sequence", "mid-stream error", "failover before the first token", "errors", "count_tokens"},
		"embeddings": {"text input", "token-array input", "dimensions", "encoding_format base64", "usage accounting", "budgets", "failover"},
		"bedrock": {"converse text", "converse-stream events", "tools", "reasoning", "cache points", "untranslated members",
			"invokemodel claude body", "invoke-with-response-stream chunks", "mid-stream error", "failover before the first token",
			"errors", "count-tokens", "authentication", "inference profiles"},
	}
	var columns []string
	ingress := ""
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
			ingress = strings.TrimSpace(strings.TrimSuffix(h, "feature"))
			if _, ok := required[ingress]; !ok {
				t.Fatalf("table for unknown ingress %q", ingress)
			}
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
			kind, _, _ := strings.Cut(columns[ci], " ")
			dir, ok := pkgOf[kind]
			if !ok {
				t.Fatalf("unknown provider kind column %q", columns[ci])
			}
			dirs := []string{dir}
			if ingress != "" {
				dirs = append(dirs, "pkg/server", filepath.Join("pkg", "ingress", ingress))
			}
			tests := map[string]string{}
			for _, d := range dirs {
				for name, file := range indexTests(t, filepath.Join(root, d)) {
					tests[name] = file
				}
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
					t.Errorf("row %q: test %s does not exist in %s", feature, r[1], strings.Join(dirs, ", "))
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
	for ing, rows := range required {
		for _, f := range rows {
			if !seen[ing][f] {
				t.Errorf("matrix (ingress %q) lacks the %q row", ing, f)
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
