package config

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/llmgw/llmgw/pkg/teamkey"
)

// Error is a config error. It says where the problem is, as a path and as
// a line and column in the document, and what is wrong, naming the value:
//
//	config gw.yaml: routes.fast.attempts: expected an integer, got string "three" (line 12, column 17)
//
// Every error of Parse, LoadFile and the SSM loader is an *Error, except
// failures to read the file.
type Error struct {
	// Source is the file or SSM parameter the error is in, when known.
	Source string
	// Path locates the value in the document; empty for the whole document.
	Path Path
	// Line and Column (1-based) locate the value, or the nearest enclosing
	// one when the value is missing (a required field). 0 when unknown;
	// YAML syntax errors have a line (the line at fault: see faultLine)
	// and no column, except at a tab in indentation.
	Line, Column int
	// Msg says what is wrong, naming the value.
	Msg string
	// OnKey marks errors about the mapping key at Path (an unknown field, a
	// key given twice) rather than about its value.
	OnKey bool
}

// Error formats the error as in the type's example.
func (e *Error) Error() string {
	var b strings.Builder
	b.WriteString("config")
	if e.Source != "" {
		b.WriteString(" " + e.Source)
	}
	b.WriteString(": ")
	if len(e.Path) > 0 {
		b.WriteString(e.Path.String() + ": ")
	}
	b.WriteString(e.Msg)
	switch {
	case e.Line > 0 && e.Column > 0:
		fmt.Fprintf(&b, " (line %d, column %d)", e.Line, e.Column)
	case e.Line > 0:
		fmt.Fprintf(&b, " (line %d)", e.Line)
	}
	return b.String()
}

// Path is a location in a config document: mapping keys (field names, or
// the names of providers, routes, teams...) and list indexes, written
// "[1]". Its String is routes.fast.targets[1].provider.
type Path []string

// String writes the path with dots between keys.
func (p Path) String() string {
	var b strings.Builder
	for i, e := range p {
		if i > 0 && !isIndex(e) {
			b.WriteByte('.')
		}
		b.WriteString(e)
	}
	return b.String()
}

// Key returns p followed by a mapping key (p is not modified).
func (p Path) Key(k string) Path { return append(p[:len(p):len(p)], k) }

// Index returns p followed by a list index (p is not modified).
func (p Path) Index(i int) Path { return p.Key("[" + strconv.Itoa(i) + "]") }

func isIndex(e string) bool {
	if len(e) < 3 || e[0] != '[' || e[len(e)-1] != ']' {
		return false
	}
	_, err := strconv.Atoi(e[1 : len(e)-1])
	return err == nil
}

// index returns the list index of a path element, or -1.
func index(e string) int {
	if !isIndex(e) {
		return -1
	}
	i, _ := strconv.Atoi(e[1 : len(e)-1])
	return i
}

// pathOf builds a path from keys (strings) and list indexes (ints).
func pathOf(elems ...any) Path {
	p := make(Path, 0, len(elems))
	for _, e := range elems {
		switch e := e.(type) {
		case int:
			p = p.Index(e)
		case string:
			p = append(p, e)
		case Path:
			p = append(p, e...)
		}
	}
	return p
}

// errAt returns an *Error at path, positioned later by Parse.
func errAt(p Path, format string, args ...any) *Error {
	return &Error{Path: p, Msg: fmt.Sprintf(format, args...)}
}

// show quotes a value from the document for a message: shortened when
// long, and never a team key (an operator may paste one in the wrong
// field).
func show(s string) string {
	if teamkey.LooksLikeKey(s) {
		return `"` + teamkey.Prefix + `…" (a team key? not shown)`
	}
	if r := []rune(s); len(r) > 60 {
		s = string(r[:57]) + "…"
	}
	return strconv.Quote(s)
}

// didYouMean returns `, did you mean "x"?` for the known name closest to
// name, or "" when none is close.
func didYouMean(name string, known []string) string {
	if s := suggest(name, known); s != "" {
		return fmt.Sprintf(", did you mean %q?", s)
	}
	return ""
}

// suggest returns the known name closest to name (edit distance, with
// transpositions, ignoring case), or "" when none is close enough to be
// what was meant.
func suggest(name string, known []string) string {
	best, bestD := "", 0
	limit := min(max(len(name)/4, 1), 3)
	for _, k := range known {
		if d := distance(strings.ToLower(name), strings.ToLower(k)); d <= limit && d < len(name) && (best == "" || d < bestD) {
			best, bestD = k, d
		}
	}
	return best
}

// distance is the optimal string alignment distance: insertions,
// deletions, substitutions and swaps of adjacent bytes each cost 1.
func distance(a, b string) int {
	if len(a) > 64 || len(b) > 64 {
		return 1 << 20 // not a typo of a field name
	}
	d := make([][]int, len(a)+1)
	for i := range d {
		d[i] = make([]int, len(b)+1)
		d[i][0] = i
	}
	for j := range d[0] {
		d[0][j] = j
	}
	for i := 1; i <= len(a); i++ {
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			d[i][j] = min(d[i-1][j]+1, d[i][j-1]+1, d[i-1][j-1]+cost)
			if i > 1 && j > 1 && a[i-1] == b[j-2] && a[i-2] == b[j-1] {
				d[i][j] = min(d[i][j], d[i-2][j-2]+1)
			}
		}
	}
	return d[len(a)][len(b)]
}

// oneOf validates an enumerated value: nil when v is allowed, else an
// error naming v, the closest allowed value and all of them.
func oneOf(p Path, what, v string, allowed ...string) *Error {
	for _, a := range allowed {
		if v == a {
			return nil
		}
	}
	return errAt(p, "unknown %s %s%s (want %s)", what, show(v), didYouMean(v, allowed), orList(allowed))
}

// orList writes "a, b or c".
func orList(s []string) string {
	if len(s) <= 1 {
		return strings.Join(s, "")
	}
	return strings.Join(s[:len(s)-1], ", ") + " or " + s[len(s)-1]
}
