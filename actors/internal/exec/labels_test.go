package exec

import (
	"bytes"
	"context"
	"runtime/pprof"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// The executor's goroutines carry profiler labels of their own: a Runner its actor's name, the
// pools' goroutines their pool, and a goroutine a pool falls back to its pool's too, whoever
// started it (labels are inherited: a worker mailbox run on a fallback goroutine started by
// probeManager's spawn must not count as probeManager's in a profile).
func TestGoroutinesCarryLabels(t *testing.T) {
	x := New(Config{Shards: 1})
	defer x.Stop()
	sh := x.Shards()[0]
	release := make(chan struct{})
	var running sync.WaitGroup // each blocked job is running
	running.Add(4)
	block := func(marker func(<-chan struct{})) Job {
		return jobFunc(func() { running.Done(); marker(release) })
	}

	wake := x.Runner("probeManager")
	m := &Mailbox{Owner: &runnerOwner{wake: wake}}
	m.RegisterHandlers(invokerFunc(func(any) { running.Done(); blockedInRunner(release) }), nil)
	m.Post(1)
	sh.Schedule(block(blockedInMailboxPool))
	sh.Go(block(blockedInAttemptPool))
	// A fallback goroutine started from a goroutine labelled as an actor.
	pprof.Do(context.Background(), pprof.Labels(LabelActor, "probeManager"), func(context.Context) {
		goLabeled(mailboxLabels, block(blockedInFallback))
	})
	running.Wait()

	dump := goroutineDump(t)
	close(release)
	assert.Equal(t, `{"actor":"probeManager"}`, labelsOf(t, dump, "blockedInRunner"))
	assert.Equal(t, `{"exec":"mailboxes"}`, labelsOf(t, dump, "blockedInMailboxPool"))
	assert.Equal(t, `{"exec":"attempts"}`, labelsOf(t, dump, "blockedInAttemptPool"))
	assert.Equal(t, `{"exec":"mailboxes"}`, labelsOf(t, dump, "blockedInFallback"), "not the starter's labels")
}

//go:noinline
func blockedInRunner(c <-chan struct{}) { <-c }

//go:noinline
func blockedInMailboxPool(c <-chan struct{}) { <-c }

//go:noinline
func blockedInAttemptPool(c <-chan struct{}) { <-c }

//go:noinline
func blockedInFallback(c <-chan struct{}) { <-c }

func goroutineDump(t *testing.T) string {
	t.Helper()
	var b bytes.Buffer
	require.NoError(t, pprof.Lookup("goroutine").WriteTo(&b, 1))
	return b.String()
}

// labelsOf returns the labels of the goroutine record (debug=1 format) whose stack holds fn.
func labelsOf(t *testing.T, dump, fn string) string {
	t.Helper()
	for _, rec := range strings.Split(dump, "\n\n") {
		if !strings.Contains(rec, "exec."+fn+"+") {
			continue
		}
		for _, line := range strings.Split(rec, "\n") {
			if l, ok := strings.CutPrefix(line, "# labels: "); ok {
				return l
			}
		}
		return "none"
	}
	t.Fatalf("no goroutine in %s:\n%s", fn, dump)
	return ""
}
