//go:build !race

package main

// raceEnabled says the tests run with the race detector; see race_test.go.
const raceEnabled = false
