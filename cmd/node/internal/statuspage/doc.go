// Package statuspage is node's live status page at / on the status address: every pod and
// container (phase, ready, started, restarts, and how long its current instance took to start and
// to become ready, from the probe tree's ContainerStartups), each probe's kind, handler and target, its last
// result and last failure message, a strip of its last Depth attempts coloured by outcome, and the
// recent events. The page is server-rendered with html/template (everything shown is escaped text),
// has inline CSS only (no script, no external asset: it works offline, and its Content-Security-Policy
// forbids both) and reloads itself with a meta refresh.
//
// Where the data comes from: pods and events from node (the same as GET /pods and /events); the
// attempt history from Recorder, which wraps the prober node gives the probe tree. The tree's
// prober sees a container ID and a probe spec, not a pod: Recorder attributes an attempt through
// the container IDs of each pod's latest status (Recorder.PodEvent, a subscriber of the runtime's
// pod events, which reach it before the tree learns the status) and the spec's identity with one of
// the container's probes.
//
// Invariants: the wrapper changes nothing the tree sees (same outcome, error and ctx); an attempt
// whose ctx ended (abandoned by a stopping worker) is not recorded; History is a pure core (no lock,
// no clock: the attempt's time is given) and Recorder its locked shell; nothing here starts a
// goroutine.
//
// Bounds: Depth (32) attempts per probe, each message at most MaxMessage bytes; an attempt is kept
// only for a container ID a live pod's status names, so rings exist only for pods present, and Forget
// (the pod removed) and Retain (housekeeping) drop a pod's rings and IDs together. The page shows at
// most MaxEvents events (newest first), each message at most MaxText bytes.
//
// Deliberate differences from kubelet: kubelet has no such page. The strip shows every call of the
// prober, so kubelet's up to three tries of an attempt that errored appear as separate cells; the
// "last result" is the last call's outcome, not the tree's thresholded result (ready and started show
// that).
package statuspage
