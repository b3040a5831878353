//go:build !race

package actors

const scaleWorkers = 100000
