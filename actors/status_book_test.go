package actors

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/probeactor/probeactor/messages"
)

func runningStatus(id string) v1.PodStatus {
	return v1.PodStatus{Phase: v1.PodRunning, ContainerStatuses: []v1.ContainerStatus{{Name: "app", ContainerID: id,
		State: v1.ContainerState{Running: &v1.ContainerStateRunning{StartedAt: metav1.NewTime(t0)}}}}}
}

func readiness(id string, r messages.Result) messages.ResultChanged {
	return messages.ResultChanged{PodUID: "u1", Container: "app", ContainerID: messages.ContainerID(id),
		Type: messages.Readiness, Result: r}
}

func TestStatusBook(t *testing.T) {
	pod := testPod("u1", v1.Container{Name: "app", ReadinessProbe: execProbe(1, 1)})
	key := messages.ProbeKey{PodUID: "u1", Container: "app", Type: messages.Readiness}
	ready := func(b *statusBook) bool {
		st, ok := b.status("u1")
		require.True(t, ok)
		return st.ContainerStatuses[0].Ready
	}

	b := newStatusBook()
	changed, _ := b.recompute("u1", t0)
	assert.Nil(t, changed, "no pod yet")
	_, ok := b.status("u1")
	assert.False(t, ok)

	b.addPod(pod)
	b.setRuntime(pod, runningStatus("x://1"))
	changed, trigger := b.recompute("u1", t0)
	require.NotNil(t, changed)
	assert.False(t, ready(b), "a readiness worker without a result: not ready")
	assert.Equal(t, []string{"app"}, trigger, "kubelet's manual trigger for the unready container")

	assert.Empty(t, b.apply([]messages.ResultChanged{readiness("x://0", messages.Success)}),
		"a container the status does not list is ignored")
	assert.Equal(t, map[types.UID]struct{}{"u1": {}}, b.apply([]messages.ResultChanged{readiness("x://1", messages.Success)}))
	changed, trigger = b.recompute("u1", t0)
	require.NotNil(t, changed)
	assert.True(t, ready(b))
	assert.Empty(t, trigger)
	changed, _ = b.recompute("u1", t0)
	assert.Nil(t, changed, "nothing changed")

	b.setRuntime(pod, runningStatus("x://2")) // restarted: the old ID's result goes
	assert.Empty(t, b.results)
	b.recompute("u1", t0)
	assert.False(t, ready(b))

	b.apply([]messages.ResultChanged{readiness("x://2", messages.Success)})
	b.setWorkers("u1", []messages.ProbeKey{key})
	assert.Len(t, b.results, 1, "the worker still exists")
	b.setWorkers("u1", nil) // the worker exited: its result goes, the no-worker rule applies
	assert.Empty(t, b.results)
	b.recompute("u1", t0)
	assert.True(t, ready(b), "no readiness worker: ready")

	b.apply([]messages.ResultChanged{readiness("x://2", messages.Success)})
	b.cleanup(map[types.UID]struct{}{})
	assert.Empty(t, b.pods)
	assert.Empty(t, b.results)
	assert.Empty(t, b.byPod)
}
