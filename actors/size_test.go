package actors

import (
	"testing"
	"unsafe"

	"github.com/stretchr/testify/assert"
)

// A worker is one allocation of the 448-byte size class (its mailbox and Machine embedded). One
// byte more costs 32 (the 480 class) per worker, and a field added without a look at the padding
// crosses it unnoticed: issue 23's and 24's fields took it to 504 bytes (the 512 class, +64 B per
// worker) until the Machine's small fields were put together and the shell's copies of what the
// Machine holds were dropped.
func TestAWorkerFitsItsSizeClass(t *testing.T) {
	assert.LessOrEqual(t, unsafe.Sizeof(workerActor{}), uintptr(448), "workerActor")
}
