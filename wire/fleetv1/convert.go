package fleetv1

import (
	"errors"
	"fmt"
	"maps"
	"time"

	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/reflect/protoreflect"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	metav1validation "k8s.io/apimachinery/pkg/apis/meta/v1/validation"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/probeactor/probeactor/messages"
)

// FromProbeType converts a probe type to its wire form.
func FromProbeType(t messages.ProbeType) ProbeType {
	switch t {
	case messages.Liveness:
		return ProbeType_PROBE_TYPE_LIVENESS
	case messages.Readiness:
		return ProbeType_PROBE_TYPE_READINESS
	case messages.Startup:
		return ProbeType_PROBE_TYPE_STARTUP
	default:
		return ProbeType_PROBE_TYPE_UNSPECIFIED
	}
}

// ToProbeType converts a wire probe type back; unspecified or unknown values are an error.
func ToProbeType(t ProbeType) (messages.ProbeType, error) {
	switch t {
	case ProbeType_PROBE_TYPE_LIVENESS:
		return messages.Liveness, nil
	case ProbeType_PROBE_TYPE_READINESS:
		return messages.Readiness, nil
	case ProbeType_PROBE_TYPE_STARTUP:
		return messages.Startup, nil
	default:
		return 0, fmt.Errorf("probe type %d: not liveness, readiness or startup", int32(t))
	}
}

// FromResult converts a probe result to its wire form.
func FromResult(r messages.Result) Result {
	switch r {
	case messages.Unknown:
		return Result_RESULT_UNKNOWN
	case messages.Success:
		return Result_RESULT_SUCCESS
	case messages.Failure:
		return Result_RESULT_FAILURE
	default:
		return Result_RESULT_UNSPECIFIED
	}
}

// ToResult converts a wire result back; unspecified or unknown values are an error.
func ToResult(r Result) (messages.Result, error) {
	switch r {
	case Result_RESULT_UNKNOWN:
		return messages.Unknown, nil
	case Result_RESULT_SUCCESS:
		return messages.Success, nil
	case Result_RESULT_FAILURE:
		return messages.Failure, nil
	default:
		return 0, fmt.Errorf("result %d: not unknown, success or failure", int32(r))
	}
}

// FromResultChanged converts one result change to its wire form.
func FromResultChanged(c messages.ResultChanged) *ResultChanged {
	return &ResultChanged{
		PodUid:      string(c.PodUID),
		Container:   c.Container,
		ContainerId: string(c.ContainerID),
		Type:        FromProbeType(c.Type),
		Result:      FromResult(c.Result),
	}
}

// ToResultChanged converts a wire result change back, rejecting what no node sends.
func ToResultChanged(c *ResultChanged) (messages.ResultChanged, error) {
	if c.GetPodUid() == "" || c.GetContainer() == "" {
		return messages.ResultChanged{}, errors.New("result change without pod_uid or container")
	}
	pt, err := ToProbeType(c.GetType())
	if err != nil {
		return messages.ResultChanged{}, err
	}
	r, err := ToResult(c.GetResult())
	if err != nil {
		return messages.ResultChanged{}, err
	}
	return messages.ResultChanged{
		PodUID:      types.UID(c.GetPodUid()),
		Container:   c.GetContainer(),
		ContainerID: messages.ContainerID(c.GetContainerId()),
		Type:        pt,
		Result:      r,
	}, nil
}

