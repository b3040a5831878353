//go:build race

package membership

// raceEnabled: the race detector slows the simulation about threefold: it runs fewer seeds.
const raceEnabled = true
