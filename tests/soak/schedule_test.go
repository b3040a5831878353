package main

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	v1 "k8s.io/api/core/v1"
	kjson "sigs.k8s.io/json"

	"github.com/probeactor/probeactor/probes"
)

// TestScheduleIsDeterministic: the same pods and duration give the same plan.
func TestScheduleIsDeterministic(t *testing.T) {
	assert.Equal(t, NewSchedule(40, 10*time.Minute), NewSchedule(40, 10*time.Minute))
}

// TestScheduleShape: every slot always has exactly one pod; generations follow each other without
// gap or overlap; every kind is used; churn and flapping happen throughout the run and stop at its
// end; the liveness target is healthy for the last 20 s.
func TestScheduleShape(t *testing.T) {
	const d = 10 * time.Minute
	s := NewSchedule(300, d)
	kinds := map[Kind]int{}
	for i := range s.Slots {
		sl := &s.Slots[i]
		kinds[sl.Kind]++
		require.NotEmpty(t, sl.Generations)
		assert.Zero(t, sl.Generations[0].Add, "slot %d: the first generation is there when node starts", i)
		for k, g := range sl.Generations {
			assert.Equal(t, k, g.N)
			assert.Greater(t, g.Remove, g.Add, "slot %d gen %d lives", i, k)
			assert.GreaterOrEqual(t, g.Remove, firstRemoval, "slot %d gen %d: node had time to start it", i, k)
			if k > 0 {
				assert.Equal(t, sl.Generations[k-1].Remove, g.Add, "slot %d: gen %d replaces gen %d at once", i, k, k-1)
			}
			for _, e := range g.Edits {
				assert.True(t, e > g.Add && e < g.Remove && e < d, "slot %d gen %d: edit at %s inside its life", i, k, e)
			}
		}
		assert.GreaterOrEqual(t, sl.Generations[len(sl.Generations)-1].Remove, d, "slot %d: the last generation lives to the end", i)
		for _, f := range sl.LiveFails {
			assert.LessOrEqual(t, f+liveWindow, d-liveQuietEnd)
		}
		for at := d - liveQuietEnd; at <= d+time.Minute; at += time.Second {
			assert.True(t, s.Live(i, at), "slot %d: live at %s", i, at)
		}
	}
	assert.Equal(t, map[Kind]int{HTTP: 75, TCP: 75, GRPC: 75, Exec: 75}, kinds)

	added, removed, edits, liveFails := s.Counts()
	assert.Equal(t, added, removed, "every pod added after the start replaces one")
	assert.Greater(t, added, 300, "more than the whole population is replaced in 10 minutes")
	assert.Greater(t, edits, 50)
	assert.Greater(t, liveFails, 300)

	// Churn is spread over the run: every minute has pods replaced.
	perMinute := map[int]int{}
	for _, op := range s.Ops() {
		require.Less(t, op.At, d, "nothing changes after the end")
		if op.Remove {
			perMinute[int(op.At/time.Minute)]++
		}
	}
	for m := range 10 {
		assert.Greater(t, perMinute[m], 10, "minute %d", m)
	}
}

// TestTargetsFlapAndFreezeAtTheEnd: readiness is down a third of each period, a liveness failure
// lasts liveWindow, and after the run every answer stays what it was at the end.
func TestTargetsFlapAndFreezeAtTheEnd(t *testing.T) {
	const d = 10 * time.Minute
	s := NewSchedule(8, d)
	for i := range s.Slots {
		sl := &s.Slots[i]
		down := 0
		for at := time.Duration(0); at < sl.ReadyPeriod; at += 100 * time.Millisecond {
			if !s.Ready(i, at) {
				down++
			}
		}
		assert.InDelta(t, float64(sl.UnreadyFor/(100*time.Millisecond)), float64(down), 1, "slot %d", i)
		require.NotEmpty(t, sl.LiveFails, "slot %d", i)
		f := sl.LiveFails[0]
		assert.True(t, s.Live(i, f-time.Millisecond))
		assert.False(t, s.Live(i, f))
		assert.False(t, s.Live(i, f+liveWindow-time.Millisecond))
		assert.True(t, s.Live(i, f+liveWindow))
		assert.Equal(t, s.Ready(i, d), s.Ready(i, d+time.Hour), "slot %d: frozen after the end", i)
	}
}

