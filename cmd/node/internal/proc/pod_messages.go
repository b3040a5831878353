package proc

import "github.com/probeactor/probeactor/messages"

// podMessage is what a pod's goroutine receives on its inbox: one of the types below (a sealed
// sum; podRunner.handle has a default for anything else). Only that goroutine acts on them, so the
// pod's state, processes and timers need no lock.
type podMessage interface{ podMessage() }

// killContainer (Runtime.KillContainer → pod): a liveness or startup probe failed; begin killing
// the instance req.ContainerID. reply receives the instance's done channel, or nil when that
// instance is not running (any more).
type killContainer struct {
	req   messages.KillContainer
	reply chan<- (<-chan struct{}) // buffered (1): the pod never blocks on it
}

// terminatePod (Runtime.Terminate → pod): stop restarting and kill every container, apps first.
type terminatePod struct{}

// containerExited (an instance's watcher goroutine → pod): instance id of container name ended.
type containerExited struct {
	name, id string
	exit     shimMessage
}

// wakeUp (the pod's timer → pod): a back-off expired; decide again.
type wakeUp struct{}

// startupSucceeded (Runtime.StartupSucceeded → pod): the startup probe of instance id of container
// name passed; a sidecar waiting for it has started.
type startupSucceeded struct{ name, id string }

// probeResult (Runtime.ProbeResult → pod): the latest readiness or startup result of instance id
// of container name, kept in the pod's record.
type probeResult struct {
	name, id string
	probe    messages.ProbeType
	success  bool
}

// detachPod (Runtime.Detach → pod): close every shim connection without a KILL, end every timer
// and the pod's goroutine; the containers run on, the record stays for the next node.
type detachPod struct{}

// hookDone (a hook's goroutine → pod): hook (hookPostStart or hookPreStop) of instance id of
// container name ended; err is its failure, msg kubelet's text for it, fellBack an https request
// answered over http.
type hookDone struct {
	name, id, hook string
	err            error
	msg            string
	fellBack       bool
}

// preStopTimedOut (the preStop wait's timer → pod): the grace period passed before the preStop
// hook of instance id of container name ended; SIGTERM goes now.
type preStopTimedOut struct{ name, id string }

func (hookDone) podMessage()         {}
func (preStopTimedOut) podMessage()  {}
func (probeResult) podMessage()      {}
func (detachPod) podMessage()        {}
func (killContainer) podMessage()    {}
func (terminatePod) podMessage()     {}
func (containerExited) podMessage()  {}
func (wakeUp) podMessage()           {}
func (startupSucceeded) podMessage() {}
