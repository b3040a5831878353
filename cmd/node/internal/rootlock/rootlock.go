// Package rootlock makes one node the owner of its --root-dir for as long as it runs: an exclusive
// flock(2) on <root-dir>/node.lock, held through an open file that no child inherits (Go opens
// files close-on-exec), so the kernel ends it with the process however the process ends, SIGKILL
// included, and nothing else (a container's shim) keeps it. The holder writes its PID into the
// file, so a second node can name who holds the directory.
//
// Invariants: Acquire either holds the lock or returns an error having changed nothing (a missing
// lock file is created empty, the only write a refused node makes); the PID in the file is the
// holder's once Acquire returned; Release lets the next node in at once.
package rootlock

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"golang.org/x/sys/unix"
)

// FileName is the lock file's name under the root directory.
const FileName = "node.lock"

// HeldError says another process holds the lock.
type HeldError struct {
	// PID is the holder's process ID, 0 when it has not written it yet (it took the lock a moment
	// ago).
	PID int
}

func (e *HeldError) Error() string {
	if e.PID == 0 {
		return "another node holds it (it has not written its pid yet)"
	}
	return fmt.Sprintf("another node (pid %d) holds it", e.PID)
}

// Lock is a held lock on a root directory.
type Lock struct{ f *os.File }

// Acquire takes the lock on dir, which must exist, without waiting: a *HeldError when another
// process holds it.
func Acquire(dir string) (*Lock, error) {
	f, err := os.OpenFile(filepath.Join(dir, FileName), os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return nil, fmt.Errorf("open the lock file: %w", err)
	}
	if err := unix.Flock(int(f.Fd()), unix.LOCK_EX|unix.LOCK_NB); err != nil {
		defer f.Close()
		if errors.Is(err, unix.EWOULDBLOCK) {
			return nil, &HeldError{PID: holderPID(f)}
		}
		return nil, fmt.Errorf("lock %s: %w", f.Name(), err)
	}
	if err := writePID(f); err != nil {
		_ = f.Close() // releases the lock
		return nil, fmt.Errorf("write %s: %w", f.Name(), err)
	}
	return &Lock{f: f}, nil
}

// holderPID reads the holder's PID. A holder that took the lock a moment ago writes it right
// after: in that race (two nodes started at once) it reads again for up to pidWait, so that the
// refused node can still name the holder; 0 if the holder has not written it by then.
func holderPID(f *os.File) int {
	for start := time.Now(); ; time.Sleep(10 * time.Millisecond) {
		if pid := readPID(f); pid != 0 || time.Since(start) >= pidWait {
			return pid
		}
	}
}

// pidWait bounds how long a refused node waits for the holder's PID.
const pidWait = time.Second

func readPID(f *os.File) int {
	b := make([]byte, 32)
	n, _ := f.ReadAt(b, 0)
	pid, err := strconv.Atoi(strings.TrimSpace(string(b[:n])))
	if err != nil {
		return 0
	}
	return pid
}

func writePID(f *os.File) error {
	if err := f.Truncate(0); err != nil {
		return err
	}
	_, err := f.WriteAt([]byte(strconv.Itoa(os.Getpid())+"\n"), 0)
	return err
}

// Release gives the directory up (the file stays, with the last holder's PID in it).
func (l *Lock) Release() error { return l.f.Close() }
