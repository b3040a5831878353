package kubectl

import (
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/liggitt/tabwriter"
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/labels"

	"github.com/probeactor/probeactor/internal/podstatus"
)

// PrintPods writes the table. withNamespace adds kubectl's NAMESPACE column (-A).
func PrintPods(w io.Writer, pods []v1.Pod, now time.Time, withNamespace bool) error {
	return PrintPodColumns(w, pods, now, Columns{Namespace: withNamespace})
}

// Columns are the optional columns of the pod table.
type Columns struct {
	Namespace bool // NAMESPACE first (-A)
	Node      bool // NODE last: spec.nodeName, as kubectl's wide output (a fleet aggregator's pods)
	// Wide adds kubectl's -o wide columns: IP, NODE, NOMINATED NODE and READINESS GATES (NODE
	// once, with or without Node).
	Wide bool
	// Labels adds kubectl's --show-labels column, LABELS, last.
	Labels bool
}

// PrintPodColumns writes the table with the optional columns.
func PrintPodColumns(w io.Writer, pods []v1.Pod, now time.Time, cols Columns) error {
	return NewPodTable(w, cols).Print(pods, now)
}

// Table prints rows of one kind of object through one of kubectl's tabwriters (cli-runtime's
// GetNewTabWriter), whose columns keep their widths across flushes: a watch's later rows line up
// under the first.
type Table[T any] struct {
	tw      *tabwriter.Writer
	header  []string
	cells   func(o *T, now time.Time) []string
	started bool
}

// PodTable is the pod table, NodeTable the node table.
type (
	PodTable  = Table[v1.Pod]
	NodeTable = Table[v1.Node]
)

// WithoutHeader leaves the header out (kubectl's --no-headers).
func (t *Table[T]) WithoutHeader() *Table[T] { t.started = true; return t }

// Print writes the objects' rows at now (after the header, the first time) and flushes.
func (t *Table[T]) Print(objects []T, now time.Time) error {
	if !t.started {
		t.started = true
		fmt.Fprintln(t.tw, strings.Join(t.header, "\t"))
	}
	for i := range objects {
		fmt.Fprintln(t.tw, strings.Join(t.cells(&objects[i], now), "\t"))
	}
	return t.tw.Flush()
}

// NewPodTable returns a pod table with the optional columns, which prints its header before its
// first rows.
func NewPodTable(w io.Writer, cols Columns) *PodTable {
	var header []string
	if cols.Namespace {
		header = append(header, "NAMESPACE")
	}
	header = append(header, "NAME", "READY", "STATUS", "RESTARTS", "AGE")
	switch {
	case cols.Wide:
		header = append(header, "IP", "NODE", "NOMINATED NODE", "READINESS GATES")
	case cols.Node:
		header = append(header, "NODE")
	}
	if cols.Labels {
		header = append(header, "LABELS")
	}
	return &PodTable{tw: NewTabWriter(w), header: header, cells: func(p *v1.Pod, now time.Time) []string {
		var cells []string
		if cols.Namespace {
			cells = append(cells, p.Namespace)
		}
		cells = append(cells, PodCells(p, now)...)
		switch {
		case cols.Wide:
			cells = append(cells, PodWideCells(p)...)
		case cols.Node:
			cells = append(cells, orNone(p.Spec.NodeName))
		}
		if cols.Labels {
			cells = append(cells, labels.FormatLabels(p.Labels))
		}
		return cells
	}}
}

// PrintNodes writes `kubectl get nodes`' NAME, STATUS and AGE columns. STATUS is kubectl's:
// Ready when the Ready condition is True, NotReady when it is False or Unknown, Unknown without a
// Ready condition, with ",SchedulingDisabled" for a cordoned node; beyond kubectl, a cluster
// member whose ClusterQuorum condition is False gets ",<its reason>" (",QuorumLost": it runs no
// pods). showLabels adds kubectl's --show-labels column, LABELS.
func PrintNodes(w io.Writer, nodes []v1.Node, now time.Time, showLabels bool) error {
	return NewNodeTable(w, showLabels).Print(nodes, now)
}

// NewNodeTable returns a node table (with kubectl's --show-labels column if showLabels), which
// prints its header before its first rows.
func NewNodeTable(w io.Writer, showLabels bool) *NodeTable {
	header := []string{"NAME", "STATUS", "AGE"}
	if showLabels {
		header = append(header, "LABELS")
	}
	return &NodeTable{tw: NewTabWriter(w), header: header, cells: func(n *v1.Node, now time.Time) []string {
		cells := []string{n.Name, NodeStatus(n), HumanDuration(now.Sub(n.CreationTimestamp.Time))}
		if showLabels {
			cells = append(cells, labels.FormatLabels(n.Labels))
		}
		return cells
	}}
}

