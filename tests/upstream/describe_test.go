package upstream

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/client-go/kubernetes/fake"
	kubectldescribe "k8s.io/kubectl/pkg/describe"

	"github.com/probeactor/probeactor/internal/describe"
)

// notNodes are kubectl describe's lines for what a node's pod has none of (internal/describe's
// doc: no mounts, volumes, QoS class, node selectors or tolerations).
var notNodes = regexp.MustCompile(`^(Mounts|Volumes|QoS Class|Node-Selectors|Tolerations):`)

// TestDescribeIsKubectls: on 2,000 random pods with their events, `node describe`'s text (package
// internal/describe, given no live probe states) is kubectl 1.37's PodDescriber's (k8s.io/kubectl
// v0.37.2 over a fake clientset), line for line with runs of blanks as one, but for the lines of
// what node has none of. The pods carry what a node's pod can: labels and annotations (long,
// multi-line, kubectl apply's), deletion, node and IPs, an owner, priority, a service account,
// readiness gates, init containers, sidecars and app containers with ports, multi-line commands
// and args, env values (multi-line) and the downward API fields kubectl resolves, probes of every
// kind, every container state, last states and missing statuses, conditions; and events, counted
// and not, with and without a container's field path; with kubectl's ShowEvents on and off.
func TestDescribeIsKubectls(t *testing.T) {
	t.Parallel()
	r := rand.New(rand.NewPCG(59, 61))
	for i := range 2000 {
		now := time.Now()
		pod := randomPrintedPod(r, now)
		decorate(r, pod, now)
		events := randomEvents(r, pod, now)
		showEvents := r.IntN(8) != 0 // --show-events=false, or several pods described at once

		objs := []runtime.Object{pod}
		for i := range events {
			objs = append(objs, &events[i])
		}
		d := kubectldescribe.PodDescriber{Interface: fake.NewClientset(objs...)}
		var theirs string
		at := clockOf(t, now, func() {
			var err error
			theirs, err = d.Describe(pod.Namespace, pod.Name, kubectldescribe.DescriberSettings{ShowEvents: showEvents, ChunkSize: 500})
			require.NoError(t, err)
		})
		var ours bytes.Buffer
		require.NoError(t, describe.PrintWith(&ours, describe.NewDocument("x", *pod, nil, events, at), at, describe.Settings{ShowEvents: showEvents}))
		if !assert.Equal(t, describeLines(theirs, true), describeLines(ours.String(), false), "pod %d", i) {
			t.FailNow()
		}
	}
}

// describeLines are a description's lines, blanks collapsed (alignment is tabwriter's, the same
// settings on both sides); kubectl's lines for what node has none of are dropped.
func describeLines(s string, kubectl bool) []string {
	var out []string
	for _, l := range strings.Split(strings.TrimRight(s, "\n"), "\n") {
		if kubectl && notNodes.MatchString(strings.TrimSpace(l)) {
			continue
		}
		out = append(out, strings.Join(strings.Fields(l), " "))
	}
	return out
}

