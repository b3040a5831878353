package kubectl

import (
	"fmt"
	"io"
	"text/tabwriter"
	"time"

	v1 "k8s.io/api/core/v1"

	"github.com/probeactor/probeactor/internal/podapi"
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
}

// PrintPodColumns writes the table with the optional columns.
func PrintPodColumns(w io.Writer, pods []v1.Pod, now time.Time, cols Columns) error {
	tw := tabwriter.NewWriter(w, 0, 8, 3, ' ', 0)
	if cols.Namespace {
		fmt.Fprint(tw, "NAMESPACE\t")
	}
	fmt.Fprint(tw, "NAME\tREADY\tSTATUS\tRESTARTS\tAGE")
	if cols.Node {
		fmt.Fprint(tw, "\tNODE")
	}
	fmt.Fprintln(tw)
	for i := range pods {
		p := &pods[i]
		if cols.Namespace {
			fmt.Fprintf(tw, "%s\t", p.Namespace)
		}
		ready, total := readyCount(p)
		fmt.Fprintf(tw, "%s\t%d/%d\t%s\t%s\t%s", p.Name, ready, total, Status(p), restarts(p, now), HumanDuration(now.Sub(p.CreationTimestamp.Time)))
		if cols.Node {
			fmt.Fprintf(tw, "\t%s", orNone(p.Spec.NodeName))
		}
		fmt.Fprintln(tw)
	}
	return tw.Flush()
}

// PrintNodes writes `kubectl get nodes`' NAME, STATUS and AGE columns. STATUS is kubectl's:
// Ready when the Ready condition is True, NotReady when it is False or Unknown, Unknown without a
// Ready condition, with ",SchedulingDisabled" for a cordoned node; beyond kubectl, a cluster
// member whose ClusterQuorum condition is False gets ",<its reason>" (",QuorumLost": it runs no
// pods).
func PrintNodes(w io.Writer, nodes []v1.Node, now time.Time) error {
	tw := tabwriter.NewWriter(w, 0, 8, 3, ' ', 0)
	fmt.Fprintln(tw, "NAME\tSTATUS\tAGE")
	for i := range nodes {
		n := &nodes[i]
		fmt.Fprintf(tw, "%s\t%s\t%s\n", n.Name, NodeStatus(n), HumanDuration(now.Sub(n.CreationTimestamp.Time)))
	}
	return tw.Flush()
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

func readyCount(p *v1.Pod) (ready, total int) {
	total = len(p.Spec.Containers)
	for _, cs := range p.Status.ContainerStatuses {
		if cs.Ready && cs.State.Running != nil {
			ready++
		}
	}
	for i := range p.Spec.InitContainers {
		if !podstatus.IsRestartable(&p.Spec.InitContainers[i]) {
			continue
		}
		total++
		if cs, ok := podapi.FindStatus(p.Status.InitContainerStatuses, p.Spec.InitContainers[i].Name); ok && cs.Ready && cs.State.Running != nil {
			ready++
		}
	}
	return ready, total
}

func restarts(p *v1.Pod, now time.Time) string {
	var n int32
	var last time.Time
	for _, cs := range podapi.AllContainerStatuses(&p.Status) {
		n += cs.RestartCount
		if t := cs.LastTerminationState.Terminated; t != nil && t.FinishedAt.Time.After(last) {
			last = t.FinishedAt.Time
		}
	}
	if n > 0 && !last.IsZero() {
		return fmt.Sprintf("%d (%s ago)", n, HumanDuration(now.Sub(last)))
	}
	return fmt.Sprint(n)
}

// Status is kubectl's STATUS column.
func Status(p *v1.Pod) string {
	reason := string(p.Status.Phase)
	if p.Status.Reason != "" {
		reason = p.Status.Reason
	}
	initializing := false
	regularInits := 0
	for i := range p.Spec.InitContainers {
		if !podstatus.IsRestartable(&p.Spec.InitContainers[i]) {
			regularInits++
		}
	}
	for i, cs := range p.Status.InitContainerStatuses {
		sidecar := i < len(p.Spec.InitContainers) && podstatus.IsRestartable(&p.Spec.InitContainers[i])
		switch {
		case cs.State.Terminated != nil && cs.State.Terminated.ExitCode == 0:
			continue
		case sidecar && cs.State.Running != nil && cs.Started != nil && *cs.Started:
			continue
		case cs.State.Terminated != nil:
			if cs.State.Terminated.Reason != "" {
				reason = "Init:" + cs.State.Terminated.Reason
			} else if cs.State.Terminated.Signal != 0 {
				reason = fmt.Sprintf("Init:Signal:%d", cs.State.Terminated.Signal)
			} else {
				reason = fmt.Sprintf("Init:ExitCode:%d", cs.State.Terminated.ExitCode)
			}
			initializing = true
		case cs.State.Waiting != nil && cs.State.Waiting.Reason != "" && cs.State.Waiting.Reason != "PodInitializing":
			reason = "Init:" + cs.State.Waiting.Reason
			initializing = true
		default:
			reason = fmt.Sprintf("Init:%d/%d", i, len(p.Spec.InitContainers))
			initializing = true
		}
		break
	}
	if !initializing || anyAppStarted(p) {
		hasRunning := false
		for i := len(p.Status.ContainerStatuses) - 1; i >= 0; i-- {
			cs := p.Status.ContainerStatuses[i]
			switch {
			case cs.State.Waiting != nil && cs.State.Waiting.Reason != "":
				reason = cs.State.Waiting.Reason
			case cs.State.Terminated != nil && cs.State.Terminated.Reason != "":
				reason = cs.State.Terminated.Reason
			case cs.State.Terminated != nil && cs.State.Terminated.Signal != 0:
				reason = fmt.Sprintf("Signal:%d", cs.State.Terminated.Signal)
			case cs.State.Terminated != nil:
				reason = fmt.Sprintf("ExitCode:%d", cs.State.Terminated.ExitCode)
			case cs.Ready && cs.State.Running != nil:
				hasRunning = true
			}
		}
		if reason == "Completed" && hasRunning {
			if podReady(p) {
				reason = "Running"
			} else {
				reason = "NotReady"
			}
		}
	}
	if p.DeletionTimestamp != nil {
		reason = "Terminating"
	}
	return reason
}

func anyAppStarted(p *v1.Pod) bool {
	for _, cs := range p.Status.ContainerStatuses {
		if cs.State.Running != nil || cs.State.Terminated != nil || cs.LastTerminationState.Terminated != nil {
			return true
		}
	}
	return false
}

func podReady(p *v1.Pod) bool {
	for _, c := range p.Status.Conditions {
		if c.Type == v1.PodReady {
			return c.Status == v1.ConditionTrue
		}
	}
	return false
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
