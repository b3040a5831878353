package kubectl

import (
	"fmt"
	"strconv"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/fields"
)

// ParseFieldSelector parses a --field-selector for pods or nodes (kind "pod" or "node") as the API
// server does: fields.ParseSelector, then v1's field label conversion, which reads spec.host as
// spec.nodeName and refuses every field it does not list ("field label not supported: X").
func ParseFieldSelector(kind, s string) (fields.Selector, error) {
	sel, err := fields.ParseSelector(s)
	if err != nil {
		return nil, err
	}
	return sel.Transform(func(field, value string) (string, string, error) {
		switch {
		case kind == "pod" && field == "spec.host": // old v1 clients' name for it
			return "spec.nodeName", value, nil
		case kind == "pod" && podSelectable[field], kind == "node" && (field == "metadata.name" || field == "spec.unschedulable"):
			return field, value, nil
		}
		return "", "", fmt.Errorf("field label not supported: %s", field)
	})
}

// podSelectable are the pod fields v1 accepts in a field selector. status.podIPs is accepted and,
// as in the API server, has no value to match (a selector on it = matches nothing).
var podSelectable = map[string]bool{
	"metadata.name": true, "metadata.namespace": true, "spec.nodeName": true, "spec.restartPolicy": true,
	"spec.schedulerName": true, "spec.serviceAccountName": true, "spec.hostNetwork": true, "status.phase": true,
	"status.podIP": true, "status.podIPs": true, "status.nominatedNodeName": true,
}

// PodFields are a pod's values of the fields a selector may name, as the API server's pod
// registry gives them (ToSelectableFields): status.podIP is the first of status.podIPs.
func PodFields(p *v1.Pod) fields.Set {
	ip := ""
	if len(p.Status.PodIPs) > 0 {
		ip = p.Status.PodIPs[0].IP
	}
	return fields.Set{
		"metadata.name":            p.Name,
		"metadata.namespace":       p.Namespace,
		"spec.nodeName":            p.Spec.NodeName,
		"spec.restartPolicy":       string(p.Spec.RestartPolicy),
		"spec.schedulerName":       p.Spec.SchedulerName,
		"spec.serviceAccountName":  p.Spec.ServiceAccountName,
		"spec.hostNetwork":         strconv.FormatBool(p.Spec.HostNetwork),
		"status.phase":             string(p.Status.Phase),
		"status.podIP":             ip,
		"status.nominatedNodeName": p.Status.NominatedNodeName,
	}
}

// NodeFields are a node's values of the fields a selector may name (the node registry's
// NodeToSelectableFields).
func NodeFields(n *v1.Node) fields.Set {
	return fields.Set{"metadata.name": n.Name, "spec.unschedulable": strconv.FormatBool(n.Spec.Unschedulable)}
}
