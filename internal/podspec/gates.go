package podspec

import (
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/probeactor/probeactor/features"
)

// ValidateGates refuses every field of pod whose feature gate is off in g, naming its path. Where
// the API server's validation has a wording for the gate being off, it is used:
//
//   - ContainerRestartRules off: a regular container's restartPolicy is Forbidden ("may not be set
//     for non-init containers"), an init container's restartPolicy other than Always is
//     NotSupported (only "Always"); restartPolicyRules are Forbidden;
//   - RestartAllContainersOnContainerExits off: the action RestartAllContainers is NotSupported
//     (only "Restart"), and a sidecar's rules are Forbidden ("restartPolicyRules are not allowed for
//     init containers with restart policy Always");
//   - H2CContainerProbe off: a probe's httpGet.protocol is Forbidden;
//   - GRPCContainerProbeTLS off: a probe's grpc.mode is Forbidden.
//
// The API server drops these fields silently when their gate is off (PrepareForCreate) before it
// validates; node has no API server in front of it, and running a pod other than the manifest says
// would surprise, so here they are refused ("may not be set when the X feature gate is disabled",
// worded as the API server words its other gate refusals).
func ValidateGates(pod *v1.Pod, g features.Gates) field.ErrorList {
	if pod == nil {
		return nil
	}
	var errs field.ErrorList
	rulesOn := g.Enabled(features.ContainerRestartRules)
	allOn := g.Enabled(features.RestartAllContainersOnContainerExits)
	gateOff := func(f features.Feature) string {
		return "may not be set when the " + string(f) + " feature gate is disabled"
	}
	restartAllOff := func(path *field.Path, rules []v1.ContainerRestartRule) {
		for i, rule := range rules {
			if rule.Action == v1.ContainerRestartRuleActionRestartAllContainers {
				errs = append(errs, field.NotSupported(path.Child("restartPolicyRules").Index(i).Child("action"), rule.Action,
					[]string{string(v1.ContainerRestartRuleActionRestart)}))
			}
		}
	}
	spec := field.NewPath("spec")
	for i := range pod.Spec.InitContainers {
		c := &pod.Spec.InitContainers[i]
		path := spec.Child("initContainers").Index(i)
		sidecar := c.RestartPolicy != nil && *c.RestartPolicy == v1.ContainerRestartPolicyAlways
		switch {
		case !rulesOn:
			if c.RestartPolicy != nil && !sidecar {
				errs = append(errs, field.NotSupported(path.Child("restartPolicy"), *c.RestartPolicy, []string{string(v1.ContainerRestartPolicyAlways)}))
			}
			if len(c.RestartPolicyRules) > 0 {
				errs = append(errs, field.Forbidden(path.Child("restartPolicyRules"), gateOff(features.ContainerRestartRules)))
			}
		case !allOn && sidecar && len(c.RestartPolicyRules) > 0:
			errs = append(errs, field.Forbidden(path.Child("restartPolicyRules"), "restartPolicyRules are not allowed for init containers with restart policy Always"))
		case !allOn:
			restartAllOff(path, c.RestartPolicyRules)
		default:
		}
		errs = append(errs, probeGates(c, path, g, gateOff)...)
	}
	for i := range pod.Spec.Containers {
		c := &pod.Spec.Containers[i]
		path := spec.Child("containers").Index(i)
		switch {
		case !rulesOn:
			if c.RestartPolicy != nil {
				errs = append(errs, field.Forbidden(path.Child("restartPolicy"), "may not be set for non-init containers"))
			}
			if len(c.RestartPolicyRules) > 0 {
				errs = append(errs, field.Forbidden(path.Child("restartPolicyRules"), gateOff(features.ContainerRestartRules)))
			}
		case !allOn:
			restartAllOff(path, c.RestartPolicyRules)
		default:
		}
		errs = append(errs, probeGates(c, path, g, gateOff)...)
	}
	return errs
}

// probeGates refuses the gated fields of c's probes.
func probeGates(c *v1.Container, path *field.Path, g features.Gates, gateOff func(features.Feature) string) field.ErrorList {
	var errs field.ErrorList
	h2c, grpcTLS := g.Enabled(features.H2CContainerProbe), g.Enabled(features.GRPCContainerProbeTLS)
	for _, p := range []struct {
		name  string
		probe *v1.Probe
	}{{"livenessProbe", c.LivenessProbe}, {"readinessProbe", c.ReadinessProbe}, {"startupProbe", c.StartupProbe}} {
		if p.probe == nil {
			continue
		}
		if h := p.probe.HTTPGet; h != nil && h.Protocol != nil && !h2c {
			errs = append(errs, field.Forbidden(path.Child(p.name, "httpGet", "protocol"), gateOff(features.H2CContainerProbe)))
		}
		if gr := p.probe.GRPC; gr != nil && gr.Mode != nil && !grpcTLS {
			errs = append(errs, field.Forbidden(path.Child(p.name, "grpc", "mode"), gateOff(features.GRPCContainerProbeTLS)))
		}
	}
	return errs
}

// SetGatedDefaults fills the defaults the API server applies only with a gate on: with
// H2CContainerProbe, every httpGet probe's protocol is HTTP1 unless set (SetDefaults_Pod). It is
// idempotent, like SetDefaults.
func SetGatedDefaults(pod *v1.Pod, g features.Gates) {
	if pod == nil || !g.Enabled(features.H2CContainerProbe) {
		return
	}
	set := func(c *v1.Container) {
		for _, p := range []*v1.Probe{c.LivenessProbe, c.ReadinessProbe, c.StartupProbe} {
			if p != nil && p.HTTPGet != nil && p.HTTPGet.Protocol == nil {
				h1 := v1.HTTPProtocolHTTP1
				p.HTTPGet.Protocol = &h1
			}
		}
	}
	for i := range pod.Spec.InitContainers {
		set(&pod.Spec.InitContainers[i])
	}
	for i := range pod.Spec.Containers {
		set(&pod.Spec.Containers[i])
	}
}
