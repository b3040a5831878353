// Package usage is node's /metrics/resource: what each running container, and each pod, has used
// of CPU and memory, under kubelet 1.37's metric names, so that `node top pods` (and anything that
// reads kubelet's resource metrics) can show it.
//
// node runs containers as processes, not in cgroups, so a container is a process tree: everything
// below its shim (the main process's parent, the subreaper of whatever the container forks),
// setsid'd and orphaned descendants included; for a shim of an older node, which does not say its
// pid, the main process and its own descendants. Of that tree (Measure, pure, over one read of
// /proc):
//   - CPU is the user and system time of every live process, plus the time of the children each
//     has waited for (cutime, cstime), plus the shim's waited-for children (the orphans it reaped):
//     a counter that only grows while the container runs, as a cgroup's usage does, except for the
//     time of a process that exits and is reaped outside the tree (which a container cannot do);
//   - memory is the resident set of every live process (kubelet's working set is the cgroup's
//     usage less its inactive file pages; shared pages count once per process here, so two
//     processes sharing a library count it twice).
//
// A pod's usage is its containers' sum. The node-level series are the host's: busy CPU time from
// /proc/stat, and memory in use as MemTotal less MemAvailable (kubelet's is the root cgroup's
// working set). The Collector reads /proc once per scrape; a container whose process has gone
// between the listing and the read is left out of that scrape.
//
// A fleet node sends its aggregator rates instead (metrics-server's view of a kubelet, so that the
// aggregator can serve what kubectl top reads): Collector.Sample is Collect's read as data (the
// host's counter and memory, and each running container's, with its container ID and start, which
// identify its run), taken every --node-status-update-frequency, and Rates (pure) makes a window's
// *fleetv1.Usage of two samples: CPU as the counter's delta over the window in nanocores (rounded
// to the nearest), memory at the window's end, for the node and each container measured at both
// ends in the same run (a new or restarted container waits for its second point; a counter that
// went backwards is left out), grouped by pod and sorted.
package usage
