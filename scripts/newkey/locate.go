package main

import "strings"

// location is where a team's keys are, as line indexes (-1: absent).
type location struct {
	teams     int      // the top-level teams: line
	ci        int      // indentation of the teams (names)
	team      int      // the team's line
	tci       int      // indentation of the team's fields
	teamLast  int      // the team's last content line
	keys      int      // the team's keys: line
	flow      bool     // keys: [...] on one line
	itemLast  int      // last line of a block keys list
	itemIndex int      // indentation of its "- " items
	admin     int      // the team's admin: line
	ids       []string // the team's key ids
	last      int      // last content line of the teams block
}

// isKeyLine reports whether a top-level line starts a block mapping entry
// ("name:" or "name: value"), as opposed to JSON, a list or flow style.
func isKeyLine(l string) bool {
	if l == "" || strings.IndexByte("-[]{}?:,&*!|>%@`# ", l[0]) >= 0 {
		return false
	}
	t := strings.TrimSpace(stripComment(l))
	return strings.HasSuffix(t, ":") || strings.Contains(t, ": ")
}

// isDocMark reports a document marker line, --- or ...
func isDocMark(l string) bool {
	for _, m := range []string{"---", "..."} {
		if rest, ok := strings.CutPrefix(l, m); ok && (rest == "" || rest[0] == ' ') {
			return true
		}
	}
	return false
}

func indentOf(l string) int { return len(l) - len(strings.TrimLeft(l, " ")) }

func isContent(l string) bool {
	t := strings.TrimSpace(l)
	return t != "" && !strings.HasPrefix(t, "#")
}

// keyLine matches "<indent spaces>name:" (name plain or quoted) and
// returns what follows the colon, without a comment, and where it starts.
func keyLine(l string, indent int, name string) (rest string, at int, ok bool) {
	if indentOf(l) != indent {
		return "", 0, false
	}
	s := l[indent:]
	for _, n := range []string{name, `"` + name + `"`, `'` + name + `'`} {
		if after, found := strings.CutPrefix(s, n); found {
			t := strings.TrimLeft(after, " ")
			if strings.HasPrefix(t, ":") && (len(t) == 1 || t[1] == ' ') {
				at = len(l) - len(t) + 1
				return strings.TrimSpace(stripComment(l[at:])), at, true
			}
		}
	}
	return "", 0, false
}

// stripComment cuts a " #" comment that is not inside quotes.
func stripComment(s string) string {
	var quote byte
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case quote != 0:
			if c == quote {
				quote = 0
			}
		case c == '"' || c == '\'':
			quote = c
		case c == '#' && (i == 0 || s[i-1] == ' '):
			return s[:i]
		}
	}
	return s
}

// blockEnd is the first line after start, indented at most parent, that
// holds content: the end of start's block.
func (f *file) blockEnd(start, parent int) int {
	for j := start + 1; j < len(f.lines); j++ {
		if isContent(f.lines[j]) && indentOf(f.lines[j]) <= parent {
			return j
		}
	}
	return len(f.lines)
}

// lastContent is the last content line in (start, end), else start.
func (f *file) lastContent(start, end int) int {
	last := start
	for j := start + 1; j < end; j++ {
		if isContent(f.lines[j]) {
			last = j
		}
	}
	return last
}

// firstIndent is the indentation of the first content line in (start,
// end), or -1.
func (f *file) firstIndent(start, end int) (int, int) {
	for j := start + 1; j < end; j++ {
		if isContent(f.lines[j]) {
			return indentOf(f.lines[j]), j
		}
	}
	return -1, -1
}

func emptyValue(rest string) bool { return rest == "" || rest == "{}" || rest == "~" || rest == "null" }

