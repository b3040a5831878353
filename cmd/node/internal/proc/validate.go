package proc

import (
	"slices"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/uuid"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/probeactor/probeactor/features"
	"github.com/probeactor/probeactor/internal/podspec"
)

// Prepare makes a decoded manifest's pod ready to run, as `node validate` checks it: a UID when it
// has none (a manifest rarely names one), the API server's defaults and validation
// (podspec.Prepare, then podspec.SetGatedDefaults and podspec.ValidateGates under node's feature
// gates: a field whose gate is off is refused), the creation time, then the process runtime's limits
// (Validate), each problem once. The pod may run only if the list is empty. The tree's AddPod
// applies the same podspec rules and, through Runtime.ValidatePod, the same gates and limits.
func Prepare(pod *v1.Pod, now time.Time, gates features.Gates) field.ErrorList {
	if pod.UID == "" {
		pod.UID = uuid.NewUUID()
	}
	podspec.SetDefaults(pod)
	podspec.SetGatedDefaults(pod, gates)
	errs := podspec.Validate(pod)
	pod.CreationTimestamp = metav1.NewTime(now)
	errs = append(errs, podspec.ValidateGates(pod, gates)...)
	return podspec.Unique(append(errs, Validate(pod)...))
}

// Validate checks what the process runtime needs beyond the API server's rules (podspec.Validate):
// a command to run, env values only from the fields it supports, lifecycle hooks it can run (not
// tcpSocket), no stopSignal, no ephemeral containers.
func Validate(pod *v1.Pod) field.ErrorList {
	var errs field.ErrorList
	spec := field.NewPath("spec")
	check := func(path *field.Path, c *v1.Container) {
		if len(c.Command) == 0 && len(c.Args) == 0 {
			errs = append(errs, field.Required(path.Child("command"), "node runs containers as local processes: set command or args (args[0] is then the executable)"))
		}
		switch c.TerminationMessagePolicy {
		case "", v1.TerminationMessageReadFile, v1.TerminationMessageFallbackToLogsOnError:
		default:
			errs = append(errs, field.NotSupported(path.Child("terminationMessagePolicy"), c.TerminationMessagePolicy,
				[]v1.TerminationMessagePolicy{v1.TerminationMessageReadFile, v1.TerminationMessageFallbackToLogsOnError}))
		}
		if lc := c.Lifecycle; lc != nil {
			for _, hook := range []struct {
				name string
				h    *v1.LifecycleHandler
			}{{"postStart", lc.PostStart}, {"preStop", lc.PreStop}} {
				if hook.h != nil && hook.h.TCPSocket != nil {
					errs = append(errs, field.Forbidden(path.Child("lifecycle", hook.name, "tcpSocket"),
						"node runs exec, httpGet and sleep hooks; tcpSocket is deprecated and kubelet fails it as an invalid handler"))
				}
			}
			if lc.StopSignal != nil {
				errs = append(errs, field.Forbidden(path.Child("lifecycle", "stopSignal"),
					"node implements no ContainerStopSignals (alpha): containers are stopped with SIGTERM"))
			}
		}
		for i, e := range c.Env {
			if e.ValueFrom == nil {
				continue
			}
			ep := path.Child("env").Index(i)
			if e.ValueFrom.FieldRef == nil {
				errs = append(errs, field.Forbidden(ep.Child("valueFrom"), "node supports only fieldRef (no ConfigMaps, Secrets or resources)"))
			} else if !slices.Contains(SupportedFieldRefs, e.ValueFrom.FieldRef.FieldPath) {
				errs = append(errs, field.NotSupported(ep.Child("valueFrom", "fieldRef", "fieldPath"), e.ValueFrom.FieldRef.FieldPath, SupportedFieldRefs))
			}
		}
	}
	for i := range pod.Spec.InitContainers {
		check(spec.Child("initContainers").Index(i), &pod.Spec.InitContainers[i])
	}
	for i := range pod.Spec.Containers {
		check(spec.Child("containers").Index(i), &pod.Spec.Containers[i])
	}
	if h := pod.Spec.Hostname; h != "" { // the API server's rule
		for _, msg := range validation.IsDNS1123Label(h) {
			errs = append(errs, field.Invalid(spec.Child("hostname"), h, msg))
		}
	}
	if pod.Spec.HostnameOverride != nil {
		errs = append(errs, field.Forbidden(spec.Child("hostnameOverride"), "node implements no HostnameOverride (alpha): the hostname is spec.hostname or the pod's name"))
	}
	if d := pod.Spec.ActiveDeadlineSeconds; d != nil && *d < 1 { // the API server's rule
		errs = append(errs, field.Invalid(spec.Child("activeDeadlineSeconds"), *d, "must be between 1 and 2147483647, inclusive"))
	}
	if len(pod.Spec.EphemeralContainers) > 0 {
		errs = append(errs, field.Forbidden(spec.Child("ephemeralContainers"), "not supported by node"))
	}
	return errs
}
