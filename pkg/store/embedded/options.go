package embedded

import "time"

// Option configures [Open].
type Option func(*Store)

// WithClock sets the clock used for expiry decisions (nil: time.Now). Tests
// use it to move time instead of sleeping.
func WithClock(now func() time.Time) Option {
	return func(s *Store) {
		if now != nil {
			s.now = now
		}
	}
}

// WithQueryBatch sets how many entries Query reads per read transaction
// (default 256). Tests use a small value to exercise pagination.
func WithQueryBatch(n int) Option {
	return func(s *Store) {
		if n > 0 {
			s.batch = n
		}
	}
}

// WithNoSync skips the fsync after each commit. A committed write then
// survives a crash of the process (it is in the OS page cache) but not a
// crash of the machine. The local gateway uses it: an fsync per request was
// the largest single cost of a local request (see docs/bench).
func WithNoSync() Option {
	return func(s *Store) { s.noSync = true }
}
