package statuspage

import (
	"fmt"
	"sort"
	"strconv"
	"strings"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/intstr"

	"github.com/probeactor/probeactor/internal/podapi"
	"github.com/probeactor/probeactor/messages"
)

// MaxText caps the characters of an event message shown (a probe's output may be 10 KiB).
const MaxText = 300

// view is everything the template shows; buildView makes it from plain data (no I/O, no clock).
type view struct {
	Refresh     int // seconds between the page's own reloads
	Generated   string
	Pods        []podView
	Events      []eventView
	EventsTotal int // recorded events; Events shows the newest MaxEvents of them
	Depth       int
	Stats       Stats
}

type podView struct {
	Namespace, Name, UID, Phase, PodIP, Ready string
	Containers                                []containerView
}

type containerView struct {
	Name     string
	Kind     string // "init", "sidecar" or "" (an app container)
	State    string
	Ready    string
	Started  string
	Restarts int32
	Probes   []probeView
	// StartedAfter and ReadyAfter are the current instance's time from its start to Started and
	// to Ready ("" while not known; startup.go).
	StartedAfter string
	ReadyAfter   string
}

type probeView struct {
	Kind        string // liveness, readiness, startup
	Handler     string // http, https, tcp, exec, grpc
	Target      string // e.g. "http GET :8080/healthz"
	Timing      string
	Last        string // the last attempt's outcome ("none": no attempt yet)
	LastAt      string
	LastFailure string // the last failure's or error's message
	FailureAt   string
	Strip       []cell // Depth cells, oldest first; "none" cells pad the left
}

type cell struct{ Class, Title string }

type eventView struct {
	Time, Type, Reason, Object, Container, Message string
	Count                                          int32
}

// buildView turns pods, events and probe histories into the page's view. probe returns a probe's
// history (ok false: none recorded yet).
func buildView(pods []v1.Pod, events []v1.Event, probe func(Key) (Probe, bool), maxEvents int, refresh time.Duration, now time.Time, stats Stats) view {
	v := view{Refresh: max(1, int(refresh/time.Second)), Generated: now.Format("2006-01-02 15:04:05 MST"), Depth: Depth, Stats: stats, EventsTotal: len(events)}
	for i := range pods {
		v.Pods = append(v.Pods, podViewOf(&pods[i], probe))
	}
	v.Events = eventViews(events, maxEvents)
	return v
}

func podViewOf(p *v1.Pod, probe func(Key) (Probe, bool)) podView {
	pv := podView{Namespace: p.Namespace, Name: p.Name, UID: string(p.UID), Phase: string(p.Status.Phase), PodIP: p.Status.PodIP, Ready: "Unknown"}
	if pv.Phase == "" {
		pv.Phase = string(v1.PodPending)
	}
	for _, c := range p.Status.Conditions {
		if c.Type == v1.PodReady {
			pv.Ready = string(c.Status)
		}
	}
	add := func(c *v1.Container, statuses []v1.ContainerStatus, kind string) {
		cv := containerView{Name: c.Name, Kind: kind, State: "not created", Ready: "false", Started: "-"}
		if cs, ok := podapi.FindStatus(statuses, c.Name); ok {
			cv.State = stateText(cs.State)
			cv.Ready = strconv.FormatBool(cs.Ready)
			if cs.Started != nil {
				cv.Started = strconv.FormatBool(*cs.Started)
			}
			cv.Restarts = cs.RestartCount
		}
		for _, typ := range messages.ProbeTypes {
			spec := typ.Spec(c)
			if spec == nil {
				continue
			}
			h, _ := probe(Key{Pod: p.UID, Container: c.Name, Probe: typ}) // none yet: the zero Probe
			cv.Probes = append(cv.Probes, probeViewOf(typ, spec, c, h))
		}
		pv.Containers = append(pv.Containers, cv)
	}
	for i := range p.Spec.InitContainers {
		c := &p.Spec.InitContainers[i]
		kind := "init"
		if c.RestartPolicy != nil && *c.RestartPolicy == v1.ContainerRestartPolicyAlways {
			kind = "sidecar"
		}
		add(c, p.Status.InitContainerStatuses, kind)
	}
	for i := range p.Spec.Containers {
		add(&p.Spec.Containers[i], p.Status.ContainerStatuses, "")
	}
	return pv
}

