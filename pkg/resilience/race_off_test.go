//go:build !race

package resilience

// raceEnabled: the tests run under the race detector.
const raceEnabled = false
