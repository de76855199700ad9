//go:build race

package main

// raceEnabled says the tests run with the race detector, so the binary the
// end-to-end tests build is built with it too (and reuses the cached
// race-instrumented packages).
const raceEnabled = true
