package main

import (
	"context"
	"sync"
	"time"

	"github.com/hashicorp/go-hclog"
	v1 "k8s.io/api/core/v1"

	resourceusage "github.com/probeactor/probeactor/cmd/node/internal/usage"
	"github.com/probeactor/probeactor/internal/clock"
	"github.com/probeactor/probeactor/wire/fleetv1"
)

// usageReporter is the fleet-usage part (--fleet): it samples what the node and its containers use
// (the Collector's read, as /metrics/resource serves it) at Start and then every period, and from
// the second sample on reports the window between the last two (resourceusage.Rates) to the fleet
// link, which sends each to the aggregator. A sample that fails is logged at debug and skipped: the
// next one starts a new window. Start starts one goroutine; Stop ends it and waits for it.
//
// With machine and setNode it also reads the node's own Node object (capacity, allocatable, system
// info, labels) at Start and every period and hands it to the link, which sends it only when it
// differs from the last (a CPU or memory hotplug), as kubelet posts its machine's facts with its
// node status. A machine that cannot be read is logged once at warn when it stops being readable,
// and the aggregator keeps the last facts it had.
type usageReporter struct {
	sample func() (resourceusage.Sample, error) // Collector.Sample
	report func(*fleetv1.Usage) error           // Link.SetUsage
	// machine and setNode are nodeobject.Reporter.Machine and Link.SetNode; nil: not read.
	machine func() (v1.Node, error)
	setNode func(*v1.Node)
	period  time.Duration // --node-status-update-frequency
	clock   clock.Clock   // the period's timers
	log     hclog.Logger

	mu   sync.Mutex
	stop chan struct{} // closed by Stop; nil before Start
	done chan struct{} // closed when the goroutine ends
}

// Start implements lifecycle.Component: the first sample is taken at once, on the goroutine.
func (r *usageReporter) Start(context.Context) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.stop != nil {
		return nil
	}
	r.stop, r.done = make(chan struct{}), make(chan struct{})
	go r.loop(r.stop, r.done)
	return nil
}

// Stop implements lifecycle.Component: no sample starts after it, and it returns once the
// goroutine has ended. Stop before Start, or a second Stop, does nothing.
func (r *usageReporter) Stop(context.Context) error {
	r.mu.Lock()
	stop, done := r.stop, r.done
	if stop != nil {
		select {
		case <-stop:
		default:
			close(stop)
		}
	}
	r.mu.Unlock()
	if done != nil {
		<-done
	}
	return nil
}

func (r *usageReporter) loop(stop <-chan struct{}, done chan<- struct{}) {
	defer close(done)
	var (
		prev       resourceusage.Sample
		have       bool // prev is a sample: the next one closes a window
		unreadable bool // the last machine read failed
	)
	for {
		unreadable = r.readMachine(unreadable)
		cur, err := r.sample()
		switch {
		case err != nil:
			r.log.Debug("usage not sampled; the next sample starts a new window", "error", err)
			have = false
		default:
			if have {
				if u := resourceusage.Rates(prev, cur); u != nil {
					if err := r.report(u); err != nil { // Rates makes what the wire takes
						r.log.Warn("usage not reported to the fleet aggregator", "error", err)
					}
				}
			}
			prev, have = cur, true
		}
		fired := make(chan struct{})
		t := clock.AfterFuncAt(r.clock, r.clock.Now().Add(r.period), func() { close(fired) })
		select {
		case <-fired:
		case <-stop:
			t.Stop()
			return
		}
	}
}

// readMachine hands the node's Node object to the link and returns whether it could not be read;
// unreadable is the last read's answer, so that a machine that stays unreadable is logged once.
func (r *usageReporter) readMachine(unreadable bool) bool {
	if r.machine == nil || r.setNode == nil {
		return false
	}
	n, err := r.machine()
	switch {
	case err != nil && !unreadable:
		r.log.Warn("the fleet aggregator keeps this node's last capacity and system info: the machine cannot be read", "error", err)
	case err != nil:
		r.log.Debug("the machine still cannot be read", "error", err)
	default:
		if unreadable {
			r.log.Info("the machine can be read again; the fleet aggregator gets its capacity and system info")
		}
		r.setNode(&n)
	}
	return err != nil
}
