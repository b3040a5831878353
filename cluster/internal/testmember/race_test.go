//go:build race

package main

// raceEnabled: the test binary runs under the race detector, so the member binary is built with it.
const raceEnabled = true
