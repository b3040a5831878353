package aggregator

import (
	"fmt"
	"maps"
	"slices"
	"sort"
	"strings"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/probeactor/probeactor/messages"
	"github.com/probeactor/probeactor/wire/fleetv1"
)

// Texts of the node lifecycle controller and kubelet that the aggregator reproduces.
const (
	readyReason          = "KubeletReady"
	readyMessage         = "kubelet is posting ready status"
	unknownReason        = "NodeStatusUnknown"
	unknownMessage       = "Kubelet stopped posting node status."
	maxEvents            = 1000
	eventSourceComponent = "node-controller"
)

// Book is the aggregator's state and every decision it makes: which batch to apply, which to
// drop, when a node turns Unknown. It is pure (time is a parameter) and not safe for concurrent
// use; the fleet actor owns one.
type Book struct {
	incarnation uint64 // the aggregator's own, in every Ack and Welcome
	grace       time.Duration
	nodes       map[string]*nodeState
	events      []v1.Event // oldest first, at most maxEvents
	eventSeq    uint64
	stats       Stats
}

// Stats are cumulative counters and current sizes, for metrics.
type Stats struct {
	Batches        map[fleetv1.AckStatus]uint64 // Changes answered, by status
	ChangesApplied uint64                       // result and pod changes applied
	Keys           int                          // result keys held, all nodes
	Pods           int                          // pods held, all nodes
}

// resultKey is a probe worker's identity on a node: the aggregator keeps the latest result per
// probe (a restarted container's new ID replaces the old entry instead of adding one).
type resultKey struct {
	podUID    string
	container string
	typ       messages.ProbeType
}

type resultValue struct {
	containerID string
	result      messages.Result
}

type nodeState struct {
	name        string
	incarnation uint64
	address     string
	lastSeq     uint64
	baseline    bool      // a snapshot was applied in this incarnation and every delta since
	created     time.Time // first contact ever (the node's creationTimestamp)
	lastContact time.Time // last Hello, Changes or Heartbeat of the current incarnation
	ready       bool      // Ready True (else Unknown)
	transition  time.Time // last Ready transition
	results     map[resultKey]resultValue
	pods        map[string]*fleetv1.PodChanged    // by UID; Removed never stored
	conditions  map[string]*fleetv1.NodeCondition // the node's own, by type (beyond Ready)
	object      *v1.Node                          // the node's own Node object (its /nodes), if it sent one
	usage       *fleetv1.Usage                    // the node's latest sampling window, if any (validated)
	usageAt     time.Time                         // when the aggregator received it
}

// NewBook returns an empty book. incarnation identifies this aggregator process (its start time
// in Unix nanoseconds); grace is --node-monitor-grace-period.
func NewBook(incarnation uint64, grace time.Duration) *Book {
	return &Book{incarnation: incarnation, grace: grace, nodes: map[string]*nodeState{},
		stats: Stats{Batches: map[fleetv1.AckStatus]uint64{}}}
}

// Hello registers a node (or a node's new incarnation) and answers with the aggregator's
// incarnation. A Hello of an older incarnation changes nothing.
func (b *Book) Hello(h *fleetv1.Hello, now time.Time) *fleetv1.Welcome {
	w := &fleetv1.Welcome{AggregatorIncarnation: b.incarnation}
	if h.Validate() != nil {
		return w
	}
	n := b.session(h.GetNode(), h.GetIncarnation(), now)
	if n != nil && h.GetAddress() != "" {
		n.address = h.GetAddress()
	}
	return w
}

