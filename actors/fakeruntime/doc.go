// Package fakeruntime is a deterministic, in-memory container runtime for tests and benchmarks.
//
// It implements the actor core's Runtime (KillContainer + probes.CommandRunner) without depending
// on the actor tree: every status change is handed to a push callback
// (func(pod *v1.Pod, status v1.PodStatus)), which is Tree.SetPodStatus for the actor core or
// anything else for a kubelet-style baseline.
//
// Model: RunPod starts every container (init containers with restartPolicy Always included) as
// running, with container IDs "fake://<pod-name>/<container>/<n>" (n counts starts), phase Running
// and pod IP 10.0.0.1 unless set. KillContainer records the request; a request for a container ID that
// is no longer current is ignored; otherwise the container terminates with exit code 137 and, when
// req.Restart, runs again at once with a new ID and RestartCount+1. Exec probes run the script set
// with SetExec (default: exit 0). Time comes from the injected clock.
//
// All methods are safe for concurrent use; push is called without any lock held, in the order the
// changes were made.
package fakeruntime
