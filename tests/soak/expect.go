package main

import (
	"fmt"
	"sort"
	"strconv"

	v1 "k8s.io/api/core/v1"
)

// Lost compares what node reports (its /pods) with what the schedule implies once the run is
// over: a pod is lost when it is missing, not Running, its container is not running and started,
// its readiness (container and Ready condition) is not the target's final answer, or it is not the
// last edited version; a pod node still reports that the schedule removed is lost too (stale).
// It returns the count and one reason per lost pod, sorted.
func Lost(want map[string]Expected, pods []v1.Pod) (int, []string) {
	var reasons []string
	seen := map[string]bool{}
	for i := range pods {
		p := &pods[i]
		if p.Namespace != "default" {
			continue
		}
		exp, ok := want[p.Name]
		if !ok {
			reasons = append(reasons, fmt.Sprintf("%s: stale: removed by the schedule, still reported (phase %s)", p.Name, p.Status.Phase))
			continue
		}
		if seen[p.Name] {
			reasons = append(reasons, fmt.Sprintf("%s: reported twice", p.Name))
			continue
		}
		seen[p.Name] = true
		if why := mismatch(exp, p); why != "" {
			reasons = append(reasons, p.Name+": "+why)
		}
	}
	for name := range want {
		if !seen[name] {
			reasons = append(reasons, name+": missing")
		}
	}
	sort.Strings(reasons)
	return len(reasons), reasons
}

// mismatch says how p differs from exp ("" when it does not).
func mismatch(exp Expected, p *v1.Pod) string {
	if got := p.Annotations[EditAnnotation]; got != strconv.Itoa(exp.Edits) {
		return fmt.Sprintf("version with %s edits, want %d", got, exp.Edits)
	}
	if p.Status.Phase != v1.PodRunning {
		return fmt.Sprintf("phase %q, want Running", p.Status.Phase)
	}
	if len(p.Status.ContainerStatuses) != 1 {
		return fmt.Sprintf("%d container statuses, want 1", len(p.Status.ContainerStatuses))
	}
	cs := p.Status.ContainerStatuses[0]
	if cs.State.Running == nil {
		return fmt.Sprintf("container not running (%s)", state(cs.State))
	}
	if cs.Started == nil || !*cs.Started {
		return "container not started"
	}
	if cs.Ready != exp.Ready {
		return fmt.Sprintf("container ready=%t, want %t", cs.Ready, exp.Ready)
	}
	want := v1.ConditionFalse
	if exp.Ready {
		want = v1.ConditionTrue
	}
	for _, c := range p.Status.Conditions {
		if c.Type == v1.PodReady {
			if c.Status != want {
				return fmt.Sprintf("Ready condition %s, want %s", c.Status, want)
			}
			return ""
		}
	}
	return "no Ready condition"
}

func state(s v1.ContainerState) string {
	switch {
	case s.Waiting != nil:
		return "waiting: " + s.Waiting.Reason
	case s.Terminated != nil:
		return "terminated: " + s.Terminated.Reason
	default:
		return "no state"
	}
}