// FromPod converts a pod (identity, the spec fields a pod list shows, and pod.Status) to its wire
// form. The status travels in Kubernetes' own protobuf encoding.
func FromPod(pod *v1.Pod) (*PodChanged, error) {
	if pod.UID == "" {
		return nil, fmt.Errorf("pod %s/%s has no UID", pod.Namespace, pod.Name)
	}
	status, err := pod.Status.Marshal()
	if err != nil {
		return nil, fmt.Errorf("pod %s/%s: encode status: %w", pod.Namespace, pod.Name, err)
	}
	meta := &PodMeta{Namespace: pod.Namespace, Name: pod.Name, Labels: maps.Clone(pod.Labels)}
	if !pod.CreationTimestamp.IsZero() {
		meta.CreationUnixNano = pod.CreationTimestamp.UnixNano()
	}
	for i := range pod.Spec.Containers {
		c := &pod.Spec.Containers[i]
		cm := &ContainerMeta{Name: c.Name, Image: c.Image}
		if err := cm.setProbes(c); err != nil {
			return nil, fmt.Errorf("pod %s/%s: %w", pod.Namespace, pod.Name, err)
		}
		meta.Containers = append(meta.Containers, cm)
	}
	for i := range pod.Spec.InitContainers {
		c := &pod.Spec.InitContainers[i]
		restartable := c.RestartPolicy != nil && *c.RestartPolicy == v1.ContainerRestartPolicyAlways
		cm := &ContainerMeta{Name: c.Name, Image: c.Image, Restartable: restartable}
		if err := cm.setProbes(c); err != nil {
			return nil, fmt.Errorf("pod %s/%s: %w", pod.Namespace, pod.Name, err)
		}
		meta.InitContainers = append(meta.InitContainers, cm)
	}
	return &PodChanged{Uid: string(pod.UID), Meta: meta, Status: status}, nil
}

// setProbes encodes c's probes (node describe shows them from the aggregator).
func (m *ContainerMeta) setProbes(c *v1.Container) error {
	for _, p := range []struct {
		probe *v1.Probe
		out   *[]byte
	}{{c.LivenessProbe, &m.LivenessProbe}, {c.ReadinessProbe, &m.ReadinessProbe}, {c.StartupProbe, &m.StartupProbe}} {
		if p.probe == nil {
			continue
		}
		b, err := p.probe.Marshal()
		if err != nil {
			return fmt.Errorf("container %s: encode probe: %w", c.Name, err)
		}
		*p.out = b
	}
	return nil
}

// probes decodes the probes setProbes encoded into c.
func (m *ContainerMeta) probes(c *v1.Container) error {
	for _, p := range []struct {
		in  []byte
		out **v1.Probe
	}{{m.GetLivenessProbe(), &c.LivenessProbe}, {m.GetReadinessProbe(), &c.ReadinessProbe}, {m.GetStartupProbe(), &c.StartupProbe}} {
		if len(p.in) == 0 {
			continue
		}
		probe := &v1.Probe{}
		if err := probe.Unmarshal(p.in); err != nil {
			return fmt.Errorf("container %s: decode probe: %w", m.GetName(), err)
		}
		*p.out = probe
	}
	return nil
}

// RemovedPod is the wire form of "the pod with this UID left the node".
func RemovedPod(uid types.UID) *PodChanged { return &PodChanged{Uid: string(uid), Removed: true} }

// DecodeStatus decodes a pod status sent in Kubernetes' protobuf encoding.
func DecodeStatus(b []byte) (v1.PodStatus, error) {
	var st v1.PodStatus
	if err := st.Unmarshal(b); err != nil {
		return v1.PodStatus{}, fmt.Errorf("decode pod status: %w", err)
	}
	return st, nil
}

// FromNodeObject is the wire form of a node's own Node object (Changes.node_object): n without its
// conditions (the aggregator makes its own Ready, and a node's other conditions travel as
// NodeCondition), its managed fields or its resource version.
func FromNodeObject(n *v1.Node) ([]byte, error) {
	c := n.DeepCopy()
	c.Status.Conditions = nil
	c.ManagedFields, c.ResourceVersion = nil, ""
	b, err := c.Marshal()
	if err != nil {
		return nil, fmt.Errorf("encode node object: %w", err)
	}
	return b, nil
}

// DecodeNodeObject decodes a node's own Node object sent in Kubernetes' protobuf encoding.
func DecodeNodeObject(b []byte) (*v1.Node, error) {
	var n v1.Node
	if err := n.Unmarshal(b); err != nil {
		return nil, fmt.Errorf("decode node object: %w", err)
	}
	return &n, nil
}

