package features

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
)

// Feature is the name of one feature gate.
type Feature string

// The gates probeactor acts on, named as kubelet names them.
const (
	// ContainerRestartRules (KEP-5307): a regular container's own restartPolicy and
	// restartPolicyRules (action Restart on exit codes In/NotIn) override the pod's restartPolicy,
	// for node's restarts, the pod's phase and the probe workers' keep-going after termination.
	ContainerRestartRules Feature = "ContainerRestartRules"
	// RestartAllContainersOnContainerExits (KEP-5532): the rule action RestartAllContainers restarts
	// every container of the pod in place.
	RestartAllContainersOnContainerExits Feature = "RestartAllContainersOnContainerExits"
	// H2CContainerProbe: httpGet.protocol HTTP2 makes an HTTP probe speak HTTP/2 in cleartext with
	// prior knowledge (h2c).
	H2CContainerProbe Feature = "H2CContainerProbe"
	// GRPCContainerProbeTLS: grpc.mode TLS makes a gRPC probe connect over TLS, unverified.
	GRPCContainerProbeTLS Feature = "GRPCContainerProbeTLS"
	// KubeletCrashLoopBackOffMax: the CrashLoopBackOff maximum is configurable (node's
	// --crashloop-backoff-max, 1 s to 300 s); off, it is kubelet's 300 s and may not be set.
	KubeletCrashLoopBackOffMax Feature = "KubeletCrashLoopBackOffMax"
	// ReduceDefaultCrashLoopBackOffDecay: CrashLoopBackOff starts at 1 s and doubles up to 60 s
	// (instead of 10 s up to 300 s).
	ReduceDefaultCrashLoopBackOffDecay Feature = "ReduceDefaultCrashLoopBackOffDecay"
	// ChangeContainerStatusOnKubeletRestart (KEP-4781, deprecated): on, a kubelet restart resets the
	// Ready and Started of containers that ran before it. probeactor implements only off.
	ChangeContainerStatusOnKubeletRestart Feature = "ChangeContainerStatusOnKubeletRestart"
	// ExecProbeTimeout: an exec probe's timeout is a Failure. GA and locked on.
	ExecProbeTimeout Feature = "ExecProbeTimeout"
	// PodObservedGenerationTracking: the pod status's observedGeneration and every condition's
	// carry the pod's generation. GA and locked on.
	PodObservedGenerationTracking Feature = "PodObservedGenerationTracking"
	// NodeDeclaredFeatures: GA and locked on; the two gates above that kubelet makes depend on it
	// are checked against it as kubelet does.
	NodeDeclaredFeatures Feature = "NodeDeclaredFeatures"

	// AllAlpha and AllBeta are kubelet's "every alpha (beta) gate"; probeactor refuses them, since
	// it implements only the gates listed here (kubelet 1.37.2 itself refuses AllAlpha=true alone:
	// alpha gates there depend on beta gates that are off).
	AllAlpha Feature = "AllAlpha"
	AllBeta  Feature = "AllBeta"
)

// Stage is a gate's maturity, as kubelet 1.37.2 declares it.
type Stage string

// Stages.
const (
	Alpha      Stage = "ALPHA"
	Beta       Stage = "BETA"
	GA         Stage = ""
	Deprecated Stage = "DEPRECATED"
)

// Spec is what kubelet 1.37.2 declares for a gate, plus what probeactor supports of it.
type Spec struct {
	Default bool
	Stage   Stage
	// Locked: kubelet refuses any value but Default.
	Locked bool
	// Only, when set, is the one value probeactor implements (kubelet would accept the other).
	Only *bool
	// DependsOn: kubelet refuses this gate on while one of these is off.
	DependsOn []Feature
}

var off = false

// known is kubelet 1.37.2's declaration of every gate probeactor knows.
var known = map[Feature]Spec{
	ContainerRestartRules:                 {Default: true, Stage: Beta},
	RestartAllContainersOnContainerExits:  {Default: true, Stage: Beta, DependsOn: []Feature{ContainerRestartRules, NodeDeclaredFeatures}},
	H2CContainerProbe:                     {Default: false, Stage: Alpha, DependsOn: []Feature{NodeDeclaredFeatures}},
	GRPCContainerProbeTLS:                 {Default: false, Stage: Alpha},
	KubeletCrashLoopBackOffMax:            {Default: true, Stage: Beta},
	ReduceDefaultCrashLoopBackOffDecay:    {Default: false, Stage: Alpha},
	ChangeContainerStatusOnKubeletRestart: {Default: false, Stage: Deprecated, Only: &off},
	ExecProbeTimeout:                      {Default: true, Stage: GA, Locked: true},
	NodeDeclaredFeatures:                  {Default: true, Stage: GA, Locked: true},
	PodObservedGenerationTracking:         {Default: true, Stage: GA, Locked: true},
}

// Known returns every gate Parse accepts, sorted.
func Known() []Feature {
	out := make([]Feature, 0, len(known))
	for f := range known {
		out = append(out, f)
	}
	slices.Sort(out)
	return out
}

// SpecOf returns what kubelet 1.37.2 declares for f, and whether f is known.
func SpecOf(f Feature) (Spec, bool) {
	s, ok := known[f]
	return s, ok
}

