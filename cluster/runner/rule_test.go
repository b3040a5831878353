package runner

import (
	"fmt"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/probeactor/probeactor/cluster/sharder"
)

// TestTransition is the whole rule: every phase, open and closed, under every event.
func TestTransition(t *testing.T) {
	type row struct {
		from   phase
		closed bool
		ev     event
		to     phase
		act    action
	}
	rows := []row{
		// open
		{idle, false, start, running, startNow},
		{idle, false, stop, idle, none},
		{idle, false, stopDone, idle, none},
		{idle, false, startFailed, idle, none},
		{idle, false, closing, idle, none},

		{running, false, start, running, none},
		{running, false, stop, stopping, stopNow},
		{running, false, stopDone, running, none},
		{running, false, startFailed, idle, none},
		{running, false, closing, stopping, stopNow},

		{stopping, false, start, restarting, startAfterStop},
		{stopping, false, stop, stopping, none},
		{stopping, false, stopDone, idle, none},
		{stopping, false, startFailed, stopping, none},
		{stopping, false, closing, stopping, none},

		{restarting, false, start, restarting, startAfterStop},
		{restarting, false, stop, stopping, cancelRestart},
		{restarting, false, stopDone, running, startKept},
		{restarting, false, startFailed, restarting, none},
		{restarting, false, closing, stopping, cancelRestart},

		// closed: nothing starts
		{idle, true, start, idle, refuse},
		{idle, true, stop, idle, none},
		{idle, true, stopDone, idle, none},
		{idle, true, startFailed, idle, none},
		{idle, true, closing, idle, none},

		{running, true, start, running, refuse},
		{running, true, stop, stopping, stopNow},
		{running, true, stopDone, running, none},
		{running, true, startFailed, idle, none},
		{running, true, closing, stopping, stopNow},

		{stopping, true, start, stopping, refuse},
		{stopping, true, stop, stopping, none},
		{stopping, true, stopDone, idle, none},
		{stopping, true, startFailed, stopping, none},
		{stopping, true, closing, stopping, none},

		{restarting, true, start, restarting, refuse},
		{restarting, true, stop, stopping, cancelRestart},
		{restarting, true, stopDone, idle, cancelRestart},
		{restarting, true, startFailed, restarting, none},
		{restarting, true, closing, stopping, cancelRestart},
	}
	covered := map[string]bool{}
	for _, r := range rows {
		name := fmt.Sprintf("%v/closed=%v/%v", r.from, r.closed, r.ev)
		covered[name] = true
		t.Run(name, func(t *testing.T) {
			to, act := transition(r.from, r.closed, r.ev)
			assert.Equal(t, r.to, to, "phase")
			assert.Equal(t, r.act, act, "action")
		})
	}
	for _, p := range []phase{idle, running, stopping, restarting} {
		for _, closed := range []bool{false, true} {
			for _, e := range []event{start, stop, stopDone, startFailed, closing} {
				assert.True(t, covered[fmt.Sprintf("%v/closed=%v/%v", p, closed, e)], "%v/closed=%v/%v is in the table", p, closed, e)
			}
		}
	}
}

func pod(name string, grace int64) *v1.Pod {
	return &v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, UID: types.UID("uid-" + name)}, Spec: v1.PodSpec{TerminationGracePeriodSeconds: &grace}}
}

// TestBookKeepsTheInstances: the book carries the pods the effects act on: the stop acts on the
// instance that runs, the start after the stop on the newest pod given meanwhile.
func TestBookKeepsTheInstances(t *testing.T) {
	b := newBook()
	a1, a2, a3 := pod("a", 5), pod("a", 5), pod("a", 5)
	assert.Equal(t, effect{act: startNow, uid: a1.UID, pod: a1}, b.apply(a1.UID, start, a1))
	assert.Equal(t, effect{act: stopNow, uid: a1.UID, pod: a1}, b.apply(a1.UID, stop, nil))
	assert.Equal(t, startAfterStop, b.apply(a1.UID, start, a2).act)
	assert.Equal(t, startAfterStop, b.apply(a1.UID, start, a3).act, "the newest pod given is the one started")
	assert.Equal(t, 1, b.stopsInProgress())
	assert.Equal(t, effect{act: startKept, uid: a1.UID, pod: a3}, b.apply(a1.UID, stopDone, nil))
	assert.Equal(t, 0, b.stopsInProgress())
	assert.Equal(t, effect{act: stopNow, uid: a1.UID, pod: a3}, b.apply(a1.UID, stop, nil), "the stop acts on the instance started last")
	assert.Equal(t, none, b.apply(a1.UID, stopDone, nil).act)
	assert.Empty(t, b.pods, "an idle pod leaves no entry")

	assert.Equal(t, startNow, b.apply(a1.UID, start, a1).act)
	assert.Equal(t, none, b.apply(a1.UID, startFailed, nil).act)
	assert.Empty(t, b.pods, "a failed start leaves nothing")
}