// ToPod rebuilds the pod a PodChanged describes (Removed must be false): metadata, the containers'
// names, images and probes (and sidecars' restart policy), spec.nodeName = node, and the decoded
// status.
func ToPod(p *PodChanged, node string) (*v1.Pod, error) {
	if p.GetRemoved() {
		return nil, fmt.Errorf("pod %s: removed, nothing to rebuild", p.GetUid())
	}
	m := p.GetMeta()
	if p.GetUid() == "" || m.GetName() == "" {
		return nil, errors.New("pod without uid or name")
	}
	st, err := DecodeStatus(p.GetStatus())
	if err != nil {
		return nil, fmt.Errorf("pod %s/%s: %w", m.GetNamespace(), m.GetName(), err)
	}
	pod := &v1.Pod{
		TypeMeta:   metav1.TypeMeta{Kind: "Pod", APIVersion: "v1"},
		ObjectMeta: metav1.ObjectMeta{Namespace: m.GetNamespace(), Name: m.GetName(), UID: types.UID(p.GetUid()), Labels: maps.Clone(m.GetLabels())},
		Spec:       v1.PodSpec{NodeName: node},
		Status:     st,
	}
	if n := m.GetCreationUnixNano(); n != 0 {
		pod.CreationTimestamp = metav1.NewTime(time.Unix(0, n))
	}
	for _, c := range m.GetContainers() {
		cc := v1.Container{Name: c.GetName(), Image: c.GetImage()}
		if err := c.probes(&cc); err != nil {
			return nil, fmt.Errorf("pod %s/%s: %w", m.GetNamespace(), m.GetName(), err)
		}
		pod.Spec.Containers = append(pod.Spec.Containers, cc)
	}
	for _, c := range m.GetInitContainers() {
		ic := v1.Container{Name: c.GetName(), Image: c.GetImage()}
		if c.GetRestartable() {
			always := v1.ContainerRestartPolicyAlways
			ic.RestartPolicy = &always
		}
		if err := c.probes(&ic); err != nil {
			return nil, fmt.Errorf("pod %s/%s: %w", m.GetNamespace(), m.GetName(), err)
		}
		pod.Spec.InitContainers = append(pod.Spec.InitContainers, ic)
	}
	return pod, nil
}

// Validate checks what the aggregator relies on before it applies a batch: a node name, an
// incarnation, and well-formed results and pods (every status decodes). It returns the first
// problem, naming the field.
func (c *Changes) Validate() error {
	if c.GetNode() == "" {
		return errors.New("changes: node is empty")
	}
	if c.GetIncarnation() == 0 {
		return errors.New("changes: incarnation is 0")
	}
	if c.GetSeq() == 0 {
		return errors.New("changes: seq is 0")
	}
	for i, r := range c.GetResults() {
		if _, err := ToResultChanged(r); err != nil {
			return fmt.Errorf("changes: results[%d]: %w", i, err)
		}
	}
	for i, p := range c.GetPods() {
		if p.GetUid() == "" {
			return fmt.Errorf("changes: pods[%d]: uid is empty", i)
		}
		if p.GetRemoved() {
			continue
		}
		if p.GetMeta().GetName() == "" {
			return fmt.Errorf("changes: pods[%d]: meta.name is empty", i)
		}
		if errs := metav1validation.ValidateLabels(p.GetMeta().GetLabels(), field.NewPath("meta", "labels")); len(errs) > 0 {
			return fmt.Errorf("changes: pods[%d]: %w", i, errs.ToAggregate())
		}
		if _, err := DecodeStatus(p.GetStatus()); err != nil {
			return fmt.Errorf("changes: pods[%d]: %w", i, err)
		}
		for _, c := range append(append([]*ContainerMeta{}, p.GetMeta().GetContainers()...), p.GetMeta().GetInitContainers()...) {
			if err := c.probes(&v1.Container{}); err != nil {
				return fmt.Errorf("changes: pods[%d]: %w", i, err)
			}
		}
	}
	if b := c.GetNodeObject(); len(b) > 0 {
		if _, err := DecodeNodeObject(b); err != nil {
			return fmt.Errorf("changes: node_object: %w", err)
		}
	}
	if u := c.GetUsage(); u != nil {
		if err := u.Validate(); err != nil {
			return fmt.Errorf("changes: %w", err)
		}
	}
	for i, nc := range c.GetConditions() {
		switch {
		case nc.GetType() == "" || nc.GetType() == "Ready":
			return fmt.Errorf("changes: conditions[%d]: type %q: a condition of the node's own other than Ready", i, nc.GetType())
		case nc.GetStatus() != "True" && nc.GetStatus() != "False" && nc.GetStatus() != "Unknown":
			return fmt.Errorf("changes: conditions[%d]: status %q: True, False or Unknown", i, nc.GetStatus())
		}
	}
	return nil
}

