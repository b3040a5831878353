package explain

import (
	"fmt"
	"strings"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/probeactor/probeactor/internal/kubectl"
	"github.com/probeactor/probeactor/internal/probetiming"
	"github.com/probeactor/probeactor/messages"
)

// Report is what node explain says about one pod.
type Report struct {
	Namespace  string      `json:"namespace"`
	Name       string      `json:"name"`
	Containers []Container `json:"containers"`
	Warnings   []Warning   `json:"warnings"`
}

// Container is one probed container (an app container or a sidecar).
type Container struct {
	Name    string  `json:"name"`
	Sidecar bool    `json:"sidecar,omitempty"`
	Probes  []Probe `json:"probes"`
}

// Probe is what one probe means in time.
type Probe struct {
	Type  string `json:"type"`  // Liveness, Readiness, Startup
	Field string `json:"field"` // spec.containers[0].livenessProbe
	Spec  string `json:"spec"`  // as kubectl describe prints it
	Facts []Fact `json:"facts"`
}

// Fact is one timing a probe implies: what, and when at the earliest and at the latest (seconds,
// from the moment What names). Note qualifies it (kubelet's start-up jitter, ...).
type Fact struct {
	What     string  `json:"what"`
	Earliest float64 `json:"earliestSeconds"`
	Latest   float64 `json:"latestSeconds"`
	Note     string  `json:"note,omitempty"`
}

// Warning is a classic mistake found in the spec, at a field path.
type Warning struct {
	Field   string `json:"field"`
	Message string `json:"message"`
}

// Pod explains every probe of a pod whose defaults were applied and which passed validation.
func Pod(pod *v1.Pod) Report {
	r := Report{Namespace: pod.Namespace, Name: pod.Name, Containers: []Container{}, Warnings: []Warning{}}
	spec := field.NewPath("spec")
	grace := int64(30) // the API server's default; a validated pod has it set
	if g := pod.Spec.TerminationGracePeriodSeconds; g != nil {
		grace = *g
	}
	for i := range pod.Spec.InitContainers {
		c := &pod.Spec.InitContainers[i]
		if c.RestartPolicy != nil && *c.RestartPolicy == v1.ContainerRestartPolicyAlways {
			r.add(c, spec.Child("initContainers").Index(i), true, pod.Spec.RestartPolicy)
			r.Warnings = append(r.Warnings, preStopWarnings(c, spec.Child("initContainers").Index(i), grace)...)
		}
	}
	for i := range pod.Spec.Containers {
		r.add(&pod.Spec.Containers[i], spec.Child("containers").Index(i), false, pod.Spec.RestartPolicy)
		r.Warnings = append(r.Warnings, preStopWarnings(&pod.Spec.Containers[i], spec.Child("containers").Index(i), grace)...)
	}
	return r
}

// minimumGrace is kubelet's floor on the time between SIGTERM and SIGKILL.
const minimumGrace = 2

// preStopWarnings are the classic mistakes of a preStop hook against the grace period it runs in
// (kubelet's killContainer: the hook first, for at most the grace period, then SIGTERM with what is
// left, at least 2 s): a grace period of 0 runs no hook at all, and a sleep that uses the grace
// period up leaves the application kubelet's 2 s floor after SIGTERM, for a pod's stop or for a
// liveness kill with its own, shorter, terminationGracePeriodSeconds.
func preStopWarnings(c *v1.Container, path *field.Path, grace int64) []Warning {
	if c.Lifecycle == nil || c.Lifecycle.PreStop == nil {
		return nil
	}
	hook := path.Child("lifecycle", "preStop")
	if grace == 0 {
		return []Warning{{Field: hook.String(), Message: "terminationGracePeriodSeconds is 0: kubelet runs no preStop hook when there is no grace period, so this one never runs"}}
	}
	sleep := c.Lifecycle.PreStop.Sleep
	if sleep == nil {
		return nil
	}
	var out []Warning
	if left := grace - sleep.Seconds; left < minimumGrace {
		out = append(out, Warning{Field: hook.Child("sleep", "seconds").String(), Message: fmt.Sprintf("the preStop sleep of %d s uses terminationGracePeriodSeconds %d up: "+
			"SIGTERM comes after it with only kubelet's %d s floor before SIGKILL; raise terminationGracePeriodSeconds to the sleep plus the time the application needs to stop",
			sleep.Seconds, grace, minimumGrace)})
	}
	if l := c.LivenessProbe; l != nil && l.TerminationGracePeriodSeconds != nil && *l.TerminationGracePeriodSeconds-sleep.Seconds < minimumGrace {
		out = append(out, Warning{Field: path.Child("livenessProbe", "terminationGracePeriodSeconds").String(), Message: fmt.Sprintf(
			"a liveness kill gets %d s, and the preStop sleep of %d s uses it up: the hook is cut short or SIGTERM comes with only kubelet's %d s floor before SIGKILL",
			*l.TerminationGracePeriodSeconds, sleep.Seconds, minimumGrace)})
	}
	return out
}

func (r *Report) add(c *v1.Container, path *field.Path, sidecar bool, policy v1.RestartPolicy) {
	if c.LivenessProbe == nil && c.ReadinessProbe == nil && c.StartupProbe == nil {
		return
	}
	restarts := sidecar || policy != v1.RestartPolicyNever
	out := Container{Name: c.Name, Sidecar: sidecar}
	var startup *probetiming.Timing
	if c.StartupProbe != nil {
		t := probetiming.Of(c.StartupProbe)
		startup = &t
	}
	for _, pt := range messages.ProbeTypes { // startup, readiness, liveness
		spec := pt.Spec(c)
		if spec == nil {
			continue
		}
		p := Probe{Type: pt.String(), Field: path.Child(fieldName(pt)).String(), Spec: kubectl.Probe(spec)}
		p.Facts = facts(pt, probetiming.Of(spec), startup, restarts)
		out.Probes = append(out.Probes, p)
	}
	r.Containers = append(r.Containers, out)
	r.Warnings = append(r.Warnings, warnings(c, path, startup)...)
}

