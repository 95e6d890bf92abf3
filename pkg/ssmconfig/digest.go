package ssmconfig

import "fmt"

// Digest is the version of the document the last Load read: the hex
// SHA-256 of the merged parameters ("" before the first load, and after a
// load that failed to apply, until the next one).
func (l *Loader) Digest() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.digest == [32]byte{} {
		return ""
	}
	return fmt.Sprintf("%x", l.digest)
}
