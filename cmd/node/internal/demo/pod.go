package demo

import (
	"fmt"
	"net"
	"path/filepath"
	"strconv"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
)

// Ports are the demo containers' ports.
type Ports struct{ HTTP, TCP, GRPC int }

// FreePorts asks the kernel for three unused loopback ports.
func FreePorts() (Ports, error) {
	var ps [3]int
	for i := range ps {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return Ports{}, fmt.Errorf("find a free port: %w", err)
		}
		defer ln.Close()
		ps[i] = ln.Addr().(*net.TCPAddr).Port
	}
	return Ports{HTTP: ps[0], TCP: ps[1], GRPC: ps[2]}, nil
}

// Pod returns the demo pod. self is the node executable; dir is a scratch directory for the
// containers' working directories (the liveness failure's once-marker lives there).
func Pod(self, dir string, p Ports) *v1.Pod {
	grace := int64(5)
	web := v1.Container{
		Name:       "web",
		Image:      "probeactor/demo",
		Command:    []string{self, Arg, "serve"},
		Args:       []string{"--http=$(HTTP_PORT)", "--tcp=" + strconv.Itoa(p.TCP), "--start-after=6s", "--unready-at=14s", "--unready-for=6s"},
		Env:        []v1.EnvVar{{Name: "HTTP_PORT", Value: strconv.Itoa(p.HTTP)}},
		WorkingDir: filepath.Join(dir, "web"),
		Ports: []v1.ContainerPort{
			{Name: "http", ContainerPort: int32(p.HTTP), Protocol: v1.ProtocolTCP},
			{Name: "tcp", ContainerPort: int32(p.TCP), Protocol: v1.ProtocolTCP},
		},
		// The startup probe holds liveness and readiness back for the first ~6 s.
		StartupProbe: &v1.Probe{
			ProbeHandler:     v1.ProbeHandler{HTTPGet: &v1.HTTPGetAction{Path: "/started", Port: intstr.FromString("http")}},
			PeriodSeconds:    1,
			FailureThreshold: 20,
		},
		ReadinessProbe: &v1.Probe{
			ProbeHandler:  v1.ProbeHandler{HTTPGet: &v1.HTTPGetAction{Path: "/ready", Port: intstr.FromString("http")}},
			PeriodSeconds: 1,
		},
		LivenessProbe: &v1.Probe{
			ProbeHandler:  v1.ProbeHandler{TCPSocket: &v1.TCPSocketAction{Port: intstr.FromString("tcp")}},
			PeriodSeconds: 2,
		},
	}
	api := v1.Container{
		Name:       "api",
		Image:      "probeactor/demo",
		Command:    []string{self, Arg, "serve"},
		Args:       []string{"--grpc=" + strconv.Itoa(p.GRPC), "--start-after=2s", "--fail-at=20s", "--ready-file=ready"},
		WorkingDir: filepath.Join(dir, "api"),
		Ports:      []v1.ContainerPort{{Name: "grpc", ContainerPort: int32(p.GRPC), Protocol: v1.ProtocolTCP}},
		// gRPC liveness: the server reports NOT_SERVING at 20 s, three failures later it is restarted.
		LivenessProbe: &v1.Probe{
			ProbeHandler:     v1.ProbeHandler{GRPC: &v1.GRPCAction{Port: int32(p.GRPC)}},
			PeriodSeconds:    1,
			FailureThreshold: 3,
			// A probe-level grace period shortens the kill of a failed container.
			TerminationGracePeriodSeconds: ptr(int64(2)),
		},
		// exec readiness: the command runs with the container's env and working directory, where the
		// server keeps a "ready" file while it is ready.
		ReadinessProbe: &v1.Probe{
			ProbeHandler:   v1.ProbeHandler{Exec: &v1.ExecAction{Command: []string{"cat", "ready"}}},
			PeriodSeconds:  2,
			TimeoutSeconds: 3,
		},
	}
	return &v1.Pod{
		TypeMeta:   metav1.TypeMeta{Kind: "Pod", APIVersion: "v1"},
		ObjectMeta: metav1.ObjectMeta{Name: "demo", Namespace: "default", Labels: map[string]string{"app": "demo"}},
		Spec: v1.PodSpec{
			RestartPolicy:                 v1.RestartPolicyAlways,
			TerminationGracePeriodSeconds: &grace,
			Containers:                    []v1.Container{web, api},
		},
	}
}

func ptr[T any](v T) *T { return &v }