// decorate gives a random pod (randomPrintedPod) the rest of what describe prints.
func decorate(r *rand.Rand, p *v1.Pod, now time.Time) {
	p.TypeMeta = metav1.TypeMeta{Kind: "Pod", APIVersion: "v1"}
	p.UID = "uid-1"
	if r.IntN(2) == 0 {
		p.Labels = map[string]string{"app": "web", "tier": "front"}
	}
	if r.IntN(2) == 0 {
		p.Annotations = map[string]string{"note": "short\n", "doc": "line one\nline two", "long": strings.Repeat("x", 150),
			v1.LastAppliedConfigAnnotation: `{"kind":"Pod"}`}
	}
	if p.DeletionTimestamp != nil {
		p.DeletionGracePeriodSeconds = ptr(int64(pickOf(r, 0, 30)))
	}
	if r.IntN(2) == 0 {
		p.Spec.NodeName, p.Status.HostIP = "n1", pickOf(r, "", "10.0.0.5")
	}
	if r.IntN(2) == 0 {
		p.Status.PodIP = "127.0.0.1"
		p.Status.PodIPs = []v1.PodIP{{IP: "127.0.0.1"}}
		if r.IntN(2) == 0 {
			p.Status.PodIPs = append(p.Status.PodIPs, v1.PodIP{IP: "::1"})
		}
	}
	if r.IntN(3) == 0 {
		p.Status.StartTime = &metav1.Time{Time: now.Add(-time.Hour)}
	}
	if r.IntN(4) == 0 {
		p.OwnerReferences = []metav1.OwnerReference{{Kind: "Job", Name: "nightly", Controller: ptr(true)}}
	}
	if r.IntN(4) == 0 {
		p.Spec.Priority, p.Spec.PriorityClassName, p.Spec.ServiceAccountName = ptr(int32(100)), "high", "runner"
	}
	if r.IntN(4) == 0 {
		p.Spec.ReadinessGates = []v1.PodReadinessGate{{ConditionType: v1.PodReady}, {ConditionType: "example.com/missing"}}
	}
	if r.IntN(5) == 0 {
		p.Status.Message = "the node was low on memory"
	}
	for _, list := range [][]v1.ContainerStatus{p.Status.InitContainerStatuses, p.Status.ContainerStatuses} {
		for i := range list {
			list[i].ContainerID, list[i].ImageID = "proc://"+list[i].Name, "busybox"
			if t := list[i].State.Terminated; t != nil {
				t.StartedAt, t.FinishedAt, t.Message = metav1.NewTime(now.Add(-time.Minute)), metav1.NewTime(now.Add(-time.Second)), pickOf(r, "", "killed")
			}
		}
	}
	for _, set := range [][]v1.Container{p.Spec.InitContainers, p.Spec.Containers} {
		for i := range set {
			c := &set[i]
			c.Image = "busybox"
			c.Command = pickOf(r, []string{"sleep", "1"}, []string{"sh", "-c", "echo a\necho b"}, nil)
			c.Args = pickOf(r, nil, []string{"--port=8080"})
			for range r.IntN(3) {
				c.Ports = append(c.Ports, v1.ContainerPort{Name: pickOf(r, "", "http"), ContainerPort: int32(8080 + r.IntN(10)),
					HostPort: int32(pickOf(r, 0, 80)), Protocol: pickOf(r, v1.ProtocolTCP, v1.ProtocolUDP)})
			}
			for range r.IntN(3) {
				e := v1.EnvVar{Name: pickOf(r, "A", "MULTI", "POD", "NS")}
				switch e.Name {
				case "POD":
					e.ValueFrom = &v1.EnvVarSource{FieldRef: &v1.ObjectFieldSelector{APIVersion: "v1", FieldPath: "metadata.name"}}
				case "NS":
					e.ValueFrom = &v1.EnvVarSource{FieldRef: &v1.ObjectFieldSelector{APIVersion: "v1", FieldPath: "metadata.namespace"}}
				default:
					e.Value = pickOf(r, "", "v", "a\nb")
				}
				c.Env = append(c.Env, e)
			}
			for _, slot := range []**v1.Probe{&c.LivenessProbe, &c.ReadinessProbe, &c.StartupProbe} {
				if r.IntN(2) == 0 {
					*slot = randomProbe(r)
				}
			}
		}
	}
}

func randomProbe(r *rand.Rand) *v1.Probe {
	p := &v1.Probe{InitialDelaySeconds: int32(r.IntN(3)), TimeoutSeconds: 1, PeriodSeconds: 10, SuccessThreshold: 1, FailureThreshold: 3}
	switch r.IntN(4) {
	case 0:
		p.Exec = &v1.ExecAction{Command: []string{"cat", "/tmp/healthy"}}
	case 1:
		p.HTTPGet = &v1.HTTPGetAction{Path: "/healthz", Port: pickOf(r, intstr.FromInt32(8080), intstr.FromString("http")),
			Host: pickOf(r, "", "10.0.0.1"), Scheme: pickOf(r, v1.URISchemeHTTP, v1.URISchemeHTTPS)}
	case 2:
		p.TCPSocket = &v1.TCPSocketAction{Port: intstr.FromInt32(6379)}
	default: // kubectl dereferences the service: it must be set here
		p.GRPC = &v1.GRPCAction{Port: 9000, Service: ptr(pickOf(r, "", "health"))}
	}
	return p
}

// randomEvents are the pod's events, each at its own time (kubectl sorts them unstably).
func randomEvents(r *rand.Rand, p *v1.Pod, now time.Time) []v1.Event {
	var out []v1.Event
	for i := range r.IntN(4) {
		last := now.Add(-time.Duration(10*i+r.IntN(5)) * time.Second)
		e := v1.Event{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("e%d", i), Namespace: p.Namespace},
			InvolvedObject: v1.ObjectReference{Kind: "Pod", Namespace: p.Namespace, Name: p.Name, UID: p.UID},
			Type:           pickOf(r, v1.EventTypeNormal, v1.EventTypeWarning), Reason: pickOf(r, "Started", "Unhealthy", "BackOff"),
			Message: pickOf(r, "Container started", "Liveness probe failed: x ", "Back-off restarting failed container app0"),
			Count:   int32(pickOf(r, 0, 1, 4)), Source: v1.EventSource{Component: pickOf(r, "kubelet", "")},
			ReportingController: "kubelet", FirstTimestamp: metav1.NewTime(last.Add(-time.Duration(r.IntN(300)) * time.Second)),
			LastTimestamp: metav1.NewTime(last)}
		if r.IntN(2) == 0 {
			e.InvolvedObject.FieldPath = "spec.containers{app0}"
		}
		out = append(out, e)
	}
	return out
}