// TestBookClose: close stops what still runs (in UID order), drops pods kept for after a stop and
// refuses every later start; the stops already in progress still finish.
func TestBookClose(t *testing.T) {
	b := newBook()
	a, c, d, e := pod("a", 5), pod("c", 40), pod("d", 5), pod("e", 5)
	for _, p := range []*v1.Pod{e, a, c, d} {
		require.Equal(t, startNow, b.apply(p.UID, start, p).act)
	}
	require.Equal(t, stopNow, b.apply(c.UID, stop, nil).act)
	require.Equal(t, stopNow, b.apply(d.UID, stop, nil).act)
	require.Equal(t, startAfterStop, b.apply(d.UID, start, d).act)
	assert.Equal(t, 40*time.Second, b.longestGrace())

	stops := b.close()
	assert.Equal(t, []effect{{act: stopNow, uid: a.UID, pod: a}, {act: stopNow, uid: e.UID, pod: e}}, stops)
	assert.Equal(t, 4, b.stopsInProgress())
	assert.Equal(t, refuse, b.apply(a.UID, start, a).act)
	assert.Equal(t, refuse, b.apply("new", start, pod("new", 1)).act)
	assert.Equal(t, none, b.apply(d.UID, stopDone, nil).act, "d's kept pod was dropped: no start after its stop")
	for _, p := range []*v1.Pod{a, c, e} {
		assert.Equal(t, none, b.apply(p.UID, stopDone, nil).act)
	}
	assert.Equal(t, 0, b.stopsInProgress())
	assert.Empty(t, b.pods)
	assert.Zero(t, b.longestGrace())
	assert.Empty(t, b.close(), "a second close does nothing")
}

func TestGracePeriod(t *testing.T) {
	assert.Zero(t, gracePeriod(nil))
	assert.Equal(t, sharder.DefaultGracePeriod, gracePeriod(&v1.Pod{}))
	assert.Equal(t, 7*time.Second, gracePeriod(pod("a", 7)))
}

// TestBookNeverRunsAUIDTwice drives the book with random interleavings of the sharder's starts
// and stops, stops finishing, failed starts and a close, carrying out its effects on a model of
// the host, and checks after every step: at most one instance of a UID exists here (running or
// stopping), nothing starts once closed, every stop the book asked for is one it tracks, and a
// pod the sharder last asked to run does run (or is about to, once its stop finished).
func TestBookNeverRunsAUIDTwice(t *testing.T) {
	uids := []types.UID{"u0", "u1", "u2"}
	for seed := range uint64(300) {
		rng := rand.New(rand.NewPCG(seed, 7))
		b := newBook()
		instances := map[types.UID]int{} // running or stopping on the host
		var inFlight []types.UID         // StopPod calls not returned, in any order
		wanted := map[types.UID]bool{}   // the sharder's last word: run it
		failed := map[types.UID]bool{}   // wanted, but its last start failed (the sharder retries)
		closed := false
		var trace []string
		carry := func(eff effect, failStart bool) {
			switch eff.act {
			case startNow, startKept:
				require.False(t, closed, "seed %d: a start after close: %v", seed, trace)
				require.Zero(t, instances[eff.uid], "seed %d: a second instance of %s: %v", seed, eff.uid, trace)
				if failStart {
					trace = append(trace, "startFailed "+string(eff.uid))
					failed[eff.uid] = true
					b.apply(eff.uid, startFailed, nil)
					return
				}
				instances[eff.uid]++
			case stopNow:
				require.Equal(t, 1, instances[eff.uid], "seed %d: stop of %s, which does not run: %v", seed, eff.uid, trace)
				inFlight = append(inFlight, eff.uid)
			default:
			}
		}
		for step := 0; step < 60; step++ {
			uid := uids[rng.IntN(len(uids))]
			switch n := rng.IntN(10); {
			case n < 4:
				trace = append(trace, "start "+string(uid))
				eff := b.apply(uid, start, &v1.Pod{ObjectMeta: metav1.ObjectMeta{UID: uid}})
				if closed {
					require.Equal(t, refuse, eff.act, "seed %d", seed)
					continue
				}
				wanted[uid], failed[uid] = true, false
				carry(eff, rng.IntN(8) == 0)
			case n < 7:
				trace = append(trace, "stop "+string(uid))
				wanted[uid], failed[uid] = false, false
				carry(b.apply(uid, stop, nil), false)
			case n < 9 && len(inFlight) > 0:
				i := rng.IntN(len(inFlight))
				done := inFlight[i]
				inFlight = append(inFlight[:i], inFlight[i+1:]...)
				trace = append(trace, "stopDone "+string(done))
				instances[done]--
				carry(b.apply(done, stopDone, nil), rng.IntN(8) == 0)
			case n == 9 && !closed && step > 30:
				trace = append(trace, "close")
				closed = true
				for _, eff := range b.close() {
					carry(eff, false)
				}
				clear(wanted)
			}
			require.Equal(t, len(inFlight), b.stopsInProgress(), "seed %d: %v", seed, trace)
			for _, u := range uids {
				ph := idle
				if en := b.pods[u]; en != nil {
					ph = en.phase
				}
				if wanted[u] && ph == idle {
					require.True(t, failed[u], "seed %d: %s is wanted but idle, and no start failed: %v", seed, u, trace)
				}
				if !wanted[u] {
					require.NotContains(t, []phase{running, restarting}, ph, "seed %d: %s runs or will, unwanted: %v", seed, u, trace)
				}
			}
		}
	}
}
