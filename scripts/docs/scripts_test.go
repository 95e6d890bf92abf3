package docs

import (
	"bufio"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// TestEveryScriptAnswersHelp: every script under scripts/ prints its usage
// on -h (and --help) and exits 0 without running anything: go, npm, npx
// and node on its PATH are stubs that leave a mark when called.
func TestEveryScriptAnswersHelp(t *testing.T) {
	repo := repoRoot(t)
	var scripts []string
	err := filepath.WalkDir(filepath.Join(repo, "scripts"), func(p string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && (d.Name() == "lib" || d.Name() == "node_modules") {
			return filepath.SkipDir
		}
		if strings.HasSuffix(p, ".sh") {
			scripts = append(scripts, p)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(scripts) < 7 {
		t.Fatalf("found only %v", scripts)
	}
	stubs, marks := t.TempDir(), t.TempDir()
	for _, tool := range []string{"go", "npm", "npx", "node", "python3", "curl"} {
		stub := "#!/bin/sh\necho \"$0 $*\" >>" + filepath.Join(marks, "called") + "\nexit 1\n"
		if err := os.WriteFile(filepath.Join(stubs, tool), []byte(stub), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	for _, s := range scripts {
		for _, flag := range []string{"-h", "--help"} {
			cmd := exec.Command("bash", s, flag)
			cmd.Dir = t.TempDir()
			cmd.Env = append(os.Environ(), "PATH="+stubs+string(os.PathListSeparator)+os.Getenv("PATH"))
			out, err := cmd.CombinedOutput()
			rel, _ := filepath.Rel(repo, s)
			if err != nil || !strings.Contains(string(out), "Usage:") {
				t.Errorf("%s %s: %v, no usage:\n%s", rel, flag, err, out)
			}
			if b, _ := os.ReadFile(filepath.Join(marks, "called")); len(b) > 0 {
				t.Errorf("%s %s ran something: %s", rel, flag, b)
				os.Remove(filepath.Join(marks, "called"))
			}
		}
	}
}

// TestProgressLinesDuringSilence: the test command's progress helper
// prints a line saying what the phase is doing while the command it runs
// is silent, and returns the command's exit status. The command waits for
// a file the test creates only once it has seen a progress line, so no
// timing is assumed.
func TestProgressLinesDuringSilence(t *testing.T) {
	repo := repoRoot(t)
	dir := t.TempDir()
	release := filepath.Join(dir, "release")
	// As test.sh runs it: set -e and pipefail, the command's status
	// returned (3), and a log without compile lines (go test's output).
	script := `set -euo pipefail
. "$REPO/scripts/lib/progress.sh"
progress "compiling the world" - bash -c 'echo started; for i in $(seq 300); do [ -e "$RELEASE" ] && break; sleep 0.1; done; exit 0'
rc=0
progress "failing" - bash -c 'exit 3' || rc=$?
echo "rc=$rc"`
	cmd := exec.Command("bash", "-c", script)
	cmd.Env = append(os.Environ(), "REPO="+repo, "RELEASE="+release, "LOGDIR="+dir, "PROGRESS_EVERY=1")
	pr, pw := io.Pipe()
	cmd.Stdout, cmd.Stderr = pw, pw
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() { cmd.Wait(); pw.Close() }()
	var lines []string
	sc := bufio.NewScanner(pr)
	released := false
	for sc.Scan() {
		l := sc.Text()
		lines = append(lines, l)
		if !released && strings.Contains(l, "... compiling the world: ") && strings.Contains(l, "latest: started") {
			released = true
			if err := os.WriteFile(release, nil, 0o644); err != nil {
				t.Fatal(err)
			}
		}
	}
	if !released || lines[len(lines)-1] != "rc=3" || lines[0] != "started" {
		t.Errorf("output:\n%s", strings.Join(lines, "\n"))
	}
}
