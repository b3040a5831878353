package usage

import (
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/probeactor/probeactor/cmd/node/internal/proc"
	"github.com/probeactor/probeactor/internal/procfs"
)

// Usage is what one container's process tree has used.
type Usage struct {
	CPU    time.Duration // so far
	Memory float64       // resident now, bytes
}

// Measure is the usage of the container whose main process is pid and whose shim is shim, from
// one read of every process: the tree below the shim (the main process, and whatever it forked,
// setsid'd or orphaned ones included), when the shim is known and is still the main process's
// parent; else the main process and its own descendants. false when pid is not in all (it has
// ended).
func Measure(all []procfs.ProcStat, pid, shim int) (Usage, bool) {
	return measure(procfs.NewTree(all), pid, shim)
}

// measure is Measure on a read indexed once for every container of a scrape.
func measure(t procfs.Tree, pid, shim int) (Usage, bool) {
	main, ok := t.Get(pid)
	if !ok {
		return Usage{}, false
	}
	root, u := main.PID, Usage{CPU: main.CPU + main.ChildCPU, Memory: main.RSS}
	if s, ok := t.Get(shim); shim != 0 && ok && main.PPID == shim {
		root, u = shim, Usage{CPU: s.ChildCPU} // the orphans it reaped; not the shim's own work
	}
	for _, p := range t.Descendants(root) {
		u.CPU += p.CPU + p.ChildCPU
		u.Memory += p.RSS
	}
	return u, true
}

// Collector serves kubelet's resource metrics for the containers list returns, reading the
// processes with read (procfs.Processes in node) and the host with host (procfs.Host); Sample
// takes the same read for a fleet node's usage (Rates).
type Collector struct {
	list func() []proc.RunningContainer
	read func() ([]procfs.ProcStat, error)
	host func() (time.Duration, float64, error)
	now  func() time.Time // a Sample's At
}

// NewCollector returns node's Collector.
func NewCollector(list func() []proc.RunningContainer, read func() ([]procfs.ProcStat, error), host func() (time.Duration, float64, error)) *Collector {
	return &Collector{list: list, read: read, host: host, now: time.Now}
}

// Sample is one read of the host and of every running container, at At: the counters and the
// memory that Rates turns into a window's usage, and that Collect serves as they are.
type Sample struct {
	At         time.Time
	NodeCPU    time.Duration // the host's busy CPU time so far
	NodeMemory float64       // the host's memory in use (MemTotal less MemAvailable), bytes
	// Containers are the running containers whose process was there to read, in list's order.
	Containers []ContainerSample
}

// ContainerSample is one running container's usage in a Sample. ID and StartedAt identify its
// run: a restarted container is another run, whose CPU counter starts again from zero.
type ContainerSample struct {
	Namespace, Pod, Container string
	ID                        string // its container ID
	StartedAt                 time.Time
	Usage
}

// Sample reads the host, then every running container's process tree (one read of /proc for all
// of them), at once. Its error is the host's or /proc's that could not be read: no sample then.
func (c *Collector) Sample() (Sample, error) {
	s, _, err := c.sample()
	return s, err
}

// sample is Sample that also says whether the host was read when err is not nil (Collect serves
// the host's usage even when /proc cannot be listed).
func (c *Collector) sample() (s Sample, host bool, err error) {
	s.At = c.now()
	if s.NodeCPU, s.NodeMemory, err = c.host(); err != nil {
		return Sample{}, false, err
	}
	all, err := c.read()
	if err != nil {
		return s, true, err
	}
	tree := procfs.NewTree(all)
	for _, r := range c.list() {
		u, ok := measure(tree, r.PID, r.ShimPID)
		if !ok {
			continue
		}
		s.Containers = append(s.Containers, ContainerSample{Namespace: r.Pod.Namespace, Pod: r.Pod.Name, Container: r.Container,
			ID: r.ID, StartedAt: r.StartedAt, Usage: u})
	}
	return s, true, nil
}

// kubelet 1.37's resource metrics (pkg/kubelet/metrics/collectors/resource_metrics.go).
var (
	containerCPU = prometheus.NewDesc("container_cpu_usage_seconds_total",
		"Cumulative cpu time consumed by the container in core-seconds", []string{"container", "pod", "namespace"}, nil)
	containerMemory = prometheus.NewDesc("container_memory_working_set_bytes",
		"Current working set of the container in bytes", []string{"container", "pod", "namespace"}, nil)
	containerStart = prometheus.NewDesc("container_start_time_seconds",
		"Start time of the container since unix epoch in seconds", []string{"container", "pod", "namespace"}, nil)
	podCPU = prometheus.NewDesc("pod_cpu_usage_seconds_total",
		"Cumulative cpu time consumed by the pod in core-seconds", []string{"pod", "namespace"}, nil)
	podMemory = prometheus.NewDesc("pod_memory_working_set_bytes",
		"Current working set of the pod in bytes", []string{"pod", "namespace"}, nil)
	nodeCPU = prometheus.NewDesc("node_cpu_usage_seconds_total",
		"Cumulative cpu time consumed by the node in core-seconds", nil, nil)
	nodeMemory = prometheus.NewDesc("node_memory_working_set_bytes",
		"Current working set of the node in bytes", nil, nil)
	scrapeError = prometheus.NewDesc("scrape_error",
		"1 if there was an error while getting container metrics, 0 otherwise", nil, nil)
)

// Describe implements prometheus.Collector.
func (c *Collector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{nodeCPU, nodeMemory, containerCPU, containerMemory, containerStart, podCPU, podMemory, scrapeError} {
		ch <- d
	}
}

// Collect implements prometheus.Collector: the host's usage, then one read of /proc for every
// running container (a Sample).
func (c *Collector) Collect(ch chan<- prometheus.Metric) {
	s, host, err := c.sample()
	if host {
		ch <- prometheus.MustNewConstMetric(nodeCPU, prometheus.CounterValue, s.NodeCPU.Seconds())
		ch <- prometheus.MustNewConstMetric(nodeMemory, prometheus.GaugeValue, s.NodeMemory)
	}
	if err != nil {
		ch <- prometheus.MustNewConstMetric(scrapeError, prometheus.GaugeValue, 1)
		return
	}
	ch <- prometheus.MustNewConstMetric(scrapeError, prometheus.GaugeValue, 0)
	type podKey struct{ ns, name string }
	pods := map[podKey]*Usage{}
	for _, r := range s.Containers {
		labels := []string{r.Container, r.Pod, r.Namespace}
		ch <- prometheus.MustNewConstMetric(containerCPU, prometheus.CounterValue, r.CPU.Seconds(), labels...)
		ch <- prometheus.MustNewConstMetric(containerMemory, prometheus.GaugeValue, r.Memory, labels...)
		ch <- prometheus.MustNewConstMetric(containerStart, prometheus.GaugeValue, float64(r.StartedAt.UnixNano())/1e9, labels...)
		k := podKey{r.Namespace, r.Pod}
		if pods[k] == nil {
			pods[k] = &Usage{}
		}
		pods[k].CPU += r.CPU
		pods[k].Memory += r.Memory
	}
	for k, u := range pods {
		ch <- prometheus.MustNewConstMetric(podCPU, prometheus.CounterValue, u.CPU.Seconds(), k.name, k.ns)
		ch <- prometheus.MustNewConstMetric(podMemory, prometheus.GaugeValue, u.Memory, k.name, k.ns)
	}
}
