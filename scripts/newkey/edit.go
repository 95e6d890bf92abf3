package main

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

// The config file is edited as text, conservatively: newkey has no YAML
// library (it would cost it 70 packages), and a text edit keeps the
// file's comments and layout. It understands the block style of the
// README and the demo config:
//
//	teams:
//	  search:
//	    keys:
//	      - {id: k1, sha256: "..."}
//	    # or, on one line: keys: [{id: k1, sha256: "..."}]
//
// and refuses anything else (JSON, teams: or a team in flow style {...},
// several documents, tabs) with an error saying what to do instead.

// addKeyToFile adds {id, sha256: sum} to team's keys in the config file at
// path, creating the team (and teams:) when missing. id "" picks the first
// of k1, k2, ... the team does not have. It returns the id used.
func addKeyToFile(path, team, id, sum string, admin bool) (string, error) {
	src, err := os.ReadFile(path)
	if err != nil {
		return "", err
	}
	out, id, err := addKey(src, team, id, sum, admin)
	if err != nil {
		return "", fmt.Errorf("%s: %w", path, err)
	}
	mode := os.FileMode(0o644)
	if st, err := os.Stat(path); err == nil {
		mode = st.Mode().Perm()
	}
	tmp, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".newkey-*")
	if err != nil {
		return "", err
	}
	defer os.Remove(tmp.Name())
	if _, err := tmp.Write(out); err != nil {
		tmp.Close()
		return "", err
	}
	if err := tmp.Chmod(mode); err != nil {
		tmp.Close()
		return "", err
	}
	if err := tmp.Close(); err != nil {
		return "", err
	}
	return id, os.Rename(tmp.Name(), path)
}

// refusal explains a layout newkey does not edit.
func refusal(line int, format string, args ...any) error {
	msg := fmt.Sprintf(format, args...)
	if line >= 0 {
		msg = fmt.Sprintf("line %d: %s", line+1, msg)
	}
	return errors.New(msg + "; newkey edits block-style YAML only (see newkey -h): add the entry by hand, or run newkey without -config to print it")
}

// addKey is addKeyToFile on the file's text.
func addKey(src []byte, team, id, sum string, admin bool) ([]byte, string, error) {
	f, err := splitLines(src)
	if err != nil {
		return nil, "", err
	}
	loc, err := f.locate(team)
	if err != nil {
		return nil, "", err
	}
	if id == "" {
		for n := 1; ; n++ {
			if id = "k" + strconv.Itoa(n); !contains(loc.ids, id) {
				break
			}
		}
	} else if contains(loc.ids, id) {
		return nil, "", fmt.Errorf("team %s already has a key with id %s: pick another -id", team, id)
	}
	entry := fmt.Sprintf(`{id: %s, sha256: "%s"}`, id, sum)
	if err := f.insert(loc, team, entry, admin); err != nil {
		return nil, "", err
	}
	// Read the result back the same way: the new key must be where the
	// gateway will look for it.
	if again, err := f.locate(team); err != nil || !contains(again.ids, id) || again.team < 0 {
		return nil, "", fmt.Errorf("internal error: the edited file does not read back (%v); the file was not changed", err)
	}
	return f.bytes(), id, nil
}

// file is a config file as lines.
type file struct {
	lines []string
	nl    string // "\n" or "\r\n"
}

func splitLines(src []byte) (*file, error) {
	s := string(src)
	f := &file{nl: "\n"}
	if strings.Contains(s, "\r\n") {
		f.nl = "\r\n"
		s = strings.ReplaceAll(s, "\r\n", "\n")
	}
	s = strings.TrimSuffix(s, "\n")
	if s != "" {
		f.lines = strings.Split(s, "\n")
	}
	for i, l := range f.lines {
		if ws := l[:len(l)-len(strings.TrimLeft(l, " \t"))]; strings.Contains(ws, "\t") {
			return nil, refusal(i, "indented with a tab")
		}
	}
	return f, nil
}

func (f *file) bytes() []byte {
	if len(f.lines) == 0 {
		return nil
	}
	return []byte(strings.Join(f.lines, f.nl) + f.nl)
}

func (f *file) insertAt(i int, lines ...string) {
	f.lines = append(f.lines[:i], append(lines, f.lines[i:]...)...)
}

// insert writes the entry where locate found the team's keys.
func (f *file) insert(loc *location, team, entry string, makeAdmin bool) error {
	sp := func(n int) string { return strings.Repeat(" ", n) }
	newTeam := func(ci, unit int) []string {
		l := []string{sp(ci) + team + ":", sp(ci+unit) + "keys:", sp(ci+2*unit) + "- " + entry}
		if makeAdmin {
			l = append(l, sp(ci+unit)+"admin: true")
		}
		return l
	}
	switch {
	case loc.teams < 0:
		f.lines = append(f.lines, append([]string{"teams:"}, newTeam(2, 2)...)...)
		return nil
	case loc.ci <= 0: // teams: with nothing under it
		f.lines[loc.teams] = "teams:" + comment(f.lines[loc.teams])
		f.insertAt(loc.teams+1, newTeam(2, 2)...)
		return nil
	case loc.team < 0:
		f.insertAt(loc.last+1, newTeam(loc.ci, loc.ci)...)
		return nil
	}
	if makeAdmin && loc.admin >= 0 {
		if rest, _, _ := keyLine(f.lines[loc.admin], loc.tci, "admin"); rest != "true" {
			return refusal(loc.admin, "team %s has admin: %s; -admin will not change it", team, rest)
		}
		makeAdmin = false
	}
	tci := loc.tci
	if tci <= loc.ci {
		tci = loc.ci + loc.ci
	}
	unit := tci - loc.ci
	switch {
	case loc.keys < 0:
		f.insertAt(loc.teamLast+1, sp(tci)+"keys:", sp(tci+unit)+"- "+entry)
	case loc.flow:
		l := f.lines[loc.keys]
		rest, at, _ := keyLine(l, tci, "keys")
		inner := strings.TrimSpace(rest[1 : len(rest)-1])
		sep := ", "
		if inner == "" {
			sep = ""
		}
		f.lines[loc.keys] = l[:at] + " [" + inner + sep + entry + "]" + comment(l[at:])
	default:
		ii := loc.itemIndex
		if ii < 0 {
			ii = tci + unit
			f.lines[loc.keys] = sp(tci) + "keys:" + comment(f.lines[loc.keys])
		}
		f.insertAt(loc.itemLast+1, sp(ii)+"- "+entry)
	}
	if makeAdmin {
		f.insertAt(loc.team+1, sp(tci)+"admin: true")
	}
	if rest, _, _ := keyLine(f.lines[loc.team], loc.ci, team); rest != "" { // team: {} becomes a block
		f.lines[loc.team] = sp(loc.ci) + team + ":" + comment(f.lines[loc.team])
	}
	return nil
}

// comment returns the " # ..." comment of a line, or "".
func comment(l string) string {
	if c := strings.TrimPrefix(l, stripComment(l)); c != "" {
		return " " + c
	}
	return ""
}
