package describe

import (
	"fmt"
	"io"
	"maps"
	"slices"
	"strings"
	"text/tabwriter"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/probeactor/probeactor/internal/kubectl"
	"github.com/probeactor/probeactor/internal/podapi"
	"github.com/probeactor/probeactor/internal/podstatus"
	"github.com/probeactor/probeactor/messages"
)

// timeFormat is kubectl describe's (time.RFC1123Z).
const timeFormat = time.RFC1123Z

// probeOrder is the order kubectl describe prints a container's probes in.
var probeOrder = []messages.ProbeType{messages.Liveness, messages.Readiness, messages.Startup}

// Print writes a pod's description in kubectl describe's layout (the fields node knows: no
// volumes, QoS or tolerations), each probe followed by its live state, then the pod's events.
func Print(out io.Writer, d Document, now time.Time) error {
	return PrintWith(out, d, now, Settings{ShowEvents: true})
}

// Settings are kubectl's DescriberSettings that node has.
type Settings struct {
	// ShowEvents prints the Events section (kubectl describe --show-events, on by default; off when
	// several objects are described and the flag was not given).
	ShowEvents bool
}

// PrintWith is Print with kubectl's describer settings.
func PrintWith(out io.Writer, d Document, now time.Time, settings Settings) error {
	w := tabwriter.NewWriter(out, 0, 8, 2, ' ', 0)
	p := &d.Pod
	line := func(indent int, format string, args ...any) {
		fmt.Fprintf(w, strings.Repeat("  ", indent)+format+"\n", args...)
	}
	line(0, "Name:\t%s", p.Name)
	line(0, "Namespace:\t%s", p.Namespace)
	if p.Spec.Priority != nil {
		line(0, "Priority:\t%d", *p.Spec.Priority)
	}
	if p.Spec.PriorityClassName != "" {
		line(0, "Priority Class Name:\t%s", p.Spec.PriorityClassName)
	}
	if p.Spec.RuntimeClassName != nil && *p.Spec.RuntimeClassName != "" {
		line(0, "Runtime Class Name:\t%s", *p.Spec.RuntimeClassName)
	}
	if p.Spec.ServiceAccountName != "" {
		line(0, "Service Account:\t%s", p.Spec.ServiceAccountName)
	}
	if p.Spec.NodeName == "" {
		line(0, "Node:\t<none>")
	} else {
		line(0, "Node:\t%s/%s", p.Spec.NodeName, p.Status.HostIP)
	}
	if p.Status.StartTime != nil {
		line(0, "Start Time:\t%s", p.Status.StartTime.Time.Format(timeFormat))
	}
	line(0, "Labels:\t%s", labels(p.Labels))
	line(0, "Annotations:\t%s", annotations(p.Annotations))
	if p.DeletionTimestamp != nil && p.Status.Phase != v1.PodFailed && p.Status.Phase != v1.PodSucceeded {
		line(0, "Status:\tTerminating (lasts %s)", since(*p.DeletionTimestamp, now))
		if p.DeletionGracePeriodSeconds != nil {
			line(0, "Termination Grace Period:\t%ds", *p.DeletionGracePeriodSeconds)
		}
	} else {
		line(0, "Status:\t%s", p.Status.Phase)
	}
	if p.Status.Reason != "" {
		line(0, "Reason:\t%s", p.Status.Reason)
	}
	if p.Status.Message != "" {
		line(0, "Message:\t%s", p.Status.Message)
	}
	line(0, "IP:\t%s", p.Status.PodIP)
	if len(p.Status.PodIPs) == 0 {
		line(0, "IPs:\t<none>")
	} else {
		line(0, "IPs:")
		for _, ip := range p.Status.PodIPs {
			line(1, "IP:\t%s", ip.IP)
		}
	}
	if ref := metav1.GetControllerOf(p); ref != nil {
		line(0, "Controlled By:\t%s/%s", ref.Kind, ref.Name)
	}
	if p.Status.NominatedNodeName != "" {
		line(0, "NominatedNodeName:\t%s", p.Status.NominatedNodeName)
	}
	if len(p.Spec.InitContainers) > 0 {
		line(0, "Init Containers:")
		containers(line, &d, p.Spec.InitContainers, p.Status.InitContainerStatuses, now)
	}
	if len(p.Spec.Containers) == 0 {
		line(0, "Containers: <none>")
	} else {
		line(0, "Containers:")
	}
	containers(line, &d, p.Spec.Containers, p.Status.ContainerStatuses, now)
	if len(p.Spec.ReadinessGates) > 0 {
		line(0, "Readiness Gates:")
		line(1, "Type\tStatus")
		for _, g := range p.Spec.ReadinessGates {
			status := "<none>"
			if c := podstatus.FindCondition(p.Status.Conditions, g.ConditionType); c != nil {
				status = string(c.Status)
			}
			line(1, "%v \t%v ", g.ConditionType, status)
		}
	}
	if len(p.Status.Conditions) > 0 {
		line(0, "Conditions:")
		line(1, "Type\tStatus")
		for _, c := range p.Status.Conditions {
			line(1, "%v \t%v ", c.Type, c.Status)
		}
	}
	if settings.ShowEvents {
		events(line, d.Events, now)
	}
	return w.Flush()
}

