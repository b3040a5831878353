package podspec

import (
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
	// Paths are built only for an error: a valid pod, the case of every AddPod, allocates nothing.
	var errs field.ErrorList
	if pod.UID == "" {
		errs = append(errs, field.Required(field.NewPath("metadata", "uid"), "the pod's identity: every later call names the pod by it"))
	}
	switch {
	case pod.Name == "" && pod.GenerateName != "": // the API server would have made the name by now
		errs = append(errs, field.Required(field.NewPath("metadata", "name"), "generateName is not supported here: give the pod its name"))
	case pod.Name == "":
		errs = append(errs, field.Required(field.NewPath("metadata", "name"), "name or generateName is required"))
	default:
		for _, msg := range dns1123Subdomain(pod.Name) {
			errs = append(errs, field.Invalid(field.NewPath("metadata", "name"), pod.Name, msg))
		}
	}
	if pod.Namespace != "" {
		for _, msg := range dns1123Label(pod.Namespace) {
			errs = append(errs, field.Invalid(field.NewPath("metadata", "namespace"), pod.Namespace, msg))
		}
	}
	switch pod.Spec.RestartPolicy {
	case "", v1.RestartPolicyAlways, v1.RestartPolicyOnFailure, v1.RestartPolicyNever:
	default:
		errs = append(errs, field.NotSupported(field.NewPath("spec", "restartPolicy"), pod.Spec.RestartPolicy,
			[]string{string(v1.RestartPolicyAlways), string(v1.RestartPolicyOnFailure), string(v1.RestartPolicyNever)}))
	}
	if g := pod.Spec.TerminationGracePeriodSeconds; g != nil && *g < 0 {
		errs = append(errs, field.Invalid(field.NewPath("spec", "terminationGracePeriodSeconds"), *g, "must be greater than or equal to 0"))
	}
	if len(pod.Spec.Containers) == 0 {
		errs = append(errs, field.Required(field.NewPath("spec", "containers"), ""))
	}
	errs = duplicateNames(&pod.Spec, errs)
	check := func(at container, c *v1.Container) {
		if c.Name == "" {
			errs = append(errs, field.Required(at.child("name"), ""))
		} else {
			for _, msg := range dns1123Label(c.Name) {
				errs = append(errs, field.Invalid(at.child("name"), c.Name, msg))
			}
		}
		if at.init && c.RestartPolicy == nil {
			if len(c.RestartPolicyRules) > 0 {
				errs = append(errs, field.Required(at.child("restartPolicy"), "must specify restartPolicy when restart rules are used"))
			}
		} else {
			errs = append(errs, validateContainerRestartPolicy(c.RestartPolicy, c.RestartPolicyRules, at)...)
		}
		for i, e := range c.Env {
			if e.Name == "" {
				errs = append(errs, field.Required(at.child("env").Index(i).Child("name"), ""))
			} else {
				// RelaxedEnvironmentVariableValidation (GA, locked on since 1.34): printable ASCII but '='.
				for _, msg := range validation.IsRelaxedEnvVarName(e.Name) {
					errs = append(errs, field.Invalid(at.child("env").Index(i).Child("name"), e.Name, msg))
				}
			}
			if e.ValueFrom != nil && e.Value != "" {
				errs = append(errs, field.Invalid(at.child("env").Index(i).Child("valueFrom"), "", "may not be specified when `value` is not empty"))
			}
		}
	}
	for i := range pod.Spec.InitContainers {
		check(container{init: true, i: i}, &pod.Spec.InitContainers[i])
	}
	for i := range pod.Spec.Containers {
		check(container{i: i}, &pod.Spec.Containers[i])
	}
	return Unique(append(errs, probes.ValidatePod(pod)...))
}

// container names spec.initContainers[i] or spec.containers[i] for the errors about it.
type container struct {
	init bool
	i    int
}

// child is the path of the container's field name.
func (c container) child(name string) *field.Path {
	list := "containers"
	if c.init {
		list = "initContainers"
	}
	return field.NewPath("spec", list).Index(c.i).Child(name)
}

// rule is the path of the container's restart rule i.
func (c container) rule(i int) *field.Path { return c.child("restartPolicyRules").Index(i) }

// scanNames is the most containers whose names duplicateNames compares by a scan of the earlier
// ones, which allocates nothing, rather than with maps.
const scanNames = 16

// duplicateNames appends to errs a Duplicate for each container name that is not unique: an app
// container's among the app containers, an init container's among all of them, the clash reported
// on the later app container or on the init container, app containers first (the API server's
// checks and order). An empty name is a name like another, except that an init container's is not
// recorded: two nameless init containers do not clash with each other.
func duplicateNames(spec *v1.PodSpec, errs field.ErrorList) field.ErrorList {
	apps, inits := spec.Containers, spec.InitContainers
	if len(apps)+len(inits) <= scanNames {
		for i := range apps {
			if hasName(apps[:i], apps[i].Name) {
				errs = append(errs, field.Duplicate(container{i: i}.child("name"), apps[i].Name))
			}
		}
		for i := range inits {
			if name := inits[i].Name; hasName(apps, name) || name != "" && hasName(inits[:i], name) {
				errs = append(errs, field.Duplicate(container{init: true, i: i}.child("name"), name))
			}
		}
		return errs
	}
	names := make(map[string]bool, len(apps)+len(inits))
	for i := range apps {
		if names[apps[i].Name] {
			errs = append(errs, field.Duplicate(container{i: i}.child("name"), apps[i].Name))
		}
		names[apps[i].Name] = true
	}
	for i := range inits {
		if name := inits[i].Name; names[name] {
			errs = append(errs, field.Duplicate(container{init: true, i: i}.child("name"), name))
		} else if name != "" {
			names[name] = true
		}
	}
	return errs
}

// hasName reports whether one of cs is named name.
func hasName(cs []v1.Container, name string) bool {
	for i := range cs {
		if cs[i].Name == name {
			return true
		}
	}
	return false
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
func validateContainerRestartPolicy(policy *v1.ContainerRestartPolicy, rules []v1.ContainerRestartRule, at container) field.ErrorList {
	var errs field.ErrorList
	if policy == nil {
		if len(rules) == 0 {
			return nil
		}
		errs = append(errs, field.Required(at.child("restartPolicy"), "must specify restartPolicy when restart rules are used"))
	} else if !slices.Contains(supportedContainerRestartPolicies, string(*policy)) {
		errs = append(errs, field.NotSupported(at.child("restartPolicy"), *policy, supportedContainerRestartPolicies))
	}
	if len(rules) > maxRestartRules {
		errs = append(errs, field.TooMany(at.child("restartPolicyRules"), len(rules), maxRestartRules))
	}
	for i, rule := range rules {
		if !slices.Contains(supportedRestartRuleActions, string(rule.Action)) {
			errs = append(errs, field.NotSupported(at.rule(i).Child("action"), rule.Action, supportedRestartRuleActions))
		}
		if rule.ExitCodes == nil {
			errs = append(errs, field.Required(at.rule(i).Child("exitCodes"), "must be specified"))
			continue
		}
		if !slices.Contains(supportedRestartRuleOperators, string(rule.ExitCodes.Operator)) {
			errs = append(errs, field.NotSupported(at.rule(i).Child("exitCodes", "operator"), rule.ExitCodes.Operator, supportedRestartRuleOperators))
		}
		if len(rule.ExitCodes.Values) > maxRuleExitCodes {
			errs = append(errs, field.TooMany(at.rule(i).Child("exitCodes", "values"), len(rule.ExitCodes.Values), maxRuleExitCodes))
		}
	}
	return errs
}
