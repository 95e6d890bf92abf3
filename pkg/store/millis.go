package store

import "time"

// Millis converts a time to the unix milliseconds stored in numeric
// attributes (float64 holds them exactly; nanoseconds it would not). The
// zero time is 0.
func Millis(t time.Time) float64 {
	if t.IsZero() {
		return 0
	}
	return float64(t.UnixMilli())
}

// FromMillis is the inverse of [Millis]: 0 (or less) is the zero time;
// other values are UTC.
func FromMillis(v float64) time.Time {
	if v <= 0 {
		return time.Time{}
	}
	return time.UnixMilli(int64(v)).UTC()
}
