//go:build race

package rechunk

// raceEnabled: the tests run under the race detector.
const raceEnabled = true
