package actors

import (
	"testing"
	"unsafe"

	"github.com/stretchr/testify/assert"

	"github.com/probeactor/probeactor/actors/internal/worker"
)

// A worker is one allocation of the 448-byte size class (its mailbox and Machine embedded). One
// byte more costs 32 (the 480 class) per worker, and a field added without a look at the padding
// crosses it unnoticed: issue 23's and 24's fields took it to 504 bytes (the 512 class, +64 B per
// worker) until the Machine's small fields were put together and the shell's copies of what the
// Machine holds were dropped.
func TestAWorkerFitsItsSizeClass(t *testing.T) {
	assert.LessOrEqual(t, unsafe.Sizeof(workerActor{}), uintptr(448), "workerActor")
}

// A probe reads the worker's first six cache lines and not its seventh (workerActor's layout): the
// Machine's hot part ends within the sixth, and the fields a probe does not read start in the
// seventh. A worker is 64-byte aligned (its size class is a multiple of 64), so the lines are the
// hardware's.
func TestAProbeReadsSixOfAWorkersSevenLines(t *testing.T) {
	var w workerActor
	const line = 64
	assert.LessOrEqual(t, unsafe.Offsetof(w.m)+worker.HotBytes, uintptr(6*line), "the Machine's hot part")
	for name, off := range map[string]uintptr{
		"pod": unsafe.Offsetof(w.pod), "self": unsafe.Offsetof(w.self),
		"series": unsafe.Offsetof(w.series), "ms": unsafe.Offsetof(w.ms),
	} {
		assert.GreaterOrEqual(t, off, uintptr(6*line), name)
	}
}
