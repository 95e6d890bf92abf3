//go:build !linux

package storetest

import "os/exec"

// configureChild has nothing to set outside Linux: there, an emulator can
// outlive a test process that dies without running its cleanups.
func configureChild(*exec.Cmd) {}