// NodeStatus is kubectl's node STATUS column.
func NodeStatus(n *v1.Node) string {
	status := "Unknown"
	for _, c := range n.Status.Conditions {
		if c.Type == v1.NodeReady {
			status = "NotReady"
			if c.Status == v1.ConditionTrue {
				status = "Ready"
			}
		}
	}
	if n.Spec.Unschedulable {
		status += ",SchedulingDisabled"
	}
	for _, c := range n.Status.Conditions {
		if c.Type == "ClusterQuorum" && c.Status == v1.ConditionFalse && c.Reason != "" {
			status += "," + c.Reason
		}
	}
	return status
}

func orNone(s string) string {
	if s == "" {
		return "<none>"
	}
	return s
}

// row is one pod's READY, STATUS and RESTARTS, reasoned as kubectl 1.37's printPod does.
type row struct {
	ready, total int
	status       string
	restarts     int32
	lastRestart  time.Time // the latest finish among the containers counted in restarts
}

// PodCells are a pod's NAME, READY, STATUS, RESTARTS and AGE at now, as kubectl get pods prints
// them.
func PodCells(p *v1.Pod, now time.Time) []string {
	r := podRow(p)
	return []string{p.Name, fmt.Sprintf("%d/%d", r.ready, r.total), r.status, r.restartsColumn(now),
		HumanDuration(now.Sub(p.CreationTimestamp.Time))}
}

// PodWideCells are the columns kubectl get pods -o wide adds: IP (the first of status.podIPs), NODE,
// NOMINATED NODE and READINESS GATES (how many of the pod's gates have a True condition, of how
// many), each <none> when empty.
func PodWideCells(p *v1.Pod) []string {
	ip := ""
	if len(p.Status.PodIPs) > 0 {
		ip = p.Status.PodIPs[0].IP
	}
	gates := "<none>"
	if n := len(p.Spec.ReadinessGates); n > 0 {
		passed := 0
		for _, g := range p.Spec.ReadinessGates {
			if conditionTrue(&p.Status, g.ConditionType) {
				passed++
			}
		}
		gates = fmt.Sprintf("%d/%d", passed, n)
	}
	return []string{orNone(ip), orNone(p.Spec.NodeName), orNone(p.Status.NominatedNodeName), gates}
}

// Status is kubectl's STATUS column.
func Status(p *v1.Pod) string { return podRow(p).status }

// podRow walks the init containers in order up to the first that is not done (a regular one
// exited 0, a sidecar started); that one names the status (Init:<reason>, Init:Signal:N,
// Init:ExitCode:N or Init:i/n) and only the restarts seen so far count. Once initialization is over
// (no such container, or the Initialized condition True), the app containers decide, the last
// with a reason first in kubectl's reverse walk; "Completed" beside a running, ready container
// reads Running when the pod is Ready, else the error of a container that failed, else NotReady.
// Only sidecars' and app containers' restarts count then. A deleted pod reads Terminating until
// its phase is terminal (Unknown when its node was lost).
func podRow(p *v1.Pod) row {
	r := row{total: len(p.Spec.Containers), status: string(p.Status.Phase)}
	if p.Status.Reason != "" {
		r.status = p.Status.Reason
	}
	if c := podstatus.FindCondition(p.Status.Conditions, v1.PodScheduled); c != nil && c.Reason == v1.PodReasonSchedulingGated {
		r.status = v1.PodReasonSchedulingGated
	}
	sidecars := map[string]bool{}
	for i := range p.Spec.InitContainers {
		if c := &p.Spec.InitContainers[i]; podstatus.IsRestartable(c) {
			sidecars[c.Name] = true
			r.total++
		}
	}
	var all, side row // restarts of every init container walked, and of the sidecars among them
	initializing := false
	for i, cs := range p.Status.InitContainerStatuses {
		all.countRestarts(&cs)
		if sidecars[cs.Name] {
			side.countRestarts(&cs)
		}
		t := cs.State.Terminated
		if t != nil && t.ExitCode == 0 {
			continue
		}
		if sidecars[cs.Name] && cs.Started != nil && *cs.Started {
			if cs.Ready {
				r.ready++
			}
			continue
		}
		initializing = true
		switch w := cs.State.Waiting; {
		case t != nil:
			r.status = "Init:" + terminatedReason(t)
		case w != nil && w.Reason != "" && w.Reason != "PodInitializing":
			r.status = "Init:" + w.Reason
		default:
			r.status = fmt.Sprintf("Init:%d/%d", i, len(p.Spec.InitContainers))
		}
		break
	}
	r.restarts, r.lastRestart = all.restarts, all.lastRestart
	if !initializing || conditionTrue(&p.Status, v1.PodInitialized) {
		r.restarts, r.lastRestart = side.restarts, side.lastRestart
		hasRunning, errorReason := false, ""
		for i := len(p.Status.ContainerStatuses) - 1; i >= 0; i-- {
			cs := &p.Status.ContainerStatuses[i]
			r.countRestarts(cs)
			switch w, t := cs.State.Waiting, cs.State.Terminated; {
			case w != nil && w.Reason != "":
				r.status = w.Reason
			case t != nil:
				r.status = terminatedReason(t)
				if t.ExitCode != 0 {
					errorReason = r.status
				}
			case cs.Ready && cs.State.Running != nil:
				hasRunning = true
				r.ready++
			}
		}
		if r.status == "Completed" { // one container completed: does another still run?
			switch {
			case hasRunning && conditionTrue(&p.Status, v1.PodReady):
				r.status = "Running"
			case errorReason != "":
				r.status = errorReason
			case hasRunning:
				r.status = "NotReady"
			}
		}
	}
	if p.DeletionTimestamp != nil {
		switch {
		case p.Status.Reason == nodeLost:
			r.status = "Unknown"
		case p.Status.Phase != v1.PodSucceeded && p.Status.Phase != v1.PodFailed:
			r.status = "Terminating"
		}
	}
	return r
}

