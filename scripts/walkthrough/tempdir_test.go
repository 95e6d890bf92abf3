package walkthrough

import (
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// fixedTemp finds a path in the system temp directory that is not unique
// to a run: a literal /tmp/ path or os.TempDir(); ${TMPDIR:-/tmp} is
// accepted only as mktemp's template.
var fixedTemp = regexp.MustCompile(`/tmp/|os\.TempDir\(\)`)

// TestNoFixedPathsInTheTempDir: scripts, commands and tests make their
// temp files with mktemp -d, os.MkdirTemp or t.TempDir, so concurrent runs
// (two engineers, or CI beside a developer) never share or lock a path.
func TestNoFixedPathsInTheTempDir(t *testing.T) {
	repo, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	skip := map[string]bool{".git": true, "node_modules": true, "docs": true, "build": true, "cdk.out": true, ".llmgw": true}
	err = filepath.WalkDir(repo, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			if skip[d.Name()] {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(path, ".go") && !strings.HasSuffix(path, ".sh") && filepath.Base(path) != "run" ||
			path == filepath.Join(repo, "scripts", "walkthrough", "tempdir_test.go") {
			return nil
		}
		b, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		for i, line := range strings.Split(string(b), "\n") {
			if strings.Contains(line, "mktemp") {
				line = strings.ReplaceAll(line, "${TMPDIR:-/tmp}/", "")
			}
			if fixedTemp.MatchString(line) {
				rel, _ := filepath.Rel(repo, path)
				t.Errorf("%s:%d: a fixed path in the temp dir (use mktemp -d, os.MkdirTemp or t.TempDir): %s", rel, i+1, strings.TrimSpace(line))
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}
