package walkthrough

import (
	"bufio"
	"fmt"
	"os"
	"regexp"
	"strings"
	"testing"
)

// step is one command of a walkthrough block.
type step struct {
	line   int      // its first line in README.md
	cmd    string   // the command as written (continuations joined by newlines)
	want   []string // the #> lines after it
	server bool     // it starts the gateway
	skip   bool     // not run (the test command itself)
}

// block is one marked shell block.
type block struct {
	line        int // the line of its marker
	stopGateway bool
	steps       []step
}

var marker = regexp.MustCompile(`^<!-- walkthrough(: gateway stopped)? -->$`)

// readWalkthrough extracts the marked blocks of a README.
func readWalkthrough(path string) ([]block, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var lines []string
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		lines = append(lines, sc.Text())
	}
	if err := sc.Err(); err != nil {
		return nil, err
	}
	var blocks []block
	for i := 0; i < len(lines); i++ {
		m := marker.FindStringSubmatch(strings.TrimSpace(lines[i]))
		if m == nil {
			if strings.HasPrefix(strings.TrimSpace(lines[i]), "<!-- walkthrough") {
				return nil, fmt.Errorf("README.md:%d: unknown marker %q", i+1, lines[i])
			}
			continue
		}
		if i+1 >= len(lines) || strings.TrimSpace(lines[i+1]) != "```sh" {
			return nil, fmt.Errorf("README.md:%d: a walkthrough marker must be followed by a ```sh block", i+1)
		}
		b := block{line: i + 1, stopGateway: m[1] != ""}
		j := i + 2
		for ; j < len(lines) && strings.TrimSpace(lines[j]) != "```"; j++ {
		}
		if j == len(lines) {
			return nil, fmt.Errorf("README.md:%d: the block never ends", i+1)
		}
		steps, err := parseSteps(lines[i+2:j], i+3)
		if err != nil {
			return nil, err
		}
		b.steps = steps
		blocks = append(blocks, b)
		i = j
	}
	return blocks, nil
}

// parseSteps splits a block's lines (the first at README line first) into
// commands and their expected output.
func parseSteps(lines []string, first int) ([]step, error) {
	var steps []step
	for i := 0; i < len(lines); i++ {
		l := lines[i]
		t := strings.TrimSpace(l)
		switch {
		case strings.HasPrefix(t, "#>"):
			if len(steps) == 0 {
				return nil, fmt.Errorf("README.md:%d: expected output before any command", first+i)
			}
			s := &steps[len(steps)-1]
			s.want = append(s.want, strings.TrimPrefix(strings.TrimPrefix(l, "#>"), " "))
			continue
		case t == "" || strings.HasPrefix(t, "#"):
			continue
		}
		s := step{line: first + i, cmd: l}
		for strings.HasSuffix(lines[i], `\`) && i+1 < len(lines) {
			i++
			s.cmd += "\n" + lines[i]
		}
		s.server = strings.HasPrefix(t, "go run ./functions/gateway")
		s.skip = strings.HasPrefix(t, "./scripts/test.sh")
		steps = append(steps, s)
	}
	return steps, nil
}

// matchLine reports whether a line of output matches an expected line, in
// which "..." stands for any text.
func matchLine(pattern, line string) bool {
	parts := strings.Split(pattern, "...")
	if len(parts) == 1 {
		return pattern == line
	}
	if !strings.HasPrefix(line, parts[0]) {
		return false
	}
	line = line[len(parts[0]):]
	last := parts[len(parts)-1]
	for _, p := range parts[1 : len(parts)-1] {
		k := strings.Index(line, p)
		if k < 0 {
			return false
		}
		line = line[k+len(p):]
	}
	return strings.HasSuffix(line, last)
}

// missing returns the first expected line that the output does not show
// in order ("" when all are there). Lines are matched after their CR.
func missing(want []string, output string) string {
	lines := strings.Split(strings.ReplaceAll(output, "\r", ""), "\n")
	k := 0
	for _, w := range want {
		for k < len(lines) && !matchLine(w, lines[k]) {
			k++
		}
		if k == len(lines) {
			return w
		}
		k++
	}
	return ""
}

func TestMatchLine(t *testing.T) {
	for _, tc := range []struct {
		pattern, line string
		ok            bool
	}{
		{"HTTP/1.1 200 OK", "HTTP/1.1 200 OK", true},
		{"HTTP/1.1 200 OK", "HTTP/1.1 200 OK ", false},
		{`{"a":1,...,"z":2}`, `{"a":1,"b":3,"z":2}`, true},
		{`{"a":1,...,"z":2}`, `{"a":1,"z":3}`, false},
		{`data: {...,"x":1,...}`, `data: {"id":1,"x":1,"y":2}`, true},
		{`data: {...,"x":1,...}`, `data: {"id":1,"x":2}`, false},
		{"a...b...c", "abc", true},
		{"a...b...c", "acb", false},
		{"x ...", "x 0.1%", true},
	} {
		if got := matchLine(tc.pattern, tc.line); got != tc.ok {
			t.Errorf("matchLine(%q, %q) = %v", tc.pattern, tc.line, got)
		}
	}
	if m := missing([]string{"b", "d"}, "a\r\nb\r\nc\nd\n"); m != "" {
		t.Errorf("in order: missing %q", m)
	}
	if m := missing([]string{"d", "b"}, "a\nb\nc\nd\n"); m != "b" {
		t.Errorf("out of order: missing %q", m)
	}
}

func TestReadWalkthrough(t *testing.T) {
	steps, err := parseSteps([]string{
		"# a comment",
		`curl -s x \`,
		`  -d '{}'   # trailing comment`,
		"#> out 1",
		"#>   indented",
		"go run ./functions/gateway -config gw.yaml  # serve",
		"./scripts/test.sh",
	}, 10)
	if err != nil {
		t.Fatal(err)
	}
	if len(steps) != 3 || steps[0].line != 11 || steps[0].cmd != "curl -s x \\\n  -d '{}'   # trailing comment" ||
		len(steps[0].want) != 2 || steps[0].want[1] != "  indented" || !steps[1].server || !steps[2].skip {
		t.Errorf("steps %+v", steps)
	}
	if _, err := parseSteps([]string{"#> nothing before"}, 1); err == nil {
		t.Error("output before a command accepted")
	}
}