// locate finds team's entry and keys, refusing layouts it cannot edit.
func (f *file) locate(team string) (*location, error) {
	loc := &location{teams: -1, team: -1, keys: -1, admin: -1}
	first := true
	for i, l := range f.lines {
		if !isContent(l) {
			continue
		}
		if isDocMark(l) {
			if first && strings.HasPrefix(l, "---") {
				continue
			}
			return nil, refusal(i, "the file holds several YAML documents")
		}
		if first && !isKeyLine(l) {
			return nil, refusal(i, "the file is not a block-style YAML mapping (JSON?)")
		}
		first = false
		if rest, _, ok := keyLine(l, 0, "teams"); ok {
			if loc.teams >= 0 {
				return nil, refusal(i, "teams: appears twice")
			}
			if !emptyValue(rest) {
				return nil, refusal(i, "teams: is written as %q, not as a block", rest)
			}
			loc.teams = i
		}
	}
	if loc.teams < 0 {
		return loc, nil
	}
	end := f.blockEnd(loc.teams, 0)
	loc.last = f.lastContent(loc.teams, end)
	ci, _ := f.firstIndent(loc.teams, end)
	loc.ci = ci
	for j := loc.teams + 1; j < end && ci > 0; j++ {
		l := f.lines[j]
		if !isContent(l) || indentOf(l) > ci {
			continue
		}
		if indentOf(l) < ci || strings.HasPrefix(strings.TrimSpace(l), "-") || strings.HasPrefix(strings.TrimSpace(l), "<<") {
			return nil, refusal(j, "unexpected layout under teams:")
		}
		if rest, _, ok := keyLine(l, ci, team); ok {
			if !emptyValue(rest) {
				return nil, refusal(j, "team %s is written as %q, not as a block", team, rest)
			}
			loc.team = j
		}
	}
	if loc.team < 0 {
		return loc, nil
	}
	tend := f.blockEnd(loc.team, ci)
	loc.teamLast = f.lastContent(loc.team, tend)
	loc.tci, _ = f.firstIndent(loc.team, tend)
	for j := loc.team + 1; j < tend && loc.tci > 0; j++ {
		l := f.lines[j]
		if !isContent(l) || indentOf(l) > loc.tci {
			continue
		}
		if indentOf(l) < loc.tci || strings.HasPrefix(strings.TrimSpace(l), "<<") {
			return nil, refusal(j, "unexpected layout under team %s", team)
		}
		if _, _, ok := keyLine(l, loc.tci, "admin"); ok {
			loc.admin = j
		}
		rest, _, ok := keyLine(l, loc.tci, "keys")
		if !ok {
			continue
		}
		loc.keys = j
		switch {
		case emptyValue(rest) || rest == "[]":
			loc.itemLast, loc.itemIndex = j, -1
			for k := j + 1; k < tend; k++ {
				t := strings.TrimSpace(f.lines[k])
				if !isContent(f.lines[k]) {
					continue
				}
				ind := indentOf(f.lines[k])
				if ind < loc.tci || ind == loc.tci && !strings.HasPrefix(t, "- ") {
					break
				}
				if loc.itemIndex < 0 {
					if !strings.HasPrefix(t, "- ") {
						return nil, refusal(k, "keys: of team %s is not a list of \"- \" items", team)
					}
					loc.itemIndex = ind
				}
				loc.itemLast = k
				loc.ids = append(loc.ids, idsIn(t)...)
			}
			if rest == "[]" && loc.itemIndex >= 0 {
				return nil, refusal(j, "keys: [] is followed by items")
			}
		case flowList(rest):
			loc.flow = true
			loc.ids = idsIn(rest)
		default:
			return nil, refusal(j, "keys: of team %s is written as %q, which newkey does not edit", team, rest)
		}
	}
	return loc, nil
}

// idsIn returns the values of the "id:" fields in s.
func idsIn(s string) []string {
	var ids []string
	for i := 0; i+2 <= len(s); i++ {
		if s[i:i+2] != "id" || i > 0 && strings.IndexByte(" \t{,", s[i-1]) < 0 {
			continue
		}
		rest := strings.TrimLeft(s[i+2:], " ")
		if !strings.HasPrefix(rest, ":") {
			continue
		}
		rest = strings.TrimLeft(rest[1:], " \"'")
		n := 0
		for n < len(rest) && (isNameByte(rest[n])) {
			n++
		}
		if n > 0 {
			ids = append(ids, rest[:n])
		}
	}
	return ids
}

func isNameByte(c byte) bool {
	return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '-' || c == '_' || c == '.'
}

// flowList reports whether s is one complete flow list "[...]" on one
// line: brackets balanced outside quotes, the first closing at the end.
func flowList(s string) bool {
	if !strings.HasPrefix(s, "[") || !strings.HasSuffix(s, "]") {
		return false
	}
	depth := 0
	var quote byte
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case quote != 0:
			if c == quote {
				quote = 0
			}
		case c == '"' || c == '\'':
			quote = c
		case c == '[' || c == '{':
			depth++
		case c == ']' || c == '}':
			depth--
			if depth == 0 && i != len(s)-1 {
				return false
			}
		}
	}
	return depth == 0 && quote == 0
}

func contains(ss []string, s string) bool {
	for _, x := range ss {
		if x == s {
			return true
		}
	}
	return false
}