// session returns the node's state for a message of incarnation inc, creating the node or
// adopting a newer incarnation (a restarted node: no baseline until its snapshot), and records
// the contact. It returns nil for an older incarnation.
func (b *Book) session(name string, inc uint64, now time.Time) *nodeState {
	n, ok := b.nodes[name]
	switch {
	case !ok:
		n = &nodeState{name: name, incarnation: inc, created: now, transition: now, ready: true,
			results: map[resultKey]resultValue{}, pods: map[string]*fleetv1.PodChanged{}}
		b.nodes[name] = n
		b.event(now, nodeRef(name), v1.EventTypeNormal, "RegisteredNode", fmt.Sprintf("Node %s event: Registered Node %s in Controller", name, name))
	case inc < n.incarnation:
		return nil
	case inc > n.incarnation:
		n.incarnation, n.lastSeq, n.baseline = inc, 0, false
		n.usage = nil // the previous node process's windows: its containers are gone with it
		b.event(now, nodeRef(name), v1.EventTypeWarning, "Rebooted", fmt.Sprintf("Node %s has been rebooted, boot id: %d", name, inc))
	}
	n.lastContact = now
	if !n.ready {
		n.ready, n.transition = true, now
		b.event(now, nodeRef(name), v1.EventTypeNormal, "NodeReady", fmt.Sprintf("Node %s status is now: NodeReady", name))
	}
	return n
}

// Apply decides what to do with a batch and does it; the Ack says what happened:
//   - INVALID: the batch breaks the protocol (Validate) and is dropped;
//   - STALE: an older incarnation than the one held;
//   - DUPLICATE: seq was already applied (a replay or a late copy): nothing changes;
//   - RESYNC: a delta without a baseline (new node, new incarnation, or a gap in seq): dropped,
//     and the node must send a snapshot;
//   - APPLIED: a snapshot replaced the node's view, or a delta seq = last+1 was applied.
//
// So a late or replayed batch never moves a key backwards, and the view is always a snapshot plus
// every delta after it, in order.
func (b *Book) Apply(c *fleetv1.Changes, now time.Time) *fleetv1.Ack {
	ack := &fleetv1.Ack{Seq: c.GetSeq(), AggregatorIncarnation: b.incarnation}
	ack.Status = b.apply(c, now)
	b.stats.Batches[ack.Status]++
	return ack
}

func (b *Book) apply(c *fleetv1.Changes, now time.Time) fleetv1.AckStatus {
	if c.Validate() != nil {
		return fleetv1.AckStatus_ACK_STATUS_INVALID
	}
	if n, ok := b.nodes[c.GetNode()]; !ok && !c.GetSnapshot() {
		return fleetv1.AckStatus_ACK_STATUS_RESYNC // nothing known yet: not even a contact
	} else if ok && c.GetIncarnation() < n.incarnation {
		return fleetv1.AckStatus_ACK_STATUS_STALE
	}
	n := b.session(c.GetNode(), c.GetIncarnation(), now)
	switch {
	case c.GetSeq() <= n.lastSeq:
		return fleetv1.AckStatus_ACK_STATUS_DUPLICATE
	case c.GetSnapshot():
		b.stats.Keys -= len(n.results)
		b.stats.Pods -= len(n.pods)
		n.results = make(map[resultKey]resultValue, len(c.GetResults()))
		n.pods = make(map[string]*fleetv1.PodChanged, len(c.GetPods()))
		n.conditions, n.object, n.usage = nil, nil, nil
		b.applyChanges(n, c, now)
		n.lastSeq, n.baseline = c.GetSeq(), true
		return fleetv1.AckStatus_ACK_STATUS_APPLIED
	case !n.baseline:
		return fleetv1.AckStatus_ACK_STATUS_RESYNC
	case c.GetSeq() != n.lastSeq+1:
		n.baseline = false // a batch is missing: only a snapshot can repair the view
		return fleetv1.AckStatus_ACK_STATUS_RESYNC
	default:
		b.applyChanges(n, c, now)
		n.lastSeq = c.GetSeq()
		return fleetv1.AckStatus_ACK_STATUS_APPLIED
	}
}

