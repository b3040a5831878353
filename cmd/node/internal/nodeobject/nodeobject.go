package nodeobject

import (
	"strings"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// kubelet 1.37's Ready condition (pkg/kubelet/nodestatus, ReadyCondition).
const (
	ReadyReason    = "KubeletReady"
	ReadyMessage   = "kubelet is posting ready status"
	NotReadyReason = "KubeletNotReady"
)

// KubeletRelease is the kubelet whose semantics node implements (probes, restarts, the API's
// paths and shapes).
const KubeletRelease = "v1.37.2"

// RuntimeType is status.nodeInfo.containerRuntimeVersion's scheme: node's process runtime.
const RuntimeType = "probeactor-node"

// Info is every fact Build reports: the machine's (Host) and node's own.
type Info struct {
	// Name is metadata.name: --node-name, else Host.Hostname (kubelet's node name without a cloud
	// provider).
	Name    string
	Created time.Time // metadata.creationTimestamp: when node started
	Host    Host
	// OS and Arch are the labels' and nodeInfo's operating system and architecture (kubelet's:
	// runtime.GOOS and runtime.GOARCH).
	OS, Arch string
	// NodeVersion is node's version (`node version`): in containerRuntimeVersion and
	// kubeletVersion (KubeletVersion).
	NodeVersion string
	Port        int // status.daemonEndpoints.kubeletEndpoint.port: node's API
	// Now is every condition's lastHeartbeatTime.
	Now time.Time
	// Failures are the health checks that fail now, "name: error" each (health.Failures); none:
	// Ready is True.
	Failures []string
	// ReadySince is when Ready took its current value (lastTransitionTime).
	ReadySince time.Time
	// Conditions are node's own beyond Ready (a cluster member's ClusterQuorum), with their
	// transitions; Build sets their heartbeat.
	Conditions []v1.NodeCondition
}

// Build is the v1.Node that kubelet 1.37 would register and keep posting for in's machine, less
// what node does not do (doc.go). Pure.
func Build(in Info) v1.Node {
	labels := map[string]string{
		v1.LabelOSStable:          in.OS,
		v1.LabelArchStable:        in.Arch,
		"beta.kubernetes.io/os":   in.OS, // kubelet's apis.LabelOS and LabelArch, still set by 1.37
		"beta.kubernetes.io/arch": in.Arch,
	}
	var addresses []v1.NodeAddress
	if in.Host.Hostname != "" {
		labels[v1.LabelHostname] = in.Host.Hostname
		addresses = []v1.NodeAddress{{Type: v1.NodeHostName, Address: in.Host.Hostname}}
	}
	capacity := v1.ResourceList{ // cadvisor.CapacityFromMachineInfo's quantities: "16", "16374232Ki"
		v1.ResourceCPU:    *resource.NewMilliQuantity(int64(in.Host.CPUs)*1000, resource.DecimalSI),
		v1.ResourceMemory: *resource.NewQuantity(in.Host.Memory, resource.BinarySI),
	}
	now := metav1.NewTime(in.Now)
	conditions := make([]v1.NodeCondition, 0, len(in.Conditions)+1)
	for _, c := range in.Conditions {
		c.LastHeartbeatTime = now
		conditions = append(conditions, c)
	}
	// Ready last, as kubelet keeps it (skewed control planes read the last one).
	conditions = append(conditions, readyCondition(in.Failures, now, metav1.NewTime(in.ReadySince)))
	return v1.Node{
		TypeMeta: metav1.TypeMeta{Kind: "Node", APIVersion: "v1"},
		ObjectMeta: metav1.ObjectMeta{
			Name:              in.Name,
			CreationTimestamp: metav1.NewTime(in.Created),
			Labels:            labels,
		},
		Status: v1.NodeStatus{
			Capacity:    capacity,
			Allocatable: capacity.DeepCopy(), // node reserves nothing
			Conditions:  conditions,
			Addresses:   addresses,
			DaemonEndpoints: v1.NodeDaemonEndpoints{
				KubeletEndpoint: v1.DaemonEndpoint{Port: int32(in.Port)}, //nolint:gosec // a TCP port
			},
			NodeInfo: v1.NodeSystemInfo{
				MachineID:               in.Host.MachineID,
				SystemUUID:              in.Host.SystemUUID,
				BootID:                  in.Host.BootID,
				KernelVersion:           in.Host.KernelVersion,
				OSImage:                 in.Host.OSImage,
				OperatingSystem:         in.OS,
				Architecture:            in.Arch,
				ContainerRuntimeVersion: RuntimeType + "://" + in.NodeVersion,
				KubeletVersion:          KubeletVersion(in.NodeVersion),
			},
		},
	}
}

// readyCondition is kubelet's Ready: True while nothing fails, else False with the failures as
// kubelet aggregates its errors (one: itself; several: "[a, b]").
func readyCondition(failures []string, now, since metav1.Time) v1.NodeCondition {
	c := v1.NodeCondition{Type: v1.NodeReady, Status: v1.ConditionTrue, Reason: ReadyReason, Message: ReadyMessage,
		LastHeartbeatTime: now, LastTransitionTime: since}
	switch len(failures) {
	case 0:
	case 1:
		c.Status, c.Reason, c.Message = v1.ConditionFalse, NotReadyReason, failures[0]
	default:
		c.Status, c.Reason, c.Message = v1.ConditionFalse, NotReadyReason, "["+strings.Join(failures, ", ")+"]"
	}
	return c
}

// KubeletVersion is status.nodeInfo.kubeletVersion: the kubelet release node implements, with
// node's version as semver build metadata ("v1.37.2+probeactor.dev"), as k3s reports
// "v1.30.4+k3s1": a version check reads 1.37.2, a person reads that this is not kubelet. What
// build metadata may not hold (anything but [0-9A-Za-z-] and dots) becomes "-".
func KubeletVersion(nodeVersion string) string {
	meta := strings.Map(func(r rune) rune {
		if r == '.' || r == '-' || r >= '0' && r <= '9' || r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' {
			return r
		}
		return '-'
	}, nodeVersion)
	meta = strings.Trim(meta, ".")
	for strings.Contains(meta, "..") { // no empty identifier
		meta = strings.ReplaceAll(meta, "..", ".")
	}
	if meta == "" {
		return KubeletRelease + "+probeactor"
	}
	return KubeletRelease + "+probeactor." + meta
}
