//go:build !unix

package usage

import "os"

// lockCurrent reports whether file is still the one at path. Without
// flock, processes sharing a spill file are not coordinated: on these
// platforms run the rollup command while the gateway is stopped.
func lockCurrent(file *os.File, path string) (bool, error) { return sameFile(file, path) }