// applyChanges applies a validated batch's results, then its pods, in order, then what it says
// of the node (its Node object, usage and conditions), received at now.
func (b *Book) applyChanges(n *nodeState, c *fleetv1.Changes, now time.Time) {
	for _, r := range c.GetResults() {
		rc, _ := fleetv1.ToResultChanged(r) // validated
		k := resultKey{podUID: string(rc.PodUID), container: rc.Container, typ: rc.Type}
		if _, ok := n.results[k]; !ok {
			b.stats.Keys++
		}
		n.results[k] = resultValue{containerID: string(rc.ContainerID), result: rc.Result}
	}
	for _, p := range c.GetPods() {
		_, had := n.pods[p.GetUid()]
		if p.GetRemoved() {
			if had {
				delete(n.pods, p.GetUid())
				b.stats.Pods--
			}
			for k := range n.results {
				if k.podUID == p.GetUid() {
					delete(n.results, k)
					b.stats.Keys--
				}
			}
			continue
		}
		if !had {
			b.stats.Pods++
		}
		n.pods[p.GetUid()] = p
	}
	if obj := c.GetNodeObject(); len(obj) > 0 {
		n.object, _ = fleetv1.DecodeNodeObject(obj) // validated
	}
	if u := c.GetUsage(); u != nil {
		n.usage, n.usageAt = u, now
	}
	for _, nc := range c.GetConditions() {
		if n.conditions == nil {
			n.conditions = map[string]*fleetv1.NodeCondition{}
		}
		n.conditions[nc.GetType()] = nc
	}
	b.stats.ChangesApplied += uint64(len(c.GetResults()) + len(c.GetPods()) + len(c.GetConditions()))
}

// Heartbeat records a contact and answers with the last seq held. A session the aggregator has no
// baseline for gets RESYNC (so an idle node learns that the aggregator restarted), an older
// incarnation STALE.
func (b *Book) Heartbeat(h *fleetv1.Heartbeat, now time.Time) *fleetv1.Ack {
	ack := &fleetv1.Ack{AggregatorIncarnation: b.incarnation}
	n, ok := b.nodes[h.GetNode()]
	switch {
	case h.Validate() != nil:
		ack.Status = fleetv1.AckStatus_ACK_STATUS_INVALID
	case !ok:
		ack.Status = fleetv1.AckStatus_ACK_STATUS_RESYNC
	case h.GetIncarnation() < n.incarnation:
		ack.Status = fleetv1.AckStatus_ACK_STATUS_STALE
	default:
		n = b.session(h.GetNode(), h.GetIncarnation(), now)
		ack.Seq = n.lastSeq
		ack.Status = fleetv1.AckStatus_ACK_STATUS_APPLIED
		if !n.baseline {
			ack.Status = fleetv1.AckStatus_ACK_STATUS_RESYNC
		}
	}
	return ack
}

// Tick turns nodes without contact for longer than the grace period Unknown, as the node
// lifecycle controller does, and marks their pods not ready (events NodeNotReady).
func (b *Book) Tick(now time.Time) {
	for _, name := range b.nodeNames() {
		n := b.nodes[name]
		if n.ready && now.Sub(n.lastContact) > b.grace {
			n.ready, n.transition = false, now
			b.event(now, nodeRef(name), v1.EventTypeNormal, "NodeNotReady", fmt.Sprintf("Node %s status is now: NodeNotReady", name))
			for _, uid := range sortedKeys(n.pods) {
				m := n.pods[uid].GetMeta()
				b.event(now, v1.ObjectReference{Kind: "Pod", APIVersion: "v1", Namespace: m.GetNamespace(), Name: m.GetName(), UID: types.UID(uid)},
					v1.EventTypeWarning, "NodeNotReady", "Node is not ready")
			}
		}
	}
}

