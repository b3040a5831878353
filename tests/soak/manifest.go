package main

import (
	"encoding/json"
	"fmt"
	"path/filepath"
	"strconv"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
)

// EditAnnotation carries a pod version's edit count; the final check reads it back from /pods.
const EditAnnotation = "soak.probeactor.io/edit"

// Targets says where a slot's probes go: the soak tool's HTTP and gRPC servers (one each, a path
// or service per slot), a TCP port pair per TCP slot, and the directory of the exec probes' files.
type Targets struct {
	HTTPPort, GRPCPort int
	TCPReady, TCPLive  map[int]int // slot → port
	ExecDir            string
}

// probeHandler is slot's handler for its readiness (what == "ready") or liveness ("live") target.
func (t Targets) probeHandler(sl *Slot, what string) v1.ProbeHandler {
	name := fmt.Sprintf("%s-%d", what, sl.Index)
	switch sl.Kind {
	case HTTP:
		return v1.ProbeHandler{HTTPGet: &v1.HTTPGetAction{Path: "/" + what + "/" + strconv.Itoa(sl.Index), Port: intstr.FromInt(t.HTTPPort)}}
	case TCP:
		port := t.TCPReady[sl.Index]
		if what == "live" {
			port = t.TCPLive[sl.Index]
		}
		return v1.ProbeHandler{TCPSocket: &v1.TCPSocketAction{Port: intstr.FromInt(port)}}
	case GRPC:
		return v1.ProbeHandler{GRPC: &v1.GRPCAction{Port: int32(t.GRPCPort), Service: &name}}
	default:
		return v1.ProbeHandler{Exec: &v1.ExecAction{Command: []string{"test", "-e", filepath.Join(t.ExecDir, name)}}}
	}
}

// Manifest is generation gen of slot's pod after edit edits, as node reads it from the manifest
// directory: one `sleep` container (the targets are the soak tool's, so what a probe sees is a
// function of the schedule alone), readiness and liveness probes on the slot's targets, and a
// startup probe on the liveness target for odd slots.
func (s *Schedule) Manifest(slot, gen, edit int, t Targets) ([]byte, error) {
	sl := &s.Slots[slot]
	grace := int64(2)
	c := v1.Container{
		Name:    "app",
		Image:   "soak/sleep",
		Command: []string{"sleep", "infinity"},
		ReadinessProbe: &v1.Probe{ProbeHandler: t.probeHandler(sl, "ready"),
			PeriodSeconds: 2, TimeoutSeconds: 2, FailureThreshold: 3, SuccessThreshold: 1},
		LivenessProbe: &v1.Probe{ProbeHandler: t.probeHandler(sl, "live"),
			PeriodSeconds: 2, TimeoutSeconds: 2, FailureThreshold: 2, SuccessThreshold: 1},
	}
	if sl.Startup {
		c.StartupProbe = &v1.Probe{ProbeHandler: t.probeHandler(sl, "live"),
			PeriodSeconds: 1, TimeoutSeconds: 2, FailureThreshold: 60, SuccessThreshold: 1}
	}
	pod := v1.Pod{
		TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "Pod"},
		ObjectMeta: metav1.ObjectMeta{
			Name:        sl.Name(gen),
			Labels:      map[string]string{"soak.probeactor.io/slot": strconv.Itoa(slot), "soak.probeactor.io/kind": sl.Kind.String()},
			Annotations: map[string]string{EditAnnotation: strconv.Itoa(edit)},
		},
		Spec: v1.PodSpec{TerminationGracePeriodSeconds: &grace, Containers: []v1.Container{c}},
	}
	b, err := json.MarshalIndent(pod, "", "  ")
	if err != nil {
		return nil, fmt.Errorf("manifest of %s: %w", pod.Name, err)
	}
	return append(b, '\n'), nil
}