// TestOpsReplaceBeforeAdding: at one instant a slot's old file goes before its new one comes, and
// the ops are in time order.
func TestOpsReplaceBeforeAdding(t *testing.T) {
	s := NewSchedule(30, 10*time.Minute)
	ops := s.Ops()
	removedAt := map[[2]int]time.Duration{}
	for k, op := range ops {
		if k > 0 {
			require.LessOrEqual(t, ops[k-1].At, op.At)
		}
		if op.Remove {
			removedAt[[2]int{op.Slot, op.Gen}] = op.At
			continue
		}
		if op.Edit == 0 && op.Gen > 0 {
			at, ok := removedAt[[2]int{op.Slot, op.Gen - 1}]
			require.True(t, ok, "slot %d gen %d added before gen %d was removed", op.Slot, op.Gen, op.Gen-1)
			assert.Equal(t, op.At, at)
		}
	}
}

// TestFinalIsEachSlotsLastGeneration: the pods that must exist after the run, with their final
// readiness and edit count.
func TestFinalIsEachSlotsLastGeneration(t *testing.T) {
	const d = 5 * time.Minute
	s := NewSchedule(12, d)
	final := s.Final()
	require.Len(t, final, 12)
	for i := range s.Slots {
		sl := &s.Slots[i]
		g := sl.Generations[len(sl.Generations)-1]
		e, ok := final[sl.Name(g.N)]
		require.True(t, ok, "slot %d", i)
		assert.Equal(t, s.Ready(i, d), e.Ready)
		assert.Equal(t, len(g.Edits), e.Edits)
	}
}

// TestManifestsAreValidForNode: every kind's manifest decodes strictly and passes the probe rules
// node validates with (its own decoder and runtime checks are internal to cmd/node; the soak run
// reports any manifest node refuses in node.stderr and as lost pods), and each edit is a different
// manifest.
func TestManifestsAreValidForNode(t *testing.T) {
	s := NewSchedule(8, 10*time.Minute)
	where := Targets{HTTPPort: 8080, GRPCPort: 9090, TCPReady: map[int]int{1: 20001, 5: 20003}, TCPLive: map[int]int{1: 20002, 5: 20004}, ExecDir: "/tmp/x"}
	for i := range s.Slots {
		b, err := s.Manifest(i, 3, 1, where)
		require.NoError(t, err)
		var p *v1.Pod
		strict, err := kjson.UnmarshalStrict(b, &p)
		require.NoError(t, err)
		require.Empty(t, strict, "slot %d: only known fields, as node decodes", i)
		probes.SetDefaults(p)
		assert.Empty(t, probes.ValidatePod(p), "slot %d: the API server's probe rules", i)
		assert.Equal(t, s.Slots[i].Name(3), p.Name)
		assert.Equal(t, "1", p.Annotations[EditAnnotation])
		c := p.Spec.Containers[0]
		assert.Equal(t, s.Slots[i].Startup, c.StartupProbe != nil, "slot %d", i)
		switch s.Slots[i].Kind {
		case HTTP:
			assert.Equal(t, "/ready/"+itoa(i), c.ReadinessProbe.HTTPGet.Path)
		case TCP:
			assert.Equal(t, where.TCPLive[i], c.LivenessProbe.TCPSocket.Port.IntValue())
		case GRPC:
			assert.Equal(t, "live-"+itoa(i), *c.LivenessProbe.GRPC.Service)
		case Exec:
			assert.Equal(t, []string{"test", "-e", "/tmp/x/ready-" + itoa(i)}, c.ReadinessProbe.Exec.Command)
		}
		other, err := s.Manifest(i, 3, 2, where)
		require.NoError(t, err)
		assert.NotEqual(t, string(b), string(other))
	}
}
