package walkthrough

import (
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"
)

// goRun finds the packages a command runs with `go run ./PKG`.
var goRun = regexp.MustCompile(`\bgo run (\./[A-Za-z0-9_/]+)`)

// goWrapper is the `go` the walkthrough finds first on its PATH.
const goWrapper = `#!/usr/bin/env bash
# go run ./PKG ARGS...: the binary the test built from PKG; any other go
# command: the real go, in the repository.
if [ "${1:-}" = run ] && [ "${2#./}" != "${2:-}" ] && [ -x "$WALK_BIN/${2##*/}" ]; then
	prog="$WALK_BIN/${2##*/}"
	shift 2
	exec "$prog" "$@"
fi
cd "$WALK_REPO" && exec "$WALK_GO" "$@"
`

// scriptHead defines how the generated script runs the gateway.
const scriptHead = `gw_pid=
stop_gateway() {
	[ -n "$gw_pid" ] || return 0
	kill "$gw_pid" 2>/dev/null
	wait "$gw_pid" 2>/dev/null
	gw_pid=
}
trap stop_gateway EXIT
# start_gateway LOG CMD...: CMD in the background (a second terminal);
# returns once it answers /healthz.
start_gateway() {
	local log=$1
	shift
	stop_gateway
	"$@" >"$log" 2>&1 &
	gw_pid=$!
	for _ in $(seq 300); do
		curl -s -o /dev/null "http://127.0.0.1:$PORT/healthz" && return 0
		kill -0 "$gw_pid" 2>/dev/null || return 1
		sleep 0.1
	done
	return 1
}
`

// TestREADMEWalkthrough runs the README's marked blocks (see the package
// doc) and checks every command's exit status and stated output.
func TestREADMEWalkthrough(t *testing.T) {
	for _, tool := range []string{"bash", "curl"} {
		if _, err := exec.LookPath(tool); err != nil {
			t.Fatalf("the README's commands need %s (see Requirements): %v", tool, err)
		}
	}
	realGo, err := exec.LookPath("go")
	if err != nil {
		t.Fatalf("go: %v", err)
	}
	repo, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	blocks, err := readWalkthrough(filepath.Join(repo, "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	if len(blocks) < 5 {
		t.Fatalf("README.md has %d walkthrough blocks; the markers are missing", len(blocks))
	}

	bin, work, tmp, out := t.TempDir(), t.TempDir(), t.TempDir(), t.TempDir()
	build(t, repo, bin, blocks)
	if err := os.WriteFile(filepath.Join(bin, "go"), []byte(goWrapper), 0o755); err != nil {
		t.Fatal(err)
	}
	for _, d := range []string{"pkg", "events", "scripts", "functions"} {
		if err := os.Symlink(filepath.Join(repo, d), filepath.Join(work, d)); err != nil {
			t.Fatal(err)
		}
	}
	port := freePort(t)
	script := filepath.Join(out, "walkthrough.sh")
	if err := os.WriteFile(script, []byte(generate(t, blocks, port, out)), 0o644); err != nil {
		t.Fatal(err)
	}

	timeout := 4 * time.Minute
	if d, ok := t.Deadline(); ok && time.Until(d)-10*time.Second < timeout {
		timeout = time.Until(d) - 10*time.Second
	}
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, "bash", script)
	cmd.Dir = work
	cmd.Env = environment(bin, repo, realGo, tmp)
	start := time.Now()
	if b, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("the walkthrough script failed after %v: %v\n%s", time.Since(start).Round(time.Second), err, b)
	}
	t.Logf("walkthrough ran in %v", time.Since(start).Round(100*time.Millisecond))
	check(t, blocks, out)

	left, _ := os.ReadDir(tmp)
	for _, e := range left {
		t.Errorf("left in the temp dir: %s", e.Name())
	}
}

