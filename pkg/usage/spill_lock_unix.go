//go:build unix

package usage

import (
	"os"
	"syscall"
)

// lockCurrent takes an exclusive advisory lock on file (released when it
// is closed) and reports whether file is still the one at path: a drain
// may have renamed it while the lock was awaited.
func lockCurrent(file *os.File, path string) (bool, error) {
	if err := syscall.Flock(int(file.Fd()), syscall.LOCK_EX); err != nil {
		return false, err
	}
	return sameFile(file, path)
}
