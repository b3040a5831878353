package proc

import (
	"slices"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/uuid"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/probeactor/probeactor/cmd/node/internal/podapi"
	"github.com/probeactor/probeactor/probes"
)

// SetDefaults fills what the API server would (namespace, UID, restart policy, grace period) so a
// manifest can omit them. Probe defaults are the probes package's business.
func SetDefaults(pod *v1.Pod) {
	if pod.Namespace == "" {
		pod.Namespace = "default"
	}
	if pod.UID == "" {
		pod.UID = uuid.NewUUID()
	}
	if pod.Spec.RestartPolicy == "" {
		pod.Spec.RestartPolicy = v1.RestartPolicyAlways
	}
	if pod.Spec.TerminationGracePeriodSeconds == nil {
		g := int64(podapi.DefaultGracePeriod.Seconds())
		pod.Spec.TerminationGracePeriodSeconds = &g
	}
}

// Prepare makes a decoded pod ready to run: the runtime's defaults (SetDefaults), the probes'
// defaults, the creation time, then both validations (the API server's probe rules and the
// runtime's limits), each problem once. The pod may run only if the list is empty.
func Prepare(pod *v1.Pod, now time.Time) field.ErrorList {
	SetDefaults(pod)
	probes.SetDefaults(pod)
	pod.CreationTimestamp = metav1.NewTime(now)
	seen := map[string]bool{}
	var out field.ErrorList
	for _, e := range append(probes.ValidatePod(pod), Validate(pod)...) {
		if s := e.Error(); !seen[s] {
			seen[s] = true
			out = append(out, e)
		}
	}
	return out
}

// Validate checks what the process runtime needs beyond the API server's probe rules: names, a
// command to run, unique container names, restart policies and the env sources it supports.
func Validate(pod *v1.Pod) field.ErrorList {
	var errs field.ErrorList
	meta := field.NewPath("metadata")
	if pod.Name == "" {
		errs = append(errs, field.Required(meta.Child("name"), "a pod needs a name"))
	} else {
		for _, msg := range validation.IsDNS1123Subdomain(pod.Name) {
			errs = append(errs, field.Invalid(meta.Child("name"), pod.Name, msg))
		}
	}
	if pod.Namespace != "" {
		for _, msg := range validation.IsDNS1123Label(pod.Namespace) {
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
		errs = append(errs, field.Required(spec.Child("containers"), "a pod needs at least one container"))
	}
	seen := map[string]bool{}
	check := func(path *field.Path, c *v1.Container, init bool) {
		if c.Name == "" {
			errs = append(errs, field.Required(path.Child("name"), ""))
		} else {
			for _, msg := range validation.IsDNS1123Label(c.Name) {
				errs = append(errs, field.Invalid(path.Child("name"), c.Name, msg))
			}
			if seen[c.Name] {
				errs = append(errs, field.Duplicate(path.Child("name"), c.Name))
			}
			seen[c.Name] = true
		}
		if len(c.Command) == 0 && len(c.Args) == 0 {
			errs = append(errs, field.Required(path.Child("command"), "node runs containers as local processes: set command or args (args[0] is then the executable)"))
		}
		if c.RestartPolicy != nil {
			if !init {
				errs = append(errs, field.Forbidden(path.Child("restartPolicy"), "may not be set for non-init containers"))
			} else if *c.RestartPolicy != v1.ContainerRestartPolicyAlways {
				errs = append(errs, field.NotSupported(path.Child("restartPolicy"), *c.RestartPolicy, []string{string(v1.ContainerRestartPolicyAlways)}))
			}
		}
		for i, e := range c.Env {
			ep := path.Child("env").Index(i)
			if e.Name == "" {
				errs = append(errs, field.Required(ep.Child("name"), ""))
			}
			if e.ValueFrom == nil {
				continue
			}
			if e.Value != "" {
				errs = append(errs, field.Invalid(ep.Child("valueFrom"), "", "may not be specified when `value` is not empty"))
			}
			if e.ValueFrom.FieldRef == nil {
				errs = append(errs, field.Forbidden(ep.Child("valueFrom"), "node supports only fieldRef (no ConfigMaps, Secrets or resources)"))
			} else if !slices.Contains(SupportedFieldRefs, e.ValueFrom.FieldRef.FieldPath) {
				errs = append(errs, field.NotSupported(ep.Child("valueFrom", "fieldRef", "fieldPath"), e.ValueFrom.FieldRef.FieldPath, SupportedFieldRefs))
			}
		}
	}
	for i := range pod.Spec.InitContainers {
		check(spec.Child("initContainers").Index(i), &pod.Spec.InitContainers[i], true)
	}
	for i := range pod.Spec.Containers {
		check(spec.Child("containers").Index(i), &pod.Spec.Containers[i], false)
	}
	if len(pod.Spec.EphemeralContainers) > 0 {
		errs = append(errs, field.Forbidden(spec.Child("ephemeralContainers"), "not supported by node"))
	}
	return errs
}