// Gates holds feature gate values. The zero value is kubelet 1.37.2's defaults; Parse and Set
// change it as kubelet's --feature-gates does.
type Gates struct {
	set   map[Feature]bool // every Name=value given so far; never mutated in place
	order []Feature        // the names in set, in the order first given (for String)
}

// Parse reads kubelet's --feature-gates syntax, "Name=true,Other=false" (blank entries skipped,
// spaces around names and values trimmed), onto the defaults.
func Parse(value string) (Gates, error) {
	var g Gates
	return g, g.Set(value)
}

// MustParse is Parse that panics on error, for literals in tests and examples.
func MustParse(value string) Gates {
	g, err := Parse(value)
	if err != nil {
		panic(err)
	}
	return g
}

// Enabled reports whether f is on: its value if it was set, else its default. An unknown f is off.
func (g Gates) Enabled(f Feature) bool {
	if v, ok := g.set[f]; ok {
		return v
	}
	return known[f].Default
}

// String is the gates set explicitly, in kubelet's syntax and the order first given ("" for the
// defaults).
func (g Gates) String() string {
	parts := make([]string, 0, len(g.order))
	for _, f := range g.order {
		parts = append(parts, fmt.Sprintf("%s=%t", f, g.set[f]))
	}
	return strings.Join(parts, ",")
}

// Set merges value (kubelet's syntax) into g, as a repeated --feature-gates flag does: it is
// flag.Value's Set. On error g is unchanged. The error texts are kubelet's: "missing bool value for
// X", "invalid value of X=Y, err: …", "unrecognized feature gate: X", "cannot set feature gate X to
// V, feature is locked to D", "X is enabled, but depends on features that are disabled: [Y]"; and
// for the value of a gate probeactor does not implement, "cannot set feature gate X to V:
// probeactor implements only X=D", for AllAlpha and AllBeta "cannot set feature gate AllAlpha:
// probeactor implements only the gates it names (…)".
func (g *Gates) Set(value string) error {
	next := Gates{set: make(map[Feature]bool, len(g.set)+1), order: slices.Clone(g.order)}
	for k, v := range g.set {
		next.set[k] = v
	}
	var errs []string
	for _, s := range strings.Split(value, ",") {
		if len(s) == 0 {
			continue
		}
		name, v, found := strings.Cut(s, "=")
		k := Feature(strings.TrimSpace(name))
		if !found {
			return fmt.Errorf("missing bool value for %s", k)
		}
		v = strings.TrimSpace(v)
		b, err := strconv.ParseBool(v)
		if err != nil {
			return fmt.Errorf("invalid value of %s=%s, err: %v", k, v, err)
		}
		if k == AllAlpha || k == AllBeta {
			errs = append(errs, fmt.Sprintf("cannot set feature gate %v: probeactor implements only the gates it names (%s)", k, names()))
			continue
		}
		if spec, ok := known[k]; !ok {
			return fmt.Errorf("unrecognized feature gate: %s", k)
		} else if spec.Locked && b != spec.Default {
			errs = append(errs, fmt.Sprintf("cannot set feature gate %v to %v, feature is locked to %v", k, b, spec.Default))
			continue
		} else if spec.Only != nil && b != *spec.Only {
			errs = append(errs, fmt.Sprintf("cannot set feature gate %v to %v: probeactor implements only %v=%v", k, b, k, *spec.Only))
			continue
		}
		if _, seen := next.set[k]; !seen {
			next.order = append(next.order, k)
		}
		next.set[k] = b
	}
	if len(errs) > 0 {
		return fmt.Errorf("%s", strings.Join(errs, "; "))
	}
	if err := next.checkDependencies(); err != nil {
		return err
	}
	*g = next
	return nil
}

// checkDependencies is kubelet's check that no enabled gate depends on a disabled one.
func (g Gates) checkDependencies() error {
	var errs []string
	for _, f := range Known() {
		spec := known[f]
		if len(spec.DependsOn) == 0 || !g.Enabled(f) {
			continue
		}
		var disabled []Feature
		for _, d := range spec.DependsOn {
			if !g.Enabled(d) {
				disabled = append(disabled, d)
			}
		}
		if len(disabled) > 0 {
			errs = append(errs, fmt.Sprintf("%s is enabled, but depends on features that are disabled: %v", f, disabled))
		}
	}
	if len(errs) > 0 {
		return fmt.Errorf("%s", strings.Join(errs, "; "))
	}
	return nil
}

// names is Known as one comma-separated string.
func names() string {
	var parts []string
	for _, f := range Known() {
		parts = append(parts, string(f))
	}
	return strings.Join(parts, ", ")
}

// Describe lists every gate with its stage and default, one per line, as kubelet's --feature-gates
// help does ("H2CContainerProbe=true|false (ALPHA - default=false)").
func Describe() string {
	var b strings.Builder
	for _, f := range Known() {
		spec := known[f]
		stage := string(spec.Stage)
		if stage == "" {
			stage = "GA"
		}
		fmt.Fprintf(&b, "%s=true|false (%s - default=%t)\n", f, stage, spec.Default)
	}
	return b.String()
}
