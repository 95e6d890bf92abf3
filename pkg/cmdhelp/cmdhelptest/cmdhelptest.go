// Package cmdhelptest runs a command's main in a child process from its
// tests, so they see what a shell sees: the exit status and both outputs.
//
//	func TestMain(m *testing.M) {
//		cmdhelptest.MainIfChild(main)
//		os.Exit(m.Run())
//	}
//
//	out, errOut, code := cmdhelptest.Run(t, "-h")
package cmdhelptest

import (
	"bytes"
	"encoding/json"
	"os"
	"os/exec"
	"regexp"
	"sort"
	"strings"
	"testing"
)

const argsVar = "CMDHELPTEST_ARGS"

// MainIfChild runs main, then exits 0, when the test binary was started
// by Run; otherwise it returns at once. Call it first in TestMain.
func MainIfChild(main func()) {
	js := os.Getenv(argsVar)
	if js == "" {
		return
	}
	var args []string
	if err := json.Unmarshal([]byte(js), &args); err != nil {
		panic(err)
	}
	os.Args = append([]string{os.Args[0]}, args...)
	main()
	os.Exit(0)
}

// Run runs the command (the test binary, through MainIfChild) with args
// and returns its standard output, standard error and exit status. env
// entries ("K=V") are added to the environment; AWS_LAMBDA_RUNTIME_API is
// removed, so the command runs locally.
func Run(t testing.TB, env []string, args ...string) (stdout, stderr string, code int) {
	t.Helper()
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	js, _ := json.Marshal(args)
	cmd := exec.Command(exe)
	for _, e := range os.Environ() {
		if !strings.HasPrefix(e, "AWS_LAMBDA_RUNTIME_API=") {
			cmd.Env = append(cmd.Env, e)
		}
	}
	cmd.Env = append(append(cmd.Env, env...), argsVar+"="+string(js))
	var o, e bytes.Buffer
	cmd.Stdout, cmd.Stderr = &o, &e
	err = cmd.Run()
	if x, ok := err.(*exec.ExitError); ok {
		return o.String(), e.String(), x.ExitCode()
	} else if err != nil {
		t.Fatal(err)
	}
	return o.String(), e.String(), 0
}

var envName = regexp.MustCompile(`\bLLMGW_[A-Z0-9_]*[A-Z0-9]\b`)

// EnvNames returns the LLMGW_* names that appear in the given Go files,
// or in the Go files (tests excluded) of the given directories, sorted:
// what a command's help must mention.
func EnvNames(t testing.TB, paths ...string) []string {
	t.Helper()
	set := map[string]bool{}
	for _, path := range paths {
		files := []string{path}
		if !strings.HasSuffix(path, ".go") {
			entries, err := os.ReadDir(path)
			if err != nil {
				t.Fatal(err)
			}
			files = files[:0]
			for _, f := range entries {
				if strings.HasSuffix(f.Name(), ".go") && !strings.HasSuffix(f.Name(), "_test.go") {
					files = append(files, path+"/"+f.Name())
				}
			}
		}
		for _, f := range files {
			b, err := os.ReadFile(f)
			if err != nil {
				t.Fatal(err)
			}
			for _, m := range envName.FindAllString(string(b), -1) {
				set[m] = true
			}
		}
	}
	names := make([]string, 0, len(set))
	for n := range set {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}

// CheckHelp runs the command with each of -h, -help and --help and checks
// that it exits 0, prints nothing on standard error, and prints every one
// of want. It returns the help.
func CheckHelp(t testing.TB, want ...string) string {
	t.Helper()
	var help string
	for _, h := range []string{"-h", "-help", "--help"} {
		out, errOut, code := Run(t, nil, h)
		if code != 0 || errOut != "" {
			t.Fatalf("%s: exit %d, stderr %q", h, code, errOut)
		}
		for _, w := range want {
			if !strings.Contains(out, w) {
				t.Errorf("%s: the help does not mention %q:\n%s", h, w, out)
			}
		}
		help = out
	}
	return help
}
