// Package cmdhelp gives every command of the repository the same -h: what
// the command does, how it runs (locally, on Lambda), every flag, the
// environment variables it reads and examples, printed on standard output
// with exit status 0. It uses the standard library only, so that small
// tools stay small.
package cmdhelp

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"strings"
)

// Command describes a command for its help.
type Command struct {
	// Name is the command's name, e.g. "newkey".
	Name string
	// Short says what it does in a line, without a final period.
	Short string
	// Synopsis is how it is invoked, one line per form.
	Synopsis string
	// About says what it does: paragraphs of plain text.
	About string
	// Modes says how it runs (locally, on Lambda), when there is more than
	// one way or the way is not obvious.
	Modes string
	// Env lists the environment variables the command reads.
	Env []Env
	// Examples are shell lines, with comments.
	Examples string
}

// Env is one environment variable a command reads.
type Env struct {
	Name  string // e.g. LLMGW_TABLE
	About string // what it is for, and its default
}

// Write prints the help of c, with the flags of fs.
func (c *Command) Write(w io.Writer, fs *flag.FlagSet) {
	section := func(title, body string) {
		if body = strings.TrimSpace(body); body != "" {
			fmt.Fprintf(w, "\n%s:\n%s\n", title, indent(body))
		}
	}
	fmt.Fprintf(w, "%s - %s\n", c.Name, c.Short)
	section("Usage", c.Synopsis)
	section("Description", c.About)
	section("Modes", c.Modes)
	var flags strings.Builder
	if fs != nil {
		out := fs.Output()
		fs.SetOutput(&flags)
		fs.PrintDefaults()
		fs.SetOutput(out)
	}
	if flags.Len() > 0 {
		fmt.Fprintf(w, "\nFlags:\n%s", flags.String())
	} else {
		fmt.Fprintf(w, "\nFlags: none (besides -h)\n")
	}
	if len(c.Env) == 0 {
		fmt.Fprintf(w, "\nEnvironment: reads no LLMGW_* variables.\n")
	} else {
		fmt.Fprintf(w, "\nEnvironment:\n")
		for _, e := range c.Env {
			fmt.Fprintf(w, "  %s\n%s\n", e.Name, indent(indent(e.About)))
		}
	}
	section("Examples", c.Examples)
}

// Parse parses args into fs. On -h, -help or --help it prints the help on
// out and returns flag.ErrHelp, on which the caller exits with status 0
// (see ExitCode). A bad flag returns an error naming it and pointing at
// -h; nothing is printed then, the caller reports the error.
func (c *Command) Parse(fs *flag.FlagSet, args []string, out io.Writer) error {
	fs.Init(c.Name, flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	fs.Usage = func() {}
	err := fs.Parse(args)
	fs.SetOutput(out)
	switch {
	case errors.Is(err, flag.ErrHelp):
		c.Write(out, fs)
		return flag.ErrHelp
	case err != nil:
		return Usagef("%v (run %s -h for help)", err, c.Name)
	}
	return nil
}

// ExitCode is the exit status for the error of a command's run: 0 for
// nil and for flag.ErrHelp (help was asked for and printed), else 2 for a
// usage error and 1 for any other failure.
func ExitCode(err error) int {
	var u usageError
	switch {
	case err == nil, errors.Is(err, flag.ErrHelp):
		return 0
	case errors.As(err, &u):
		return 2
	}
	return 1
}

// Usagef returns a usage error (ExitCode 2): a bad flag or argument.
func Usagef(format string, args ...any) error { return usageError{fmt.Errorf(format, args...)} }

type usageError struct{ error }

// Unwrap returns the error itself.
func (u usageError) Unwrap() error { return u.error }

func indent(s string) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	for i, l := range lines {
		if l != "" {
			lines[i] = "  " + l
		}
	}
	return strings.Join(lines, "\n")
}
