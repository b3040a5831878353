package kubectl

import (
	"fmt"
	"strings"

	v1 "k8s.io/api/core/v1"
)

// WaitFor is one --for of `kubectl wait`: a condition (Condition, its wanted Status), the
// object's deletion (Delete) or its creation (Create).
type WaitFor struct {
	Condition, Status string
	Delete, Create    bool
}

// ParseWaitFor reads --for as kubectl wait does: "delete", "create" (any case), or
// "condition=NAME" (Status "true") or "condition=NAME=VALUE". node has no jsonpath.
func ParseWaitFor(s string) (WaitFor, error) {
	switch strings.ToLower(s) {
	case "delete":
		return WaitFor{Delete: true}, nil
	case "create":
		return WaitFor{Create: true}, nil
	}
	if name, ok := strings.CutPrefix(s, "condition="); ok {
		w := WaitFor{Condition: name, Status: "true"}
		if i := strings.Index(name, "="); i != -1 {
			w.Condition, w.Status = name[:i], name[i+1:]
		}
		return w, nil
	}
	if strings.HasPrefix(s, "jsonpath=") {
		return WaitFor{}, fmt.Errorf("unrecognized condition: %q (node's wait has condition=, delete and create; no jsonpath)", s)
	}
	return WaitFor{}, fmt.Errorf("unrecognized condition: %q", s)
}

// ConditionMet is kubectl wait's check of --for=condition on a pod: the first condition of that
// type (any case) has the wanted status (any case), unless it was observed for an older
// generation of the pod than the current one (then not yet).
func ConditionMet(p *v1.Pod, w WaitFor) bool {
	for _, c := range p.Status.Conditions {
		if !strings.EqualFold(string(c.Type), w.Condition) {
			continue
		}
		if p.Generation != 0 {
			observed := c.ObservedGeneration
			if observed == 0 {
				observed = p.Status.ObservedGeneration
			}
			if observed != 0 && observed < p.Generation {
				return false
			}
		}
		return strings.EqualFold(string(c.Status), w.Status)
	}
	return false
}
