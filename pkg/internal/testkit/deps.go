package testkit

import (
	"os/exec"
	"strings"
	"testing"
)

// Deps lists the packages a command or package links (go list -deps), so a
// test can hold a command to what it uses. It skips the test when the go
// tool is not on PATH.
func Deps(t testing.TB, pkg string) []string {
	t.Helper()
	if _, err := exec.LookPath("go"); err != nil {
		t.Skip("go tool not on PATH")
	}
	out, err := exec.Command("go", "list", "-deps", pkg).Output()
	if err != nil {
		t.Fatalf("go list -deps %s: %v", pkg, err)
	}
	return strings.Fields(string(out))
}
