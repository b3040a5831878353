package logtest

import (
	"fmt"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// fakeTB records what logtest does with a test; methods it should not use panic via the nil TB.
type fakeTB struct {
	testing.TB
	failed   bool
	cleanups []func()
	logs     []string
}

func (f *fakeTB) Helper()                 {}
func (f *fakeTB) Name() string            { return "TestFake" }
func (f *fakeTB) Failed() bool            { return f.failed }
func (f *fakeTB) Cleanup(fn func())       { f.cleanups = append(f.cleanups, fn) }
func (f *fakeTB) Logf(s string, a ...any) { f.logs = append(f.logs, fmt.Sprintf(s, a...)) }

func (f *fakeTB) finish() {
	for i := len(f.cleanups) - 1; i >= 0; i-- {
		f.cleanups[i]()
	}
}

func TestOutputShownOnlyWhenTheTestFails(t *testing.T) {
	for _, failed := range []bool{false, true} {
		t.Run(fmt.Sprintf("failed=%v", failed), func(t *testing.T) {
			tb := &fakeTB{}
			l := New(tb)
			l.Named("worker").Debug("probe ran", "pod", "default/web")
			l.Trace("fine detail")
			tb.failed = failed
			tb.finish()
			if !failed {
				assert.Empty(t, tb.logs)
				return
			}
			require.Len(t, tb.logs, 1)
			out := tb.logs[0]
			assert.Contains(t, out, "TestFake.worker: probe ran: pod=default/web")
			assert.Contains(t, out, "fine detail", "Trace level is captured")
		})
	}
}

func TestCaptureExposesTheBuffer(t *testing.T) {
	tb := &fakeTB{}
	l, buf := Capture(tb)
	l.Warn("careful", "n", 3)
	assert.True(t, strings.Contains(buf.String(), "[WARN]  TestFake: careful: n=3"), buf.String())
	tb.finish()
	assert.Empty(t, tb.logs)
}
