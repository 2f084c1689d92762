//go:build !race

package beat

// raceEnabled reports whether the race detector is on.
const raceEnabled = false
