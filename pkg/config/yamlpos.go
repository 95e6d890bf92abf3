package config

import (
	"bytes"
	"fmt"
	"strconv"
	"strings"

	"go.yaml.in/yaml/v3"
)

// blockProblems are yaml.v3's errors about the block structure (indentation)
// of a document. For them yaml.v3 reports the line where the enclosing
// block began (its context mark), not the line at fault: faultLine finds
// that line instead.
var blockProblems = map[string]bool{
	"did not find expected key": true, "did not find expected '-' indicator": true,
	"mapping values are not allowed in this context":         true,
	"block sequence entries are not allowed in this context": true,
	"found a tab character that violates indentation":        true,
	"found character that cannot start any token":            true,
	"could not find expected ':'":                            true,
	"did not find expected node content":                     true,
}

// maxFaultSearch bounds faultLine's work: it parses the document's first
// lines once per line, so only documents up to this many lines are searched.
const maxFaultSearch = 2000

// faultLine returns the line (1-based) at which a YAML document first fails
// with problem: the shortest run of whole lines from the top that fails the
// same way ends at the line at fault. 0 when it cannot tell (the problem is
// not about block structure, or the document is too long).
func faultLine(b []byte, problem string) int {
	if !blockProblems[problem] {
		return 0
	}
	lines := bytes.SplitAfter(b, []byte("\n"))
	if len(lines) > maxFaultSearch {
		return 0
	}
	n := 0
	for k := range lines {
		n += len(lines[k])
		var v any
		err := yaml.Unmarshal(b[:n], &v)
		if err == nil {
			continue
		}
		msg := strings.TrimPrefix(err.Error(), "yaml: ")
		if _, rest, ok := cutLine(msg); ok {
			msg = rest
		}
		if msg == problem {
			return k + 1
		}
	}
	return 0
}

// tabHint returns the first line (1-based) whose indentation holds a tab,
// and the column of that tab; 0 when none does.
func tabHint(b []byte) (line, col int) {
	for i, l := range bytes.Split(b, []byte("\n")) {
		indent := l[:len(l)-len(bytes.TrimLeft(l, " \t"))]
		if j := bytes.IndexByte(indent, '\t'); j >= 0 {
			return i + 1, j + 1
		}
	}
	return 0, 0
}

// positionSyntaxError corrects the line of a YAML syntax error to the line
// at fault, and, when a line is indented with a tab, points at that tab
// and says YAML indents with spaces only.
func positionSyntaxError(b []byte, e *Error, problem string) {
	if l := faultLine(b, problem); l > 0 {
		e.Line = l
		e.Msg += indentNote(b, l)
	}
	if tl, tc := tabHint(b); tl > 0 && (strings.Contains(problem, "tab") || tl <= e.Line || e.Line == 0) {
		e.Line, e.Column = tl, tc
		e.Msg += "; line " + strconv.Itoa(tl) + " is indented with a tab: YAML indents with spaces only"
	}
}

// indentNote compares the indentation of line l with that of the line of
// content above it, the usual pair to look at when the block structure is
// wrong: "; line 9 is indented 4 spaces, line 8 above it 5".
func indentNote(b []byte, l int) string {
	lines := bytes.Split(b, []byte("\n"))
	indent := func(x []byte) int { return len(x) - len(bytes.TrimLeft(x, " ")) }
	for p := l - 2; p >= 0 && l-1 < len(lines); p-- {
		t := bytes.TrimSpace(lines[p])
		if len(t) == 0 || t[0] == '#' {
			continue
		}
		a, c := indent(lines[l-1]), indent(lines[p])
		// Equal indentation, a line deeper than the "key:" that opens its
		// block, or a fault inside a flow collection ([...] or {...}) says
		// nothing about indentation.
		if a == c || a > c && bytes.HasSuffix(t, []byte(":")) || bytes.ContainsAny(lines[l-1], "[{") {
			return ""
		}
		return fmt.Sprintf("; line %d is indented %d spaces, line %d above it %d", l, a, p+1, c)
	}
	return ""
}
