package podspec

import (
	"maps"
	"slices"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/probeactor/probeactor/probes"
)

// DefaultNamespace is the namespace of a pod that names none.
const DefaultNamespace = "default"

// SetDefaults fills, in place, the defaults the API server would: the namespace ("default"), then
// the probes package's (restartPolicy Always, terminationGracePeriodSeconds 30, every probe's
// timeouts, period, thresholds, HTTP path and scheme, ports' protocol). It never sets a UID.
func SetDefaults(pod *v1.Pod) {
	if pod == nil {
		return
	}
	if pod.Namespace == "" {
		pod.Namespace = DefaultNamespace
	}
	probes.SetDefaults(pod)
}

// Prepare is SetDefaults then Validate.
func Prepare(pod *v1.Pod) field.ErrorList {
	SetDefaults(pod)
	return Validate(pod)
}

// Validate returns every rule of the API server's pod validation that a defaulted pod breaks among
// those probing depends on, each once and naming its field path: a UID, name and namespace (DNS
// subdomain and label), the restart policy, a non-negative grace period (SetDefaults makes a
// negative one 1, as the API server does), at least one container, container names (DNS labels,
// unique across init and app containers), container restart policies and restart rules (kubelet
// 1.37, KEP-5307 and KEP-5532: as the API server validates them with ContainerRestartRules and
// RestartAllContainersOnContainerExits on), env entries (a name the API server accepts; value and
// valueFrom exclusive), and every probe (probes.ValidatePod, httpGet.protocol and grpc.mode
// included).
//
// Validate applies no feature gate: it accepts every field kubelet 1.37 knows, as the API server
// does with every gate on. ValidateGates refuses the fields of gates that are off.
func Validate(pod *v1.Pod) field.ErrorList {
	if pod == nil {
		return field.ErrorList{field.Required(field.NewPath("metadata"), "pod is nil")}
	}
	var errs field.ErrorList
	meta := field.NewPath("metadata")
	if pod.UID == "" {
		errs = append(errs, field.Required(meta.Child("uid"), "the pod's identity: every later call names the pod by it"))
	}
	switch {
	case pod.Name == "" && pod.GenerateName != "": // the API server would have made the name by now
		errs = append(errs, field.Required(meta.Child("name"), "generateName is not supported here: give the pod its name"))
	case pod.Name == "":
		errs = append(errs, field.Required(meta.Child("name"), "name or generateName is required"))
	default:
		for _, msg := range dns1123Subdomain(pod.Name) {
			errs = append(errs, field.Invalid(meta.Child("name"), pod.Name, msg))
		}
	}
	if pod.Namespace != "" {
		for _, msg := range dns1123Label(pod.Namespace) {
			errs = append(errs, field.Invalid(meta.Child("namespace"), pod.Namespace, msg))
		}
	}
	spec := field.NewPath("spec")
	switch pod.Spec.RestartPolicy {
	case "", v1.RestartPolicyAlways, v1.RestartPolicyOnFailure, v1.RestartPolicyNever:
	default:
		errs = append(errs, field.NotSupported(spec.Child("restartPolicy"), pod.Spec.RestartPolicy,
			[]string{string(v1.RestartPolicyAlways), string(v1.RestartPolicyOnFailure), string(v1.RestartPolicyNever)}))
	}
	if g := pod.Spec.TerminationGracePeriodSeconds; g != nil && *g < 0 {
		errs = append(errs, field.Invalid(spec.Child("terminationGracePeriodSeconds"), *g, "must be greater than or equal to 0"))
	}
	if len(pod.Spec.Containers) == 0 {
		errs = append(errs, field.Required(spec.Child("containers"), ""))
	}
	// Names are unique among the app containers, and an init container's among them all: the API
	// server reports a clash on the init container (an empty name too, as it does).
	appNames := map[string]bool{}
	for i, c := range pod.Spec.Containers {
		if appNames[c.Name] {
			errs = append(errs, field.Duplicate(spec.Child("containers").Index(i).Child("name"), c.Name))
		}
		appNames[c.Name] = true
	}
	allNames := maps.Clone(appNames)
	for i, c := range pod.Spec.InitContainers {
		if allNames[c.Name] {
			errs = append(errs, field.Duplicate(spec.Child("initContainers").Index(i).Child("name"), c.Name))
		} else if c.Name != "" {
			allNames[c.Name] = true
		}
	}
	check := func(path *field.Path, c *v1.Container, init bool) {
		if c.Name == "" {
			errs = append(errs, field.Required(path.Child("name"), ""))
		} else {
			for _, msg := range dns1123Label(c.Name) {
				errs = append(errs, field.Invalid(path.Child("name"), c.Name, msg))
			}
		}
		if init && c.RestartPolicy == nil {
			if len(c.RestartPolicyRules) > 0 {
				errs = append(errs, field.Required(path.Child("restartPolicy"), "must specify restartPolicy when restart rules are used"))
			}
		} else {
			errs = append(errs, validateContainerRestartPolicy(c.RestartPolicy, c.RestartPolicyRules, path)...)
		}
		for i, e := range c.Env {
			ep := path.Child("env").Index(i)
			if e.Name == "" {
				errs = append(errs, field.Required(ep.Child("name"), ""))
			} else {
				// RelaxedEnvironmentVariableValidation (GA, locked on since 1.34): printable ASCII but '='.
				for _, msg := range validation.IsRelaxedEnvVarName(e.Name) {
					errs = append(errs, field.Invalid(ep.Child("name"), e.Name, msg))
				}
			}
			if e.ValueFrom != nil && e.Value != "" {
				errs = append(errs, field.Invalid(ep.Child("valueFrom"), "", "may not be specified when `value` is not empty"))
			}
		}
	}
	for i := range pod.Spec.InitContainers {
		check(spec.Child("initContainers").Index(i), &pod.Spec.InitContainers[i], true)
	}
	for i := range pod.Spec.Containers {
		check(spec.Child("containers").Index(i), &pod.Spec.Containers[i], false)
	}
	return Unique(append(errs, probes.ValidatePod(pod)...))
}

