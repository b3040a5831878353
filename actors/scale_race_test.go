//go:build race

package actors

// Under the race detector every goroutine and allocation costs several times more; the scale test
// runs a tenth of the workers.
const scaleWorkers = 10000
