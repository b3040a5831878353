package proc

import (
	"os"
	"strings"

	v1 "k8s.io/api/core/v1"

	"github.com/probeactor/probeactor/internal/podapi"
	"github.com/probeactor/probeactor/probes"
)

// containerEnv is a container's environment: node's own environment (so PATH, HOME and the like
// work as on the host), then HOSTNAME (podHostname), then the container's env in order. Values may reference
// earlier variables with $(VAR); valueFrom supports the pod fields node knows (see fieldValue).
func containerEnv(pod *v1.Pod, c *v1.Container) []string {
	vars := []v1.EnvVar{{Name: "HOSTNAME", Value: podHostname(pod)}}
	for _, e := range c.Env {
		value := e.Value
		if e.ValueFrom != nil && e.ValueFrom.FieldRef != nil {
			value = fieldValue(pod, e.ValueFrom.FieldRef.FieldPath)
		} else {
			value = probes.ExpandCommand([]string{value}, vars)[0]
		}
		vars = append(vars, v1.EnvVar{Name: e.Name, Value: value})
	}
	env := os.Environ()
	for _, v := range vars {
		env = append(env, v.Name+"="+v.Value)
	}
	return dedupEnv(env)
}

// resolvedEnv is the container's env as literal EnvVars, for $(VAR) expansion of command and args.
func resolvedEnv(pod *v1.Pod, c *v1.Container) []v1.EnvVar {
	var out []v1.EnvVar
	for _, kv := range containerEnv(pod, c) {
		name, value, _ := strings.Cut(kv, "=")
		out = append(out, v1.EnvVar{Name: name, Value: value})
	}
	// Only the container's own variables take part in expansion, as in kubelet.
	own := map[string]bool{}
	for _, e := range c.Env {
		own[e.Name] = true
	}
	filtered := out[:0]
	for _, e := range out {
		if own[e.Name] {
			filtered = append(filtered, e)
		}
	}
	return filtered
}

// SupportedFieldRefs are the downward-API fields node can fill in.
var SupportedFieldRefs = []string{"metadata.name", "metadata.namespace", "metadata.uid", "status.podIP", "status.hostIP", "spec.nodeName"}

// fieldValue is a fieldRef's value for a container about to start, before the pod has a status:
// its IPs are node's, and without --node-name its node is the host's name.
func fieldValue(pod *v1.Pod, path string) string {
	switch path {
	case "status.podIP", "status.hostIP":
		return PodIP
	case "spec.nodeName":
		if pod.Spec.NodeName != "" { // --node-name: the member's or fleet node's name, as kubelet sets it
			return pod.Spec.NodeName
		}
		host, _ := os.Hostname()
		return host
	default:
		return podapi.FieldRefValue(pod, path)
	}
}

// dedupEnv keeps the last value of each name, in first-seen order.
func dedupEnv(env []string) []string {
	index := map[string]int{}
	out := make([]string, 0, len(env))
	for _, kv := range env {
		name, _, _ := strings.Cut(kv, "=")
		if i, ok := index[name]; ok {
			out[i] = kv
			continue
		}
		index[name] = len(out)
		out = append(out, kv)
	}
	return out
}

// containerArgv is command + args with $(VAR) expanded; with no command, args[0] is the executable
// (as for an image whose entrypoint is empty).
func containerArgv(pod *v1.Pod, c *v1.Container) []string {
	env := resolvedEnv(pod, c)
	argv := append(probes.ExpandCommand(c.Command, env), probes.ExpandCommand(c.Args, env)...)
	return argv
}

// hostnameMaxLen is the longest hostname kubelet gives a pod (64 bytes with the terminating NUL).
const hostnameMaxLen = 63

// podHostname is the pod's hostname as kubelet's GeneratePodHostNameAndDomain makes it (a
// container runtime then sets HOSTNAME to it): spec.hostname, else the pod's name, cut to 63
// characters with no trailing '-' or '.'.
func podHostname(pod *v1.Pod) string {
	h := pod.Name
	if pod.Spec.Hostname != "" {
		h = pod.Spec.Hostname
	}
	if len(h) > hostnameMaxLen {
		h = strings.TrimRight(h[:hostnameMaxLen], "-.")
	}
	return h
}
