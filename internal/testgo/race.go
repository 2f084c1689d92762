//go:build race

package testgo

// raceEnabled says that this binary was built with -race.
const raceEnabled = true
