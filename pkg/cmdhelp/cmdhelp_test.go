package cmdhelp

import (
	"bytes"
	"errors"
	"flag"
	"strings"
	"testing"
)

func TestParseHelpBadFlagAndExitCodes(t *testing.T) {
	c := Command{Name: "tool", Short: "does a thing", Synopsis: "tool [-n N]", About: "Does a thing.\n\nWell.",
		Modes: "Local only.", Env: []Env{{Name: "LLMGW_X", About: "the x"}}, Examples: "tool -n 2"}
	newFS := func() (*flag.FlagSet, *int) {
		fs := flag.NewFlagSet("x", flag.ExitOnError) // Parse makes it ContinueOnError
		return fs, fs.Int("n", 1, "how many")
	}
	for _, h := range []string{"-h", "-help", "--help"} {
		fs, _ := newFS()
		var out bytes.Buffer
		err := c.Parse(fs, []string{h}, &out)
		if !errors.Is(err, flag.ErrHelp) || ExitCode(err) != 0 {
			t.Fatalf("%s: %v (exit %d)", h, err, ExitCode(err))
		}
		for _, want := range []string{"tool - does a thing\n", "Usage:\n  tool [-n N]\n", "Description:\n  Does a thing.\n\n  Well.\n",
			"Modes:\n  Local only.\n", "Flags:\n  -n int\n", "how many (default 1)", "Environment:\n  LLMGW_X\n    the x\n", "Examples:\n  tool -n 2\n"} {
			if !strings.Contains(out.String(), want) {
				t.Errorf("%s: help lacks %q:\n%s", h, want, out.String())
			}
		}
	}
	fs, n := newFS()
	var out bytes.Buffer
	if err := c.Parse(fs, []string{"-n", "3"}, &out); err != nil || *n != 3 || out.Len() != 0 {
		t.Fatalf("flags: %v %d %q", err, *n, out.String())
	}
	fs, _ = newFS()
	err := c.Parse(fs, []string{"-m"}, &out)
	if err == nil || ExitCode(err) != 2 || !strings.Contains(err.Error(), "-m") || !strings.Contains(err.Error(), "tool -h") || out.Len() != 0 {
		t.Fatalf("bad flag: %v (exit %d), printed %q", err, ExitCode(err), out.String())
	}
	if ExitCode(nil) != 0 || ExitCode(errors.New("boom")) != 1 || ExitCode(Usagef("bad %d", 1)) != 2 {
		t.Fatal("ExitCode")
	}
	var none bytes.Buffer
	(&Command{Name: "bare", Short: "s"}).Write(&none, flag.NewFlagSet("bare", flag.ContinueOnError))
	if !strings.Contains(none.String(), "Flags: none") || !strings.Contains(none.String(), "Environment: reads no LLMGW_*") {
		t.Fatalf("bare help:\n%s", none.String())
	}
}
