//go:build !race

package testkit

// RaceEnabled reports whether the binary is built with the race detector
// (tests whose figures or frame sizes it changes skip, or loosen, under it).
const RaceEnabled = false
