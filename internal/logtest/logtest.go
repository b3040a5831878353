// Package logtest gives each test its own hclog logger whose output is shown only if the test fails,
// so passing tests stay quiet and a failing one shows everything that led to it. It is the only
// logging code that imports package testing; production code never imports it.
package logtest

import (
	"bytes"
	"sync"
	"testing"

	"github.com/hashicorp/go-hclog"
)

// New returns a Trace-level logger named after the test that buffers its output; when the test ends
// (t.Cleanup) and has failed, the buffer is written to the test log.
func New(t testing.TB) hclog.Logger {
	l, _ := Capture(t)
	return l
}

// Capture is New that also returns the buffer, for tests that assert on log output.
func Capture(t testing.TB) (hclog.Logger, *Buffer) {
	t.Helper()
	buf := &Buffer{}
	l := hclog.New(&hclog.LoggerOptions{
		Name:   t.Name(),
		Level:  hclog.Trace,
		Output: buf,
	})
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("log output of %s:\n%s", t.Name(), buf.String())
		}
	})
	return l, buf
}

// Buffer is a goroutine-safe log sink: actors write to it while the test reads it.
type Buffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

// Write implements io.Writer.
func (b *Buffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.Write(p)
}

// String returns everything written so far.
func (b *Buffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.String()
}