type lineFunc func(indent int, format string, args ...any)

func containers(line lineFunc, d *Document, specs []v1.Container, statuses []v1.ContainerStatus, now time.Time) {
	for i := range specs {
		c := &specs[i]
		st, ok := status(statuses, c.Name)
		line(1, "%s:", c.Name)
		if ok {
			line(2, "Container ID:\t%s", st.ContainerID)
		}
		line(2, "Image:\t%s", c.Image)
		if ok {
			line(2, "Image ID:\t%s", st.ImageID)
		}
		ports(line, c.Ports)
		list(line, "Command:", c.Command)
		list(line, "Args:", c.Args)
		if ok {
			state(line, "State", st.State)
			if st.LastTerminationState.Terminated != nil {
				state(line, "Last State", st.LastTerminationState)
			}
			line(2, "Ready:\t%s", boolText(st.Ready))
			line(2, "Restart Count:\t%d", st.RestartCount)
		}
		for _, pt := range probeOrder {
			spec := pt.Spec(c)
			ps, has := d.probe(c.Name, pt.String())
			if spec == nil && !has {
				continue
			}
			text := "(the probe's spec is not known here)"
			if spec != nil {
				text = kubectl.Probe(spec)
			}
			line(2, "%s:\t%s", pt, text)
			if has {
				line(2, "\t%s", probeLine(d, ps, now))
			}
		}
		env(line, &d.Pod, c.Env)
	}
}

// env prints a container's environment as kubectl describe does: a value's further lines
// continue beneath it, and a fieldRef shows the value read from the pod with its source.
func env(line lineFunc, pod *v1.Pod, vars []v1.EnvVar) {
	if len(vars) == 0 {
		line(2, "Environment:\t<none>")
		return
	}
	line(2, "Environment:")
	for _, e := range vars {
		switch {
		case e.ValueFrom == nil:
			for i, s := range strings.Split(e.Value, "\n") {
				if i == 0 {
					line(3, "%s:\t%s", e.Name, s)
				} else {
					line(3, "\t%s", s)
				}
			}
		case e.ValueFrom.FieldRef != nil:
			f := e.ValueFrom.FieldRef
			line(3, "%s:\t%s (%s:%s)", e.Name, podapi.FieldRefValue(pod, f.FieldPath), f.APIVersion, f.FieldPath)
		}
	}
}

// probeLine is what node describe adds to kubectl's probe line: the streak against its threshold,
// the last attempt and when, and the next action if the streak continues (a live state); or the
// published result and the node (a fleet aggregator's).
func probeLine(d *Document, p Probe, now time.Time) string {
	if !p.Live {
		res := p.Published
		if res == "" {
			res = "nothing"
		}
		return fmt.Sprintf("published %s on node %s (streaks and timings: node describe on that node)", res, orNone(p.Node))
	}
	n, _ := d.find(p.Container, p.Type)
	streak := n.Streak
	if streak == "" {
		streak = fmt.Sprintf("%d in a row", p.Streak)
	}
	last := "no attempt yet"
	if !p.LastAt.IsZero() {
		what := p.LastResult
		if what == messages.Unknown.String() {
			what = "error (not counted)"
		}
		last = fmt.Sprintf("last %s %s ago", what, kubectl.HumanDuration(now.Sub(p.LastAt)))
	}
	if n.Action == "" {
		return streak + ", " + last
	}
	return streak + ", " + last + "; " + n.Action
}

func state(line lineFunc, label string, s v1.ContainerState) {
	switch {
	case s.Running != nil:
		line(2, "%s:\tRunning", label)
		line(3, "Started:\t%s", s.Running.StartedAt.Time.Format(timeFormat))
	case s.Waiting != nil:
		line(2, "%s:\tWaiting", label)
		if s.Waiting.Reason != "" {
			line(3, "Reason:\t%s", s.Waiting.Reason)
		}
	case s.Terminated != nil:
		t := s.Terminated
		line(2, "%s:\tTerminated", label)
		if t.Reason != "" {
			line(3, "Reason:\t%s", t.Reason)
		}
		if t.Message != "" {
			line(3, "Message:\t%s", t.Message)
		}
		line(3, "Exit Code:\t%d", t.ExitCode)
		if t.Signal > 0 {
			line(3, "Signal:\t%d", t.Signal)
		}
		line(3, "Started:\t%s", t.StartedAt.Time.Format(timeFormat))
		line(3, "Finished:\t%s", t.FinishedAt.Time.Format(timeFormat))
	default:
		line(2, "%s:\tWaiting", label)
	}
}