// conditionTrue says whether the pod's condition t is True.
func conditionTrue(st *v1.PodStatus, t v1.PodConditionType) bool {
	c := podstatus.FindCondition(st.Conditions, t)
	return c != nil && c.Status == v1.ConditionTrue
}

// nodeLost is the pod reason of a pod whose node stopped answering (the node controller's).
const nodeLost = "NodeLost"

// terminatedReason is a terminated container's reason, or its signal, or its exit code.
func terminatedReason(t *v1.ContainerStateTerminated) string {
	switch {
	case t.Reason != "":
		return t.Reason
	case t.Signal != 0:
		return fmt.Sprintf("Signal:%d", t.Signal)
	default:
		return fmt.Sprintf("ExitCode:%d", t.ExitCode)
	}
}

// countRestarts adds cs's restarts and the finish of its last termination.
func (r *row) countRestarts(cs *v1.ContainerStatus) {
	r.restarts += cs.RestartCount
	if t := cs.LastTerminationState.Terminated; t != nil && t.FinishedAt.Time.After(r.lastRestart) {
		r.lastRestart = t.FinishedAt.Time
	}
}

// restartsColumn is RESTARTS: the count, with how long ago the last one was.
func (r row) restartsColumn(now time.Time) string {
	if r.restarts > 0 && !r.lastRestart.IsZero() {
		return fmt.Sprintf("%d (%s ago)", r.restarts, HumanDuration(now.Sub(r.lastRestart)))
	}
	return fmt.Sprint(r.restarts)
}

// HumanDuration is kubectl's short age format (apimachinery's duration.HumanDuration).
func HumanDuration(d time.Duration) string {
	if seconds := int(d.Seconds()); seconds < -1 {
		return "<invalid>"
	} else if seconds < 0 {
		return "0s"
	} else if seconds < 60*2 {
		return fmt.Sprintf("%ds", seconds)
	}
	minutes := int(d / time.Minute)
	if minutes < 10 {
		s := int(d/time.Second) % 60
		if s == 0 {
			return fmt.Sprintf("%dm", minutes)
		}
		return fmt.Sprintf("%dm%ds", minutes, s)
	} else if minutes < 60*3 {
		return fmt.Sprintf("%dm", minutes)
	}
	hours := int(d / time.Hour)
	if hours < 8 {
		m := int(d/time.Minute) % 60
		if m == 0 {
			return fmt.Sprintf("%dh", hours)
		}
		return fmt.Sprintf("%dh%dm", hours, m)
	} else if hours < 48 {
		return fmt.Sprintf("%dh", hours)
	} else if hours < 24*8 {
		h := hours % 24
		if h == 0 {
			return fmt.Sprintf("%dd", hours/24)
		}
		return fmt.Sprintf("%dd%dh", hours/24, h)
	} else if hours < 24*365*2 {
		return fmt.Sprintf("%dd", hours/24)
	} else if hours < 24*365*8 {
		dy := int(hours/24) % 365
		if dy == 0 {
			return fmt.Sprintf("%dy", hours/24/365)
		}
		return fmt.Sprintf("%dy%dd", hours/24/365, dy)
	}
	return fmt.Sprintf("%dy", int(hours/24/365))
}
