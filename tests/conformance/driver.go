package conformance

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/probeactor/probeactor/actors/fakeruntime"
	"github.com/probeactor/probeactor/internal/clock"
	"github.com/probeactor/probeactor/messages"
	"github.com/probeactor/probeactor/probes"
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
)

// Driver is what a scenario needs from an implementation: kubelet's prober.Manager calls, the
// runtime's status push and the two read paths (results cache, probe-adjusted pod status).
type Driver interface {
	// AddPod may refuse a pod the API would refuse (the actor core validates it).
	AddPod(pod *v1.Pod) error
	RemovePod(pod *v1.Pod)
	CleanupPods(desired map[types.UID]struct{})
	StopLivenessAndStartup(pod *v1.Pod)
	SetPodStatus(pod *v1.Pod, status v1.PodStatus)
	Result(id messages.ContainerID, pt messages.ProbeType) (messages.Result, bool)
	PodStatus(uid types.UID) (v1.PodStatus, bool)
	// Stop ends everything the implementation started and returns when it is gone.
	Stop()
}

// Change is one result change as a subscriber observed it.
type Change struct {
	PodUID      types.UID
	ContainerID messages.ContainerID
	Type        messages.ProbeType
	Result      messages.Result
}

// Env is what a driver is built with. Prober and Runtime are required.
type Env struct {
	Prober  ProberFunc
	Runtime Runtime
	// OnChange, if set, subscribes to every result change (the kubelet-style syncLoop or an actor
	// subscriber calls it, one change at a time, in order). A slow OnChange is a slow subscriber.
	OnChange func(Change)
	// Rand is the start-up jitter source in [0, 1); nil means no jitter (exact scenarios).
	Rand func() float64
	// JitterWindow widens the jitter rule to workers created within it of the start
	// (actors.WithStartupJitterWindow, kubeletstyle.Options.JitterWindow); 0 is kubelet's rule.
	JitterWindow time.Duration
	// OnBlocked, if set, is told each time a worker waited d for its consumer (only implementations
	// with a blocking publish call it: the kubelet-style baseline).
	OnBlocked func(d time.Duration)
	// Shards is the actor core's number of executor shards (actors.WithShards); 0 is its default.
	// The kubelet-style baseline has no shards and ignores it.
	Shards int
}

// ProberFunc is a prober as a function (both implementations take Probe(ctx, spec, target)).
type ProberFunc func(ctx context.Context, spec *v1.Probe, t probes.Target) (probes.Outcome, error)

// Probe implements the prober interface of both implementations.
func (f ProberFunc) Probe(ctx context.Context, spec *v1.Probe, t probes.Target) (probes.Outcome, error) {
	return f(ctx, spec, t)
}

// Runtime is the container runtime both implementations are given: the actor core's actors.Runtime
// shape (the kubelet-style baseline uses only KillContainer). actors/fakeruntime is the one the
// study uses.
type Runtime interface {
	KillContainer(ctx context.Context, req messages.KillContainer) error
	ReportStatus(push func(pod *v1.Pod, status v1.PodStatus))
	probes.CommandRunner
}

// Kind names a probe in the fixtures by its exec command, so a fake prober can tell liveness,
// readiness and startup apart whatever copies an implementation makes of the spec.
func Kind(spec *v1.Probe) messages.ProbeType {
	if spec == nil || spec.Exec == nil || len(spec.Exec.Command) == 0 {
		return -1
	}
	switch spec.Exec.Command[0] {
	case "liveness":
		return messages.Liveness
	case "readiness":
		return messages.Readiness
	case "startup":
		return messages.Startup
	default:
		return -1
	}
}

// ScriptedProber answers per (container, probe type) with a settable outcome and counts calls. A
// panicking answer makes the attempt panic (kubelet's HandleCrash scenario).
type ScriptedProber struct {
	mu      sync.Mutex
	answers map[probeID]answer
	calls   map[probeID]int
}

type probeID struct {
	container string
	pt        messages.ProbeType
}

type answer struct {
	result probes.Result
	err    error
	panic  bool
}

// NewScriptedProber answers Success to everything until told otherwise.
func NewScriptedProber() *ScriptedProber {
	return &ScriptedProber{answers: make(map[probeID]answer), calls: make(map[probeID]int)}
}

// Set makes container's probe of type pt return r from now on.
func (p *ScriptedProber) Set(container string, pt messages.ProbeType, r probes.Result) {
	p.set(container, pt, answer{result: r})
}

// SetError makes the attempt fail to run (error, result discarded).
func (p *ScriptedProber) SetError(container string, pt messages.ProbeType, err error) {
	p.set(container, pt, answer{result: probes.Unknown, err: err})
}

// SetPanic makes the attempt panic.
func (p *ScriptedProber) SetPanic(container string, pt messages.ProbeType) {
	p.set(container, pt, answer{panic: true})
}

func (p *ScriptedProber) set(container string, pt messages.ProbeType, a answer) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.answers[probeID{container, pt}] = a
}

// Calls is how many attempts ran for container's probe of type pt.
func (p *ScriptedProber) Calls(container string, pt messages.ProbeType) int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.calls[probeID{container, pt}]
}

// Probe is the ProberFunc.
func (p *ScriptedProber) Probe(_ context.Context, spec *v1.Probe, t probes.Target) (probes.Outcome, error) {
	id := probeID{t.Container.Name, Kind(spec)}
	p.mu.Lock()
	p.calls[id]++
	a := p.answers[id] // zero value: Success
	p.mu.Unlock()
	if a.panic {
		panic(fmt.Sprintf("conformance: scripted panic in %s %s probe", id.container, id.pt))
	}
	return probes.Outcome{Result: a.result}, a.err
}

// GatedRuntime wraps the shared fake runtime (actors/fakeruntime) so that a scenario can hold kill
// requests and release them later: while held, a killed container keeps running with its old ID,
// which makes kubelet's "hold after liveness failure" observable. It records every request.
type GatedRuntime struct {
	*fakeruntime.Runtime

	mu      sync.Mutex
	held    bool
	pending []messages.KillContainer
	kills   []messages.KillContainer
}

// NewGatedRuntime returns a fake runtime on the real clock (virtual inside a synctest bubble) whose
// status pushes go to push.
func NewGatedRuntime(push func(pod *v1.Pod, status v1.PodStatus)) *GatedRuntime {
	g := &GatedRuntime{Runtime: fakeruntime.New(clock.Real())}
	g.ReportStatus(push)
	return g
}

// Hold makes kill requests wait until Release.
func (g *GatedRuntime) Hold() {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.held = true
}

// Release forwards the held requests to the fake runtime (which restarts the containers) and stops
// holding.
func (g *GatedRuntime) Release() {
	g.mu.Lock()
	pending := g.pending
	g.pending, g.held = nil, false
	g.mu.Unlock()
	for _, req := range pending {
		_ = g.Runtime.KillContainer(context.Background(), req)
	}
}

// KillContainer records req and forwards it unless held.
func (g *GatedRuntime) KillContainer(ctx context.Context, req messages.KillContainer) error {
	g.mu.Lock()
	g.kills = append(g.kills, req)
	if g.held {
		g.pending = append(g.pending, req)
		g.mu.Unlock()
		return nil
	}
	g.mu.Unlock()
	return g.Runtime.KillContainer(ctx, req)
}

// Kills returns every request received, held or not, in order.
func (g *GatedRuntime) Kills() []messages.KillContainer {
	g.mu.Lock()
	defer g.mu.Unlock()
	return append([]messages.KillContainer(nil), g.kills...)
}
