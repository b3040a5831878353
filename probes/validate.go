package probes

import (
	"fmt"
	"strings"

	v1 "k8s.io/api/core/v1"
	apivalidation "k8s.io/apimachinery/pkg/api/validation"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// API defaults of a probe (SetDefaults_Probe, SetDefaults_HTTPGetAction).
const (
	DefaultPeriodSeconds    = 10
	DefaultTimeoutSeconds   = 1
	DefaultSuccessThreshold = 1
	DefaultFailureThreshold = 3
	DefaultHTTPPath         = "/"
	DefaultHTTPScheme       = v1.URISchemeHTTP
)

// Pod-level API defaults applied by SetDefaults.
const (
	DefaultRestartPolicy                 = v1.RestartPolicyAlways
	DefaultTerminationGracePeriodSeconds = int64(30)
)

// SetDefaults applies the API server's defaults that matter for probing, in place: every probe of
// every container, init container and ephemeral container (SetProbeDefaults), the httpGet of every
// lifecycle hook (path "/", scheme HTTP), the pod's
// restartPolicy (Always) and terminationGracePeriodSeconds (30; a negative one becomes 1, as the
// API server's SetDefaults_Pod makes it), and container ports' protocol (TCP). A nil pod is left
// alone.
func SetDefaults(pod *v1.Pod) {
	if pod == nil {
		return
	}
	spec := &pod.Spec
	if spec.RestartPolicy == "" {
		spec.RestartPolicy = DefaultRestartPolicy
	}
	if spec.TerminationGracePeriodSeconds == nil {
		g := DefaultTerminationGracePeriodSeconds
		spec.TerminationGracePeriodSeconds = &g
	} else if *spec.TerminationGracePeriodSeconds < 0 {
		one := int64(1)
		spec.TerminationGracePeriodSeconds = &one
	}
	setContainer := func(c *v1.Container) {
		SetProbeDefaults(c.LivenessProbe)
		SetProbeDefaults(c.ReadinessProbe)
		SetProbeDefaults(c.StartupProbe)
		setLifecycleDefaults(c.Lifecycle)
		for i := range c.Ports {
			if c.Ports[i].Protocol == "" {
				c.Ports[i].Protocol = v1.ProtocolTCP
			}
		}
	}
	for i := range spec.InitContainers {
		setContainer(&spec.InitContainers[i])
	}
	for i := range spec.Containers {
		setContainer(&spec.Containers[i])
	}
	for i := range spec.EphemeralContainers {
		c := &spec.EphemeralContainers[i].EphemeralContainerCommon
		SetProbeDefaults(c.LivenessProbe)
		SetProbeDefaults(c.ReadinessProbe)
		SetProbeDefaults(c.StartupProbe)
	}
}

// SetProbeDefaults replaces a probe's zero fields by the API defaults: timeoutSeconds 1,
// periodSeconds 10, successThreshold 1, failureThreshold 3, and for httpGet path "/" and scheme HTTP;
// a grpc service left nil becomes "". A nil probe is left alone.
func SetProbeDefaults(p *v1.Probe) {
	if p == nil {
		return
	}
	if p.TimeoutSeconds == 0 {
		p.TimeoutSeconds = DefaultTimeoutSeconds
	}
	if p.PeriodSeconds == 0 {
		p.PeriodSeconds = DefaultPeriodSeconds
	}
	if p.SuccessThreshold == 0 {
		p.SuccessThreshold = DefaultSuccessThreshold
	}
	if p.FailureThreshold == 0 {
		p.FailureThreshold = DefaultFailureThreshold
	}
	if h := p.HTTPGet; h != nil {
		if h.Path == "" {
			h.Path = DefaultHTTPPath
		}
		if h.Scheme == "" {
			h.Scheme = DefaultHTTPScheme
		}
	}
	if g := p.GRPC; g != nil && g.Service == nil {
		empty := ""
		g.Service = &empty
	}
}

// ValidatePod checks every probe and lifecycle hook of pod with the API server's rules
// (pkg/apis/core/validation, 1.37:
// httpGet.protocol and grpc.mode included, whatever their feature gates: the API server drops a
// field whose gate is off before it validates, and this function leaves gates to its callers) and
// returns all violations, each naming its field path, e.g.
// "spec.containers[0].livenessProbe.successThreshold: Invalid value: 2: must be 1". Regular init
// containers and ephemeral containers may not have probes; sidecars (init containers with
// restartPolicy Always) are validated like containers. Run it after SetDefaults: like the API server,
// it sees defaulted objects (an empty httpGet.path, for example, is an error).
func ValidatePod(pod *v1.Pod) field.ErrorList {
	if pod == nil {
		return field.ErrorList{field.Required(field.NewPath("spec"), "pod is nil")}
	}
	var errs field.ErrorList
	spec := lazyPath{name: "spec"}
	for i := range pod.Spec.InitContainers {
		c := &pod.Spec.InitContainers[i]
		p := spec.child("initContainers").index(i)
		if c.RestartPolicy != nil && *c.RestartPolicy == v1.ContainerRestartPolicyAlways {
			errs = append(errs, validateLifecycle(c.Lifecycle, pod.Spec.TerminationGracePeriodSeconds, p.child("lifecycle"))...)
			errs = append(errs, validateContainerProbes(c.LivenessProbe, c.ReadinessProbe, c.StartupProbe, p)...)
			continue
		}
		if c.Lifecycle != nil {
			errs = append(errs, field.Forbidden(p.child("lifecycle").build(), "may not be set for init containers without restartPolicy=Always"))
		}
		for _, f := range probeFields(c.LivenessProbe, c.ReadinessProbe, c.StartupProbe) {
			errs = append(errs, field.Forbidden(p.child(f).build(), "may not be set for init containers without restartPolicy=Always"))
		}
	}
	for i := range pod.Spec.Containers {
		c := &pod.Spec.Containers[i]
		p := spec.child("containers").index(i)
		errs = append(errs, validateLifecycle(c.Lifecycle, pod.Spec.TerminationGracePeriodSeconds, p.child("lifecycle"))...)
		errs = append(errs, validateContainerProbes(c.LivenessProbe, c.ReadinessProbe, c.StartupProbe, p)...)
	}
	for i := range pod.Spec.EphemeralContainers {
		c := &pod.Spec.EphemeralContainers[i].EphemeralContainerCommon
		for _, f := range probeFields(c.LivenessProbe, c.ReadinessProbe, c.StartupProbe) {
			errs = append(errs, field.Forbidden(spec.child("ephemeralContainers").index(i).child(f).build(),
				"cannot be set for an Ephemeral Container"))
		}
	}
	return errs
}

// lazyPath is a field path that becomes a *field.Path only when an error names it. A *field.Path
// escapes to the heap (its String does), so building one per container and probe was most of what
// a valid pod's validation allocated; a lazyPath's elements live in their callers' frames (child
// and index are inlined, and no function keeps a lazyPath), and a valid pod allocates nothing.
type lazyPath struct {
	parent *lazyPath
	name   string // "" for the element i of the list parent
	i      int
}

// child is the field name of p.
func (p *lazyPath) child(name string) *lazyPath { return &lazyPath{parent: p, name: name} }

// index is the element i of the list p.
func (p *lazyPath) index(i int) *lazyPath { return &lazyPath{parent: p, i: i} }

// build returns p as a *field.Path, for an error. The *field.Path gets copies of the names: escape
// analysis tells no field of a lazyPath from another, and a name stored in a *field.Path would make
// every parent escape too.
func (p *lazyPath) build() *field.Path {
	switch {
	case p.parent == nil:
		return field.NewPath(strings.Clone(p.name))
	case p.name == "":
		return p.parent.build().Index(p.i)
	default:
		return p.parent.build().Child(strings.Clone(p.name))
	}
}

// probeFields names the probe fields that are set, in the API's field order.
func probeFields(liveness, readiness, startup *v1.Probe) []string {
	var set []string
	if liveness != nil {
		set = append(set, "livenessProbe")
	}
	if readiness != nil {
		set = append(set, "readinessProbe")
	}
	if startup != nil {
		set = append(set, "startupProbe")
	}
	return set
}

func validateContainerProbes(liveness, readiness, startup *v1.Probe, path *lazyPath) field.ErrorList {
	var errs field.ErrorList
	if liveness != nil {
		p := path.child("livenessProbe")
		errs = append(errs, validateProbe(liveness, p)...)
		if liveness.SuccessThreshold != 1 {
			errs = append(errs, field.Invalid(p.child("successThreshold").build(), liveness.SuccessThreshold, "must be 1"))
		}
	}
	if readiness != nil {
		p := path.child("readinessProbe")
		errs = append(errs, validateProbe(readiness, p)...)
		if readiness.TerminationGracePeriodSeconds != nil {
			errs = append(errs, field.Invalid(p.child("terminationGracePeriodSeconds").build(),
				*readiness.TerminationGracePeriodSeconds, "must not be set for readinessProbes"))
		}
	}
	if startup != nil {
		p := path.child("startupProbe")
		errs = append(errs, validateProbe(startup, p)...)
		if startup.SuccessThreshold != 1 {
			errs = append(errs, field.Invalid(p.child("successThreshold").build(), startup.SuccessThreshold, "must be 1"))
		}
	}
	return errs
}

func validateProbe(probe *v1.Probe, path *lazyPath) field.ErrorList {
	errs := validateHandler(&probe.ProbeHandler, path)
	for _, f := range []struct {
		name  string
		value int32
	}{
		{"initialDelaySeconds", probe.InitialDelaySeconds},
		{"timeoutSeconds", probe.TimeoutSeconds},
		{"periodSeconds", probe.PeriodSeconds},
		{"successThreshold", probe.SuccessThreshold},
		{"failureThreshold", probe.FailureThreshold},
	} {
		if f.value < 0 {
			errs = append(errs, field.Invalid(path.child(f.name).build(), int64(f.value), apivalidation.IsNegativeErrorMsg))
		}
	}
	if g := probe.TerminationGracePeriodSeconds; g != nil && *g <= 0 {
		errs = append(errs, field.Invalid(path.child("terminationGracePeriodSeconds").build(), *g, "must be greater than 0"))
	}
	return errs
}

// validateHandler checks that h has exactly one handler, in the API's order (exec, httpGet,
// tcpSocket, grpc: a later one is forbidden), and that one's fields.
func validateHandler(h *v1.ProbeHandler, path *lazyPath) field.ErrorList {
	var errs field.ErrorList
	n := 0
	// first reports whether the handler name is set and the first set: a later one is forbidden.
	first := func(name string, set bool) bool {
		if !set {
			return false
		}
		if n++; n > 1 {
			errs = append(errs, field.Forbidden(path.child(name).build(), "may not specify more than 1 handler type"))
			return false
		}
		return true
	}
	if first("exec", h.Exec != nil) && len(h.Exec.Command) == 0 {
		errs = append(errs, field.Required(path.child("exec").child("command").build(), ""))
	}
	if first("httpGet", h.HTTPGet != nil) {
		errs = append(errs, validateHTTPGet(h.HTTPGet, path.child("httpGet"))...)
	}
	if first("tcpSocket", h.TCPSocket != nil) {
		errs = append(errs, validatePortNumOrName(h.TCPSocket.Port, path.child("tcpSocket").child("port"))...)
	}
	if first("grpc", h.GRPC != nil) {
		p := path.child("grpc")
		errs = append(errs, validatePortNumOrName(intstr.FromInt32(h.GRPC.Port), p.child("port"))...)
		if m := h.GRPC.Mode; m != nil && *m != v1.GRPCProbeModePlaintext && *m != v1.GRPCProbeModeTLS {
			errs = append(errs, field.NotSupported(p.child("mode").build(), *m, supportedGRPCProbeModes))
		}
	}
	if n == 0 {
		errs = append(errs, field.Required(path.build(), "must specify a handler type"))
	}
	return errs
}

var (
	supportedHTTPSchemes    = []string{string(v1.URISchemeHTTP), string(v1.URISchemeHTTPS)}
	supportedHTTPProtocols  = []string{string(v1.HTTPProtocolHTTP1), string(v1.HTTPProtocolHTTP2)}
	supportedGRPCProbeModes = []string{string(v1.GRPCProbeModePlaintext), string(v1.GRPCProbeModeTLS)}
)

func validateHTTPGet(h *v1.HTTPGetAction, path *lazyPath) field.ErrorList {
	var errs field.ErrorList
	if h.Path == "" {
		errs = append(errs, field.Required(path.child("path").build(), ""))
	}
	errs = append(errs, validatePortNumOrName(h.Port, path.child("port"))...)
	if h.Scheme != v1.URISchemeHTTP && h.Scheme != v1.URISchemeHTTPS {
		errs = append(errs, field.NotSupported(path.child("scheme").build(), h.Scheme, supportedHTTPSchemes))
	}
	for _, hdr := range h.HTTPHeaders {
		for _, msg := range validation.IsHTTPHeaderName(hdr.Name) {
			errs = append(errs, field.Invalid(path.child("httpHeaders").build(), hdr.Name, msg))
		}
	}
	// kubelet 1.37 (H2CContainerProbe): HTTP2 is h2c, so plain HTTP to the pod itself.
	if pr := h.Protocol; pr != nil {
		switch {
		case *pr != v1.HTTPProtocolHTTP1 && *pr != v1.HTTPProtocolHTTP2:
			errs = append(errs, field.NotSupported(path.child("protocol").build(), *pr, supportedHTTPProtocols))
		case *pr == v1.HTTPProtocolHTTP2 && h.Scheme != v1.URISchemeHTTP:
			errs = append(errs, field.Invalid(path.child("protocol").build(), *pr, "is only supported with HTTP (H2C)"))
		case *pr == v1.HTTPProtocolHTTP2 && h.Host != "":
			errs = append(errs, field.Invalid(path.child("host").build(), h.Host, "must be empty when `protocol` is \"HTTP2\""))
		default:
		}
	}
	return errs
}

// validatePortNumOrName is the API's ValidatePortNumOrName: a number in 1–65535 or an IANA_SVC_NAME.
func validatePortNumOrName(port intstr.IntOrString, path *lazyPath) field.ErrorList {
	var errs field.ErrorList
	switch port.Type {
	case intstr.Int:
		for _, msg := range validation.IsValidPortNum(port.IntValue()) {
			errs = append(errs, field.Invalid(path.build(), port.IntValue(), msg))
		}
	case intstr.String:
		for _, msg := range validation.IsValidPortName(port.StrVal) {
			errs = append(errs, field.Invalid(path.build(), port.StrVal, msg))
		}
	default:
		errs = append(errs, field.InternalError(path.build(), fmt.Errorf("unknown type: %v", port.Type)))
	}
	return errs
}
