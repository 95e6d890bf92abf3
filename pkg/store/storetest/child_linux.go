package storetest

import (
	"os/exec"
	"syscall"
)

// configureChild makes the kernel kill the emulator if the test process dies
// without running its cleanups (e.g. a `go test -timeout` panic).
func configureChild(cmd *exec.Cmd) {
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
}
