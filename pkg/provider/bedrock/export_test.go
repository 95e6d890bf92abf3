package bedrock

import (
	"testing"
	"time"
)

// SetClock fixes the clock that stamps "created" for the rest of the test.
func SetClock(t testing.TB, now time.Time) {
	old := timeNow
	timeNow = func() time.Time { return now }
	t.Cleanup(func() { timeNow = old })
}