func stateText(s v1.ContainerState) string {
	switch {
	case s.Running != nil:
		return "running since " + s.Running.StartedAt.Format("15:04:05")
	case s.Waiting != nil:
		return strings.TrimSpace("waiting " + s.Waiting.Reason)
	case s.Terminated != nil:
		return fmt.Sprintf("terminated %s (exit %d)", s.Terminated.Reason, s.Terminated.ExitCode)
	default:
		return "not created"
	}
}

func probeViewOf(typ messages.ProbeType, spec *v1.Probe, c *v1.Container, h Probe) probeView {
	handler, target := describe(spec, c)
	pv := probeView{
		Kind:    strings.ToLower(typ.String()),
		Handler: handler,
		Target:  target,
		Timing: fmt.Sprintf("every %ds, timeout %ds, failure threshold %d, success threshold %d",
			spec.PeriodSeconds, spec.TimeoutSeconds, spec.FailureThreshold, spec.SuccessThreshold),
		Last:  "none",
		Strip: make([]cell, 0, Depth),
	}
	if last := h.Last(); last.Outcome != 0 {
		pv.Last, pv.LastAt = last.Outcome.String(), last.At.Format("15:04:05")
	}
	if f := h.LastFailure; f.Outcome != 0 {
		pv.LastFailure, pv.FailureAt = f.Message, f.At.Format("15:04:05")
		if pv.LastFailure == "" {
			pv.LastFailure = f.Outcome.String() + " (no output)"
		}
	}
	recent := h.Recent
	if len(recent) > Depth {
		recent = recent[len(recent)-Depth:]
	}
	for range Depth - len(recent) {
		pv.Strip = append(pv.Strip, cell{Class: "none", Title: "no attempt"})
	}
	for _, a := range recent {
		title := a.At.Format("15:04:05.000") + " " + a.Outcome.String()
		if a.Message != "" {
			title += ": " + a.Message
		}
		pv.Strip = append(pv.Strip, cell{Class: a.Outcome.String(), Title: title})
	}
	return pv
}

// describe names a probe's handler and target as a person would type them:
// "http GET :8080/healthz", "tcp :6379", "exec [cat /tmp/healthy]", "grpc :9000 service=x".
func describe(p *v1.Probe, c *v1.Container) (handler, target string) {
	switch {
	case p.HTTPGet != nil:
		h := p.HTTPGet
		scheme := strings.ToLower(string(h.Scheme))
		if scheme == "" {
			scheme = "http"
		}
		return scheme, fmt.Sprintf("%s GET %s:%s%s", scheme, h.Host, port(h.Port, c), h.Path)
	case p.TCPSocket != nil:
		return "tcp", fmt.Sprintf("tcp %s:%s", p.TCPSocket.Host, port(p.TCPSocket.Port, c))
	case p.Exec != nil:
		return "exec", fmt.Sprintf("exec %v", p.Exec.Command)
	case p.GRPC != nil:
		t := fmt.Sprintf("grpc :%d", p.GRPC.Port)
		if p.GRPC.Service != nil && *p.GRPC.Service != "" {
			t += " service=" + *p.GRPC.Service
		}
		return "grpc", t
	default:
		return "none", "no handler"
	}
}

// port is a probe's port as a number when a named port resolves through the container's ports.
func port(p intstr.IntOrString, c *v1.Container) string {
	if p.Type == intstr.Int {
		return strconv.Itoa(p.IntValue())
	}
	for _, cp := range c.Ports {
		if cp.Name == p.StrVal {
			return strconv.Itoa(int(cp.ContainerPort))
		}
	}
	return p.StrVal
}

// eventViews is the newest max events, newest first, their messages capped at MaxText.
func eventViews(events []v1.Event, limit int) []eventView {
	sorted := make([]*v1.Event, len(events))
	for i := range events {
		sorted[i] = &events[i]
	}
	sort.SliceStable(sorted, func(i, j int) bool { return sorted[j].LastTimestamp.Before(&sorted[i].LastTimestamp) })
	if len(sorted) > limit {
		sorted = sorted[:limit]
	}
	out := make([]eventView, 0, len(sorted))
	for _, e := range sorted {
		container := podapi.FieldPathContainer(e.InvolvedObject.FieldPath)
		if container == "" {
			container = "-"
		}
		out = append(out, eventView{
			Time: e.LastTimestamp.Format("15:04:05"), Type: e.Type, Reason: e.Reason, Count: e.Count,
			Object:    e.InvolvedObject.Namespace + "/" + e.InvolvedObject.Name,
			Container: container,
			Message:   truncate(strings.TrimSpace(e.Message), MaxText),
		})
	}
	return out
}
