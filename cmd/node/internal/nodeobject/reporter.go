package nodeobject

import (
	"context"
	"runtime"
	"slices"
	"strings"
	"sync"
	"time"

	v1 "k8s.io/api/core/v1"
)

// DefaultCheckTimeout bounds the health checks of one Node call: a check that does not answer
// within it fails (Ready False), and /nodes answers anyway.
const DefaultCheckTimeout = 2 * time.Second

// Options configure a Reporter.
type Options struct {
	// Name is --node-name; "" names the node after the host (Host.Hostname).
	Name        string
	Start       time.Time // when node started: creationTimestamp, and Ready's first transition
	Port        int       // node's API port
	NodeVersion string    // `node version`'s
	// Failures runs node's health checks and returns those that fail ("name: error" each;
	// health.Failures over node's checks), within ctx.
	Failures func(ctx context.Context) []string
	// CheckTimeout bounds Failures (default DefaultCheckTimeout).
	CheckTimeout time.Duration
	// ReadHost reads the machine (default ReadHost); Now is the clock (default time.Now).
	ReadHost func() (Host, error)
	Now      func() time.Time
}

// Reporter is node's Node object: the machine read at each call, the health checks run, Ready's
// transitions and node's own conditions kept between calls. Safe for concurrent use.
type Reporter struct {
	opts Options

	mu         sync.Mutex
	readySeen  bool // a call has seen Ready yet
	ready      bool
	readySince time.Time
	own        map[v1.NodeConditionType]v1.NodeCondition
}

// New returns the Reporter of opts.
func New(opts Options) *Reporter {
	if opts.CheckTimeout <= 0 {
		opts.CheckTimeout = DefaultCheckTimeout
	}
	if opts.ReadHost == nil {
		opts.ReadHost = ReadHost
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	if opts.Failures == nil {
		opts.Failures = func(context.Context) []string { return nil }
	}
	return &Reporter{opts: opts, own: map[v1.NodeConditionType]v1.NodeCondition{}}
}

// Node reads the machine, runs the health checks and builds the node as it is now. Its error is
// the machine's that could not be read (its hostname, CPUs or memory).
func (r *Reporter) Node(ctx context.Context) (v1.Node, error) {
	in, err := r.machine()
	if err != nil {
		return v1.Node{}, err
	}
	checkCtx, cancel := context.WithTimeout(ctx, r.opts.CheckTimeout)
	in.Failures = r.opts.Failures(checkCtx)
	cancel()
	in.Now = r.opts.Now()
	in.ReadySince, in.Conditions = r.observeReady(len(in.Failures) == 0, in.Now), r.conditions()
	return Build(in), nil
}

// Machine is the node without conditions, and no health check run: what a fleet node tells its
// aggregator of itself (fleet/link's SetNode), which makes its own Ready from its contact.
func (r *Reporter) Machine() (v1.Node, error) {
	in, err := r.machine()
	if err != nil {
		return v1.Node{}, err
	}
	n := Build(in)
	n.Status.Conditions = nil
	return n, nil
}

// machine is Build's input with the machine read, and no condition yet.
func (r *Reporter) machine() (Info, error) {
	host, err := r.opts.ReadHost()
	if err != nil {
		return Info{}, err
	}
	name := r.opts.Name
	if name == "" {
		name = host.Hostname
	}
	return Info{Name: name, Created: r.opts.Start, Host: host, OS: runtime.GOOS, Arch: runtime.GOARCH,
		NodeVersion: r.opts.NodeVersion, Port: r.opts.Port}, nil
}

// observeReady records Ready's value at now and returns since when it holds: the first value
// seen since node's start (checks run only when asked; the first answer is dated at the start),
// a change since the call that saw it.
func (r *Reporter) observeReady(ready bool, now time.Time) time.Time {
	r.mu.Lock()
	defer r.mu.Unlock()
	switch {
	case !r.readySeen:
		r.readySeen, r.ready, r.readySince = true, ready, r.opts.Start
	case r.ready != ready:
		r.ready, r.readySince = ready, now
	}
	return r.readySince
}

// SetCondition records one of node's own conditions (by type), as the fleet uplink does (its
// Coalescer): one whose status, reason and message are unchanged keeps the transition it had.
func (r *Reporter) SetCondition(c v1.NodeCondition) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if old, ok := r.own[c.Type]; ok && old.Status == c.Status && old.Reason == c.Reason && old.Message == c.Message {
		return
	}
	r.own[c.Type] = c
}

// conditions are node's own, sorted by type (as the aggregator lists them).
func (r *Reporter) conditions() []v1.NodeCondition {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := make([]v1.NodeCondition, 0, len(r.own))
	for _, c := range r.own {
		out = append(out, c)
	}
	slices.SortFunc(out, func(a, b v1.NodeCondition) int { return strings.Compare(string(a.Type), string(b.Type)) })
	return out
}