// Pods returns every node's pods, sorted by namespace, name and node, with spec.nodeName set. The
// pods of an Unknown node have their Ready condition False (the node lifecycle controller's
// MarkPodsNotReady), as of the node's transition.
func (b *Book) Pods() ([]v1.Pod, error) {
	var pods []v1.Pod
	for _, n := range b.nodes {
		for _, p := range n.pods {
			pod, err := fleetv1.ToPod(p, n.name)
			if err != nil {
				return nil, fmt.Errorf("node %s: %w", n.name, err)
			}
			if !n.ready {
				markNotReady(&pod.Status, n.transition)
			}
			pods = append(pods, *pod)
		}
	}
	sort.Slice(pods, func(i, j int) bool {
		a, c := pods[i], pods[j]
		if a.Namespace != c.Namespace {
			return a.Namespace < c.Namespace
		}
		if a.Name != c.Name {
			return a.Name < c.Name
		}
		return a.Spec.NodeName < c.Spec.NodeName
	})
	return pods, nil
}

func markNotReady(st *v1.PodStatus, at time.Time) {
	for i := range st.Conditions {
		c := &st.Conditions[i]
		if c.Type == v1.PodReady && c.Status != v1.ConditionFalse {
			c.Status = v1.ConditionFalse
			c.LastTransitionTime = metav1.NewTime(at)
		}
	}
}

// Nodes returns every node as a v1.Node, sorted by name: Ready True while the node is in contact,
// Unknown (NodeStatusUnknown) once the grace period passed without contact.
func (b *Book) Nodes() []v1.Node {
	out := make([]v1.Node, 0, len(b.nodes))
	for _, name := range b.nodeNames() {
		n := b.nodes[name]
		cond := v1.NodeCondition{Type: v1.NodeReady, Status: v1.ConditionTrue, Reason: readyReason, Message: readyMessage,
			LastHeartbeatTime: metav1.NewTime(n.lastContact), LastTransitionTime: metav1.NewTime(n.transition)}
		if !n.ready {
			cond.Status, cond.Reason, cond.Message = v1.ConditionUnknown, unknownReason, unknownMessage
		}
		conds := []v1.NodeCondition{cond}
		for _, t := range slices.Sorted(maps.Keys(n.conditions)) {
			nc := n.conditions[t]
			c := v1.NodeCondition{Type: v1.NodeConditionType(t), Status: v1.ConditionStatus(nc.GetStatus()), Reason: nc.GetReason(), Message: nc.GetMessage(),
				LastHeartbeatTime: metav1.NewTime(n.lastContact)}
			if nc.GetTransitionUnixNano() != 0 {
				c.LastTransitionTime = metav1.NewTime(time.Unix(0, nc.GetTransitionUnixNano()).UTC())
			}
			if !n.ready { // what a node out of contact said is no longer known
				c.Status, c.Reason, c.Message = v1.ConditionUnknown, unknownReason, unknownMessage
			}
			conds = append(conds, c)
		}
		node := v1.Node{
			TypeMeta:   metav1.TypeMeta{Kind: "Node", APIVersion: "v1"},
			ObjectMeta: metav1.ObjectMeta{Name: name, CreationTimestamp: metav1.NewTime(n.created)},
			Status: v1.NodeStatus{
				Conditions: conds,
				NodeInfo:   v1.NodeSystemInfo{BootID: fmt.Sprint(n.incarnation)},
			},
		}
		if host := hostOf(n.address); host != "" {
			node.Status.Addresses = []v1.NodeAddress{{Type: v1.NodeInternalIP, Address: host}}
		}
		if n.object != nil {
			withObject(&node, n.object)
		}
		out = append(out, node)
	}
	return out
}