// build compiles, once, every package the walkthrough runs with go run
// (and invoke-local.sh does).
func build(t *testing.T, repo, bin string, blocks []block) {
	t.Helper()
	var pkgs []string
	add := func(text string) {
		for _, m := range goRun.FindAllStringSubmatch(text, -1) {
			if !slices.Contains(pkgs, m[1]) {
				pkgs = append(pkgs, m[1])
			}
		}
	}
	for _, b := range blocks {
		for _, s := range b.steps {
			add(s.cmd)
			if strings.Contains(s.cmd, "invoke-local.sh") {
				sh, err := os.ReadFile(filepath.Join(repo, "scripts", "invoke-local.sh"))
				if err != nil {
					t.Fatal(err)
				}
				add(string(sh))
			}
		}
	}
	start := time.Now()
	cmd := exec.Command("go", append([]string{"build", "-o", bin + string(os.PathSeparator)}, pkgs...)...)
	cmd.Dir = repo
	if b, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("go build %v: %v\n%s", pkgs, err, b)
	}
	t.Logf("built %v in %v", pkgs, time.Since(start).Round(100*time.Millisecond))
}

// generate writes the bash script of the walkthrough: each command's
// output goes to out/N.out and its exit status to out/N.rc.
func generate(t *testing.T, blocks []block, port int, out string) string {
	t.Helper()
	addr := "127.0.0.1:" + strconv.Itoa(port)
	var b strings.Builder
	fmt.Fprintf(&b, "PORT=%d\nOUT=%q\n%s", port, out, scriptHead)
	n := 0
	for _, bl := range blocks {
		if bl.stopGateway {
			fmt.Fprintf(&b, "\n# README.md:%d: the gateway is stopped (Ctrl-C)\nstop_gateway\n", bl.line)
		}
		for _, s := range bl.steps {
			n++
			if s.skip {
				continue
			}
			cmd := strings.ReplaceAll(s.cmd, "127.0.0.1:8080", addr)
			if strings.Contains(cmd, "8080") {
				t.Errorf("README.md:%d: the command reaches port 8080 other than as 127.0.0.1:8080: %s", s.line, s.cmd)
			}
			fmt.Fprintf(&b, "\n# step %d, README.md:%d\n", n, s.line)
			if s.server {
				line, _, _ := strings.Cut(cmd, " #")
				fmt.Fprintf(&b, "start_gateway \"$OUT/%d.out\" %s -addr %s\necho $? >\"$OUT/%d.rc\"\n", n, strings.TrimSpace(line), addr, n)
				continue
			}
			fmt.Fprintf(&b, "{\n%s\n} >\"$OUT/%d.out\" 2>&1 </dev/null\necho $? >\"$OUT/%d.rc\"\n", cmd, n, n)
		}
	}
	return b.String()
}

// check compares every step's exit status and output with the README.
func check(t *testing.T, blocks []block, out string) {
	t.Helper()
	n := 0
	for _, bl := range blocks {
		for _, s := range bl.steps {
			n++
			if s.skip {
				continue
			}
			rc, _ := os.ReadFile(filepath.Join(out, strconv.Itoa(n)+".rc"))
			output, _ := os.ReadFile(filepath.Join(out, strconv.Itoa(n)+".out"))
			shown := string(output)
			if len(shown) > 4000 {
				shown = shown[:2000] + "\n[...]\n" + shown[len(shown)-2000:]
			}
			if code := strings.TrimSpace(string(rc)); code != "0" {
				t.Errorf("README.md:%d: exit status %q:\n%s\noutput:\n%s", s.line, code, s.cmd, shown)
				continue
			}
			if s.server {
				continue
			}
			if m := missing(s.want, string(output)); m != "" {
				t.Errorf("README.md:%d: the output has no line matching\n  #> %s\n(after the lines before it) for\n%s\noutput:\n%s", s.line, m, s.cmd, shown)
			}
		}
	}
}

// environment is the walkthrough's environment: the developer's, less any
// LLMGW_* variable, with the go wrapper first on PATH and a temp dir of
// its own.
func environment(bin, repo, realGo, tmp string) []string {
	var env []string
	for _, e := range os.Environ() {
		if strings.HasPrefix(e, "LLMGW_") || strings.HasPrefix(e, "PATH=") || strings.HasPrefix(e, "TMPDIR=") {
			continue
		}
		env = append(env, e)
	}
	return append(env, "PATH="+bin+string(os.PathListSeparator)+os.Getenv("PATH"), "TMPDIR="+tmp,
		"WALK_BIN="+bin, "WALK_REPO="+repo, "WALK_GO="+realGo)
}

// freePort returns a loopback port that was free a moment ago.
func freePort(t *testing.T) int {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}
