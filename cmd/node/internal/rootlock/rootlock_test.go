package rootlock

import (
	"os"
	"path/filepath"
	"strconv"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestOneHolderAtATime: a second Acquire on the same directory fails at once naming the holder's
// PID (flock locks belong to the open file, so this works inside one process as across two), and
// succeeds once the holder released it.
func TestOneHolderAtATime(t *testing.T) {
	dir := t.TempDir()
	first, err := Acquire(dir)
	require.NoError(t, err)
	b, err := os.ReadFile(filepath.Join(dir, FileName))
	require.NoError(t, err)
	assert.Equal(t, []byte(itoa(os.Getpid())+"\n"), b, "the holder's pid is in the file")

	_, err = Acquire(dir)
	var held *HeldError
	require.ErrorAs(t, err, &held)
	assert.Equal(t, os.Getpid(), held.PID)
	assert.Equal(t, "another node (pid "+itoa(os.Getpid())+") holds it", err.Error())

	require.NoError(t, first.Release())
	second, err := Acquire(dir)
	require.NoError(t, err, "free again once released")
	require.NoError(t, second.Release())
}

func TestAcquireNamesWhatIsWrong(t *testing.T) {
	_, err := Acquire(filepath.Join(t.TempDir(), "missing"))
	require.Error(t, err)
	assert.Contains(t, err.Error(), "open the lock file: ")
	assert.Equal(t, "another node holds it (it has not written its pid yet)", (&HeldError{}).Error())
}

func itoa(n int) string { return strconv.Itoa(n) }