// withObject adds what the node says of itself (its own Node object: package nodeobject) to the
// aggregator's view of it: its labels, capacity, allocatable, daemon endpoint, system info and
// addresses after the InternalIP the aggregator sees it at. Its name, conditions and boot ID stay
// the aggregator's: the node is the session's, Ready is the aggregator's contact, and the boot ID
// the node process's incarnation (as the Rebooted event names it).
func withObject(node *v1.Node, obj *v1.Node) {
	o := obj.DeepCopy()
	node.Labels = o.Labels
	node.Status.Capacity, node.Status.Allocatable = o.Status.Capacity, o.Status.Allocatable
	node.Status.DaemonEndpoints = o.Status.DaemonEndpoints
	info := o.Status.NodeInfo
	info.BootID = node.Status.NodeInfo.BootID
	node.Status.NodeInfo = info
	for _, a := range o.Status.Addresses {
		if !slices.Contains(node.Status.Addresses, a) {
			node.Status.Addresses = append(node.Status.Addresses, a)
		}
	}
}

// Result is one probe's latest result on a node, as /results lists it.
type Result struct {
	Node        string             `json:"node"`
	PodUID      types.UID          `json:"podUID"`
	Container   string             `json:"container"`
	Type        string             `json:"type"`
	ContainerID string             `json:"containerID"`
	Result      string             `json:"result"`
	probeType   messages.ProbeType `json:"-"`
}

// Results lists every node's probe results, sorted by node, pod UID, container and type.
func (b *Book) Results() []Result {
	var out []Result
	for _, name := range b.nodeNames() {
		for k, v := range b.nodes[name].results {
			out = append(out, Result{Node: name, PodUID: types.UID(k.podUID), Container: k.container, Type: k.typ.String(),
				ContainerID: v.containerID, Result: v.result.String(), probeType: k.typ})
		}
	}
	sort.Slice(out, func(i, j int) bool {
		a, c := out[i], out[j]
		if a.Node != c.Node {
			return a.Node < c.Node
		}
		if a.PodUID != c.PodUID {
			return a.PodUID < c.PodUID
		}
		if a.Container != c.Container {
			return a.Container < c.Container
		}
		return a.probeType < c.probeType
	})
	return out
}

// Events returns the recorded events, oldest first.
func (b *Book) Events() []v1.Event { return append([]v1.Event(nil), b.events...) }

// Stats returns the counters and sizes.
func (b *Book) Stats() Stats {
	s := b.stats
	s.Batches = make(map[fleetv1.AckStatus]uint64, len(b.stats.Batches))
	for k, v := range b.stats.Batches {
		s.Batches[k] = v
	}
	return s
}

// ReadyNodes counts the nodes Ready True and Unknown.
func (b *Book) ReadyNodes() (ready, unknown int) {
	for _, n := range b.nodes {
		if n.ready {
			ready++
		} else {
			unknown++
		}
	}
	return ready, unknown
}

func (b *Book) event(now time.Time, obj v1.ObjectReference, typ, reason, message string) {
	b.eventSeq++
	ts := metav1.NewTime(now)
	if len(b.events) >= maxEvents {
		b.events = append(b.events[:0], b.events[1:]...)
	}
	b.events = append(b.events, v1.Event{
		TypeMeta:            metav1.TypeMeta{Kind: "Event", APIVersion: "v1"},
		ObjectMeta:          metav1.ObjectMeta{Name: fmt.Sprintf("%s.%x", obj.Name, b.eventSeq), Namespace: obj.Namespace, CreationTimestamp: ts},
		InvolvedObject:      obj,
		Reason:              reason,
		Message:             message,
		Source:              v1.EventSource{Component: eventSourceComponent},
		FirstTimestamp:      ts,
		LastTimestamp:       ts,
		Count:               1,
		Type:                typ,
		ReportingController: eventSourceComponent,
	})
}

func nodeRef(name string) v1.ObjectReference {
	return v1.ObjectReference{Kind: "Node", APIVersion: "v1", Name: name, UID: types.UID(name)}
}

func (b *Book) nodeNames() []string { return sortedKeys(b.nodes) }

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

func hostOf(address string) string {
	if i := strings.LastIndex(address, ":"); i > 0 {
		return strings.Trim(address[:i], "[]")
	}
	return ""
}