// Validate checks a Usage: a window, and a namespace and name for every pod and a name for every
// container, each once.
func (u *Usage) Validate() error {
	if u.GetTimestampUnixNano() <= 0 || u.GetWindowNanos() <= 0 {
		return fmt.Errorf("usage: timestamp %d, window %d: both must be positive", u.GetTimestampUnixNano(), u.GetWindowNanos())
	}
	pods := make(map[[2]string]bool, len(u.GetPods()))
	for i, p := range u.GetPods() {
		k := [2]string{p.GetNamespace(), p.GetName()}
		switch {
		case k[0] == "" || k[1] == "":
			return fmt.Errorf("usage: pods[%d]: namespace %q, name %q: both are required", i, k[0], k[1])
		case pods[k]:
			return fmt.Errorf("usage: pods[%d]: %s/%s: listed twice", i, k[0], k[1])
		}
		pods[k] = true
		names := make(map[string]bool, len(p.GetContainers()))
		for j, c := range p.GetContainers() {
			switch {
			case c.GetName() == "":
				return fmt.Errorf("usage: pods[%d].containers[%d]: name is empty", i, j)
			case names[c.GetName()]:
				return fmt.Errorf("usage: pods[%d].containers[%d]: %q listed twice", i, j, c.GetName())
			}
			names[c.GetName()] = true
		}
	}
	return nil
}

// Validate checks a Hello: a node name and an incarnation.
func (h *Hello) Validate() error {
	if h.GetNode() == "" {
		return errors.New("hello: node is empty")
	}
	if h.GetIncarnation() == 0 {
		return errors.New("hello: incarnation is 0")
	}
	return nil
}

// Validate checks a Heartbeat: a node name and an incarnation.
func (h *Heartbeat) Validate() error {
	if h.GetNode() == "" {
		return errors.New("heartbeat: node is empty")
	}
	if h.GetIncarnation() == 0 {
		return errors.New("heartbeat: incarnation is 0")
	}
	return nil
}

// ToAggregator lists the full names of the messages a node sends to the aggregator, for the
// aggregator's allow-list (remotesec.Guard).
func ToAggregator() []string {
	return names(&Hello{}, &Changes{}, &Heartbeat{})
}

// ToNode lists the full names of the messages the aggregator sends to a node, for the node's
// allow-list (remotesec.Guard).
func ToNode() []string {
	return names(&Welcome{}, &Ack{})
}

func names(ms ...interface{ ProtoReflect() protoreflect.Message }) []string {
	out := make([]string, 0, len(ms))
	for _, m := range ms {
		out = append(out, string(m.ProtoReflect().Descriptor().FullName()))
	}
	return out
}

// NodeName returns the node a Hello, Changes or Heartbeat speaks for, read from its serialized
// form without decoding the rest (all three carry it as field 1). ok is false for other types.
func NodeName(typeName string, data []byte) (node string, ok bool, err error) {
	switch typeName {
	case "probeactor.fleet.v1.Hello", "probeactor.fleet.v1.Changes", "probeactor.fleet.v1.Heartbeat":
	default:
		return "", false, nil
	}
	for len(data) > 0 {
		num, typ, n := protowire.ConsumeTag(data)
		if n < 0 {
			return "", true, fmt.Errorf("%s: %w", typeName, protowire.ParseError(n))
		}
		data = data[n:]
		if num == 1 && typ == protowire.BytesType {
			v, n := protowire.ConsumeBytes(data)
			if n < 0 {
				return "", true, fmt.Errorf("%s: %w", typeName, protowire.ParseError(n))
			}
			node = string(v) // the last occurrence wins, as in proto.Unmarshal
			data = data[n:]
			continue
		}
		n = protowire.ConsumeFieldValue(num, typ, data)
		if n < 0 {
			return "", true, fmt.Errorf("%s: %w", typeName, protowire.ParseError(n))
		}
		data = data[n:]
	}
	return node, true, nil
}