// Unique drops repeated errors (the same text), keeping the first of each.
func Unique(errs field.ErrorList) field.ErrorList {
	seen := make(map[string]bool, len(errs))
	out := errs[:0:0]
	for _, e := range errs {
		if s := e.Error(); !seen[s] {
			seen[s] = true
			out = append(out, e)
		}
	}
	return out
}

var (
	supportedContainerRestartPolicies = []string{string(v1.ContainerRestartPolicyAlways), string(v1.ContainerRestartPolicyNever),
		string(v1.ContainerRestartPolicyOnFailure)}
	supportedRestartRuleOperators = []string{string(v1.ContainerRestartRuleOnExitCodesOpIn), string(v1.ContainerRestartRuleOnExitCodesOpNotIn)}
	supportedRestartRuleActions   = []string{string(v1.ContainerRestartRuleActionRestart), string(v1.ContainerRestartRuleActionRestartAllContainers)}
)

// Limits of the API server on restart rules.
const (
	maxRestartRules  = 20
	maxRuleExitCodes = 255
)

// validateContainerRestartPolicy is the API server's check of a container's restartPolicy and
// restartPolicyRules (validateContainerRestartPolicy in pkg/apis/core/validation, 1.37, both gates
// on). An empty exitCodes.values is valid, as there (In matches no exit code, NotIn every one).
func validateContainerRestartPolicy(policy *v1.ContainerRestartPolicy, rules []v1.ContainerRestartRule, path *field.Path) field.ErrorList {
	var errs field.ErrorList
	policyPath := path.Child("restartPolicy")
	if policy == nil {
		if len(rules) == 0 {
			return nil
		}
		errs = append(errs, field.Required(policyPath, "must specify restartPolicy when restart rules are used"))
	} else if !slices.Contains(supportedContainerRestartPolicies, string(*policy)) {
		errs = append(errs, field.NotSupported(policyPath, *policy, supportedContainerRestartPolicies))
	}
	if len(rules) > maxRestartRules {
		errs = append(errs, field.TooMany(path.Child("restartPolicyRules"), len(rules), maxRestartRules))
	}
	for i, rule := range rules {
		rp := path.Child("restartPolicyRules").Index(i)
		if !slices.Contains(supportedRestartRuleActions, string(rule.Action)) {
			errs = append(errs, field.NotSupported(rp.Child("action"), rule.Action, supportedRestartRuleActions))
		}
		if rule.ExitCodes == nil {
			errs = append(errs, field.Required(rp.Child("exitCodes"), "must be specified"))
			continue
		}
		if !slices.Contains(supportedRestartRuleOperators, string(rule.ExitCodes.Operator)) {
			errs = append(errs, field.NotSupported(rp.Child("exitCodes", "operator"), rule.ExitCodes.Operator, supportedRestartRuleOperators))
		}
		if len(rule.ExitCodes.Values) > maxRuleExitCodes {
			errs = append(errs, field.TooMany(rp.Child("exitCodes", "values"), len(rule.ExitCodes.Values), maxRuleExitCodes))
		}
	}
	return errs
}
