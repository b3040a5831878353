package restartpolicy

import (
	v1 "k8s.io/api/core/v1"
)

// ShouldRestart reports whether container c, exited with exitCode, is restarted under a pod whose
// restartPolicy is podPolicy (kubelet's podutil.ContainerShouldRestart): when c has its own
// restartPolicy, the first of its rules that matches exitCode decides (Restart and
// RestartAllContainers restart it), else its restartPolicy does (Always; OnFailure for a non-zero
// exit; Never); otherwise the pod's restartPolicy does the same way, "" counting as Always.
func ShouldRestart(c *v1.Container, podPolicy v1.RestartPolicy, exitCode int32) bool {
	if c.RestartPolicy != nil {
		if rule, ok := MatchingRule(c, exitCode); ok {
			switch rule.Action {
			case v1.ContainerRestartRuleActionRestart, v1.ContainerRestartRuleActionRestartAllContainers:
				return true
			default: // an unknown action: the container's policy decides
			}
		}
		switch *c.RestartPolicy {
		case v1.ContainerRestartPolicyAlways:
			return true
		case v1.ContainerRestartPolicyOnFailure:
			return exitCode != 0
		case v1.ContainerRestartPolicyNever:
			return false
		default: // unknown: the pod's policy decides
		}
	}
	switch podPolicy {
	case v1.RestartPolicyOnFailure:
		return exitCode != 0
	case v1.RestartPolicyNever:
		return false
	default:
		return true
	}
}

// MatchingRule returns c's first restartPolicyRule whose exitCodes match exitCode (operator In: the
// code is among the values; NotIn: it is not; a rule without exitCodes or with another operator
// matches nothing), as kubelet's FindMatchingContainerRestartRule. Empty values match nothing with
// In and everything with NotIn.
func MatchingRule(c *v1.Container, exitCode int32) (v1.ContainerRestartRule, bool) {
	for _, rule := range c.RestartPolicyRules {
		if rule.ExitCodes == nil {
			continue
		}
		in := false
		for _, code := range rule.ExitCodes.Values {
			if code == exitCode {
				in = true
				break
			}
		}
		switch rule.ExitCodes.Operator {
		case v1.ContainerRestartRuleOnExitCodesOpIn:
			if in {
				return rule, true
			}
		case v1.ContainerRestartRuleOnExitCodesOpNotIn:
			if !in {
				return rule, true
			}
		default:
		}
	}
	return v1.ContainerRestartRule{}, false
}

// RestartsAll reports whether c exiting with exitCode restarts every container of its pod: its
// matching rule's action is RestartAllContainers.
func RestartsAll(c *v1.Container, exitCode int32) bool {
	rule, ok := MatchingRule(c, exitCode)
	return ok && rule.Action == v1.ContainerRestartRuleActionRestartAllContainers
}

// CouldRestartAll reports whether some init or regular container of spec has a rule whose action
// is RestartAllContainers (kubelet's podutil.AllContainersCouldRestart: only such pods carry the
// AllContainersRestarting condition).
func CouldRestartAll(spec *v1.PodSpec) bool {
	for _, list := range [][]v1.Container{spec.InitContainers, spec.Containers} {
		for i := range list {
			for _, rule := range list[i].RestartPolicyRules {
				if rule.Action == v1.ContainerRestartRuleActionRestartAllContainers {
					return true
				}
			}
		}
	}
	return false
}

// AllRestarting is kubelet's ShouldAllContainersRestart(pod, nil, status), what its probe workers
// read to keep going while a pod restarts in place: the status has the AllContainersRestarting
// condition True, or one of the pod's init containers or containers is terminated with an exit
// code its RestartAllContainers rule matches.
func AllRestarting(initContainers, containers []v1.Container, status *v1.PodStatus) bool {
	if status == nil {
		return false
	}
	for i := range status.Conditions {
		if c := status.Conditions[i]; c.Type == v1.AllContainersRestarting && c.Status == v1.ConditionTrue {
			return true
		}
	}
	check := func(list []v1.Container) bool {
		for i := range list {
			c := &list[i]
			st := findStatus(status, c.Name)
			if st == nil || st.State.Terminated == nil {
				continue
			}
			if RestartsAll(c, st.State.Terminated.ExitCode) {
				return true
			}
		}
		return false
	}
	return check(initContainers) || check(containers)
}

// findStatus is kubelet's lookup by name over init then regular container statuses (a name is
// unique across both).
func findStatus(status *v1.PodStatus, name string) *v1.ContainerStatus {
	for _, list := range [][]v1.ContainerStatus{status.InitContainerStatuses, status.ContainerStatuses} {
		for i := range list {
			if list[i].Name == name {
				return &list[i]
			}
		}
	}
	return nil
}