func fieldName(pt messages.ProbeType) string {
	return strings.ToLower(pt.String()) + "Probe"
}

func fact(what string, w probetiming.Window, note string) Fact {
	return Fact{What: what, Earliest: w.Earliest.Seconds(), Latest: w.Latest.Seconds(), Note: note}
}

func facts(pt messages.ProbeType, t probetiming.Timing, startup *probetiming.Timing, restarts bool) []Fact {
	kill := "killed and restarted"
	if !restarts {
		kill = "killed (restartPolicy Never: not restarted)"
	}
	switch pt {
	case messages.Startup:
		return []Fact{
			fact("startup budget: a container that never passes is "+kill+", after its start", t.StartWindow(),
				"the earliest is the time the application can count on to start"),
			fact("started after a healthy start", probetiming.StartedWindow(&t), ""),
		}
	case messages.Liveness:
		out := []Fact{fact("after a failure begins, the container is "+kill, t.FailureWindow(), "")}
		if startup == nil {
			out = append(out, fact("startup budget: a container that never becomes healthy is "+kill+", after its start", t.StartWindow(),
				"no startup probe: liveness probes from initialDelaySeconds on"))
		} else {
			out = append(out, Fact{What: "probes only once the startup probe passed", Note: "its initialDelaySeconds still counts from the container's start"})
		}
		return out
	default: // readiness
		w := probetiming.ReadyWindow(startup, t, false)
		j := probetiming.ReadyWindow(startup, t, true)
		note := "the status manager triggers the probe as soon as the container has started"
		if j.Latest > w.Latest {
			note = fmt.Sprintf("%s; up to %s right after node (re)starts: kubelet's start-up jitter delays the worker's first run by up to a period",
				note, probetiming.Bound(j.Latest))
		}
		return []Fact{
			fact("ready after a healthy start", w, note),
			fact("after a failure begins, the container is marked not ready", t.FailureWindow(), ""),
		}
	}
}

// execSlowStart is the timeout at or under which an exec probe is flagged: starting a process (a
// shell, a runtime's CLI) can take most of a second on a busy node, and a timed-out exec probe
// counts as a failure (ExecProbeTimeout, kubelet 1.20+).
const execSlowStart = time.Second

func warnings(c *v1.Container, path *field.Path, startup *probetiming.Timing) []Warning {
	var out []Warning
	add := func(p *field.Path, format string, args ...any) {
		out = append(out, Warning{Field: p.String(), Message: fmt.Sprintf(format, args...)})
	}
	live, ready := c.LivenessProbe, c.ReadinessProbe
	if live != nil && ready != nil && equality.Semantic.DeepEqual(live.ProbeHandler, ready.ProbeHandler) &&
		live.FailureThreshold == ready.FailureThreshold && live.PeriodSeconds == ready.PeriodSeconds {
		add(path, "livenessProbe and readinessProbe are the same check with the same thresholds (failureThreshold %d, periodSeconds %d): "+
			"the container is restarted just when it is taken out of service, so readiness never gets to shed load; "+
			"give liveness a higher failureThreshold, or have it check only that the process itself is alive",
			live.FailureThreshold, live.PeriodSeconds)
	}
	if live != nil && ready == nil {
		add(path, "livenessProbe without a readinessProbe: the container is Ready as soon as it has started, "+
			"so it receives traffic before it can serve and keeps receiving it until liveness restarts it")
	}
	for _, pt := range messages.ProbeTypes {
		p := pt.Spec(c)
		if p == nil {
			continue
		}
		pp := path.Child(fieldName(pt))
		if pt == messages.Liveness && p.TimeoutSeconds >= p.PeriodSeconds {
			add(pp.Child("timeoutSeconds"), "timeoutSeconds %d ≥ periodSeconds %d: a hanging check is retried back to back, "+
				"each attempt costs a whole timeout, and the kill comes later than periodSeconds × failureThreshold suggests",
				p.TimeoutSeconds, p.PeriodSeconds)
		}
		if p.Exec != nil && time.Duration(p.TimeoutSeconds)*time.Second <= execSlowStart {
			add(pp.Child("timeoutSeconds"), "exec probe with timeoutSeconds %d: starting the command alone can take most of a second "+
				"on a busy node, and a timed-out exec probe is a failure; allow a few seconds", p.TimeoutSeconds)
		}
	}
	if startup != nil && live != nil {
		budget := startup.StartWindow().Earliest
		if delay := time.Duration(live.InitialDelaySeconds) * time.Second; budget < delay {
			add(path.Child("startupProbe"), "the startup probe gives the application %s to start (its failure #%d can come then), "+
				"less than the livenessProbe's initialDelaySeconds %d it replaces: a slow start is killed earlier than before; "+
				"raise the startup probe's failureThreshold to at least %d",
				probetiming.Bound(budget), startup.Failure, live.InitialDelaySeconds, minFailures(*startup, delay))
		}
	}
	return out
}

// minFailures is the smallest failureThreshold that gives a startup probe of timing t at least
// budget: D + (F-1)·P ≥ budget.
func minFailures(t probetiming.Timing, budget time.Duration) int32 {
	need := budget - t.Delay
	return int32((need+t.Period-1)/t.Period) + 1
}