// events prints the pod's events as kubectl describe does: "<age> (x<count> over <first age>)"
// for repeated ones.
func events(line lineFunc, evs []v1.Event, now time.Time) {
	if len(evs) == 0 {
		line(0, "Events:\t<none>")
		return
	}
	line(0, "Events:")
	line(1, "Type\tReason\tAge\tFrom\tMessage")
	line(1, "----\t------\t----\t----\t-------")
	for _, e := range evs {
		age := since(e.FirstTimestamp, now)
		if e.Count > 1 {
			age = fmt.Sprintf("%s (x%d over %s)", since(e.LastTimestamp, now), e.Count, age)
		}
		from := e.Source.Component
		if from == "" {
			from = e.ReportingController
		}
		msg := strings.TrimSpace(e.Message)
		if e.InvolvedObject.FieldPath != "" {
			msg = e.InvolvedObject.FieldPath + ": " + msg
		}
		line(1, "%v\t%v\t%s\t%v\t%v", e.Type, e.Reason, age, from, msg)
	}
}

func since(t metav1.Time, now time.Time) string {
	if t.IsZero() {
		return "<unknown>"
	}
	return kubectl.HumanDuration(now.Sub(t.Time))
}

func list(line lineFunc, label string, items []string) {
	if len(items) == 0 {
		return
	}
	line(2, "%s", label)
	for _, it := range items {
		for _, l := range strings.Split(it, "\n") {
			line(3, "%s", l)
		}
	}
}

func status(list []v1.ContainerStatus, name string) (v1.ContainerStatus, bool) {
	for _, s := range list {
		if s.Name == name {
			return s, true
		}
	}
	return v1.ContainerStatus{}, false
}

func labels(m map[string]string) string {
	if len(m) == 0 {
		return "<none>"
	}
	var lines []string
	for _, k := range slices.Sorted(maps.Keys(m)) {
		lines = append(lines, k+"="+m[k])
	}
	return strings.Join(lines, "\n\t") // kubectl's multi-line labels: one per line, aligned
}

// maxAnnotationLen is kubectl describe's: a longer annotation (or one of several lines) is
// printed beneath its key, each line cut at this length.
const maxAnnotationLen = 140

// annotations are kubectl describe's "key: value" lines, sorted, without kubectl apply's
// last-applied-configuration.
func annotations(m map[string]string) string {
	var lines []string
	for _, k := range slices.Sorted(maps.Keys(m)) {
		if k == v1.LastAppliedConfigAnnotation {
			continue
		}
		value := strings.TrimSuffix(m[k], "\n")
		if len(value)+len(k)+2 <= maxAnnotationLen && !strings.Contains(value, "\n") {
			lines = append(lines, k+": "+value)
			continue
		}
		lines = append(lines, k+":")
		for _, l := range strings.Split(value, "\n") {
			if len(l) > maxAnnotationLen-2 {
				l = l[:maxAnnotationLen-2] + "..."
			}
			lines = append(lines, "  "+l)
		}
	}
	if len(lines) == 0 {
		return "<none>"
	}
	return strings.Join(lines, "\n\t")
}

func orNone(s string) string {
	if s == "" {
		return "<none>"
	}
	return s
}

// ports prints kubectl describe's Port and Host Port lines: "8080/TCP (http)", several joined
// with ", " under the plural label, and <none> when there are none.
func ports(line lineFunc, ps []v1.ContainerPort) {
	show := func(label string, port func(v1.ContainerPort) int32) {
		out := make([]string, 0, len(ps))
		for _, p := range ps {
			proto := p.Protocol
			if proto == "" {
				proto = v1.ProtocolTCP
			}
			s := fmt.Sprintf("%d/%s", port(p), proto)
			if p.Name != "" {
				s += " (" + p.Name + ")"
			}
			out = append(out, s)
		}
		switch len(out) {
		case 0:
			line(2, "%s:\t<none>", label)
		case 1:
			line(2, "%s:\t%s", label, out[0])
		default:
			line(2, "%ss:\t%s", label, strings.Join(out, ", "))
		}
	}
	show("Port", func(p v1.ContainerPort) int32 { return p.ContainerPort })
	show("Host Port", func(p v1.ContainerPort) int32 { return p.HostPort })
}

func boolText(b bool) string {
	if b {
		return "True"
	}
	return "False"
}
