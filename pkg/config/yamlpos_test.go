package config

import (
	"errors"
	"strings"
	"testing"
)

// A YAML indentation fault is reported at its line (yaml.v3 names the
// line where the enclosing block began: line 19 or earlier for all of
// these), and a tab in indentation is pointed at with a hint.
func TestYAMLIndentationErrorsPointAtTheFaultyLine(t *testing.T) {
	demo := strings.Split(string(DemoYAML()), "\n")
	cases := []struct {
		name, line20 string
		wantLine     int
		wantMsg      string
	}{
		{"a key indented less than its siblings", "   fake:", 20, "did not find expected key; line 20 is indented 3 spaces, line 19 above it 4"},
		{"a key indented more than its siblings", "      fake:", 20, "mapping values are not allowed in this context"},
		{"a tab in the indentation", "\tfake:", 20, "line 20 is indented with a tab: YAML indents with spaces only"},
		{"a key without its colon", "    fake", 20, "could not find expected ':'"},
	}
	if strings.TrimSpace(demo[19]) != "fake:" || !strings.HasPrefix(demo[19], "    fake:") {
		t.Fatalf("line 20 of the demo config is %q: adjust the cases", demo[19])
	}
	for _, tc := range cases {
		lines := append([]string(nil), demo...)
		lines[19] = tc.line20
		_, err := Parse([]byte(strings.Join(lines, "\n")))
		var e *Error
		if !errors.As(err, &e) || e.Line != tc.wantLine || !strings.Contains(e.Msg, tc.wantMsg) {
			t.Errorf("%s: %v, want line %d and %q", tc.name, err, tc.wantLine, tc.wantMsg)
		}
	}
	// The tab's column, on a line that parses (the fault is the next one).
	_, err := Parse([]byte("providers:\n  a:\n\t  kind: fake\n"))
	var e *Error
	if !errors.As(err, &e) || e.Line != 3 || e.Column != 1 || !strings.Contains(e.Msg, "indented with a tab") {
		t.Errorf("tab: %v (line %d, column %d)", err, e.Line, e.Column)
	}
}
