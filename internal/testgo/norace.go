//go:build !race

package testgo

const raceEnabled = false
