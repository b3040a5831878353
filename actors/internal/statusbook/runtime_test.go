package statusbook

import (
	"reflect"
	"testing"
	"unsafe"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// nonZero sets v (a field of v1.PodStatus) to a value that is not its zero.
func nonZero(t *testing.T, name string, v reflect.Value) {
	switch v.Kind() {
	case reflect.String:
		v.SetString("x")
	case reflect.Int64, reflect.Int32:
		v.SetInt(1)
	case reflect.Bool:
		v.SetBool(true)
	case reflect.Slice:
		v.Set(reflect.MakeSlice(v.Type(), 1, 1))
	case reflect.Pointer:
		v.Set(reflect.New(v.Type().Elem()))
	case reflect.Map:
		m := reflect.MakeMap(v.Type())
		m.SetMapIndex(reflect.New(v.Type().Key()).Elem(), reflect.New(v.Type().Elem()).Elem())
		v.Set(m)
	default:
		t.Fatalf("PodStatus.%s: a %s field, which this test cannot fill yet", name, v.Kind())
	}
}

// Whatever field of v1.PodStatus a runtime status sets, the book gives back exactly that status: a
// field added by a newer k8s API is kept (the whole status, then), never dropped.
func TestARuntimeStatusIsKeptExactly(t *testing.T) {
	inline := map[string]bool{"ObservedGeneration": true, "Phase": true, "Conditions": true, "HostIP": true,
		"HostIPs": true, "PodIP": true, "PodIPs": true, "StartTime": true, "InitContainerStatuses": true,
		"ContainerStatuses": true, "QOSClass": true}
	typ := reflect.TypeFor[v1.PodStatus]()
	for i := range typ.NumField() {
		f := typ.Field(i)
		t.Run(f.Name, func(t *testing.T) {
			var st v1.PodStatus
			nonZero(t, f.Name, reflect.ValueOf(&st).Elem().Field(i))
			r := compact(&st)
			var got v1.PodStatus
			r.expand(&got)
			require.True(t, reflect.DeepEqual(st, got), "%s lost: %#v", f.Name, got)
			assert.Equal(t, !inline[f.Name], r.full != nil, "kept whole")
		})
	}

	// Every field at once, and none.
	var all v1.PodStatus
	for i := range typ.NumField() {
		nonZero(t, typ.Field(i).Name, reflect.ValueOf(&all).Elem().Field(i))
	}
	for _, st := range []v1.PodStatus{all, {}} {
		r := compact(&st)
		var got v1.PodStatus
		r.expand(&got)
		assert.True(t, reflect.DeepEqual(st, got))
	}
}

// What kubelet reports for a running pod is kept in the 208-byte size class, not as a 384-byte
// v1.PodStatus (k8s v0.37) beside it: 176 bytes less per pod.
func TestAKubeletStatusIsKeptCompact(t *testing.T) {
	started := metav1.NewTime(t0)
	yes := true
	st := v1.PodStatus{
		ObservedGeneration: 2, Phase: v1.PodRunning,
		Conditions: []v1.PodCondition{{Type: v1.PodScheduled, Status: v1.ConditionTrue}},
		HostIP:     "10.0.0.2", HostIPs: []v1.HostIP{{IP: "10.0.0.2"}},
		PodIP: "10.1.0.3", PodIPs: []v1.PodIP{{IP: "10.1.0.3"}}, StartTime: &started,
		ContainerStatuses: []v1.ContainerStatus{{Name: "app", ContainerID: "x://1", Ready: true, Started: &yes,
			State: v1.ContainerState{Running: &v1.ContainerStateRunning{StartedAt: started}}}},
		QOSClass: v1.PodQOSBestEffort,
	}
	r := compact(&st)
	assert.Nil(t, r.full)
	var got v1.PodStatus
	r.expand(&got)
	assert.True(t, reflect.DeepEqual(st, got))
	assert.LessOrEqual(t, unsafe.Sizeof(runtimeStatus{}), uintptr(208), "runtimeStatus")
	assert.Greater(t, unsafe.Sizeof(v1.PodStatus{}), uintptr(208)+128, "v1.PodStatus shrank: is runtimeStatus still worth it?")
}
