//go:build race

package server_test

// raceEnabled: the tests run under the race detector.
const raceEnabled = true
