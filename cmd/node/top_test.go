package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"
	metricsv1beta1 "k8s.io/metrics/pkg/apis/metrics/v1beta1"

	"github.com/probeactor/probeactor/cmd/node/internal/nodeobject"
	"github.com/probeactor/probeactor/fleet/aggregator"
	"github.com/probeactor/probeactor/internal/procfs"
	"github.com/probeactor/probeactor/wire/fleetv1"
)

// resourceFixture is /metrics/resource as node serves it; cpu is added to every counter.
func resourceFixture(cpu float64) string {
	f := func(v float64) string { return strings.TrimRight(strings.TrimRight(strconvF(v), "0"), ".") }
	return `# TYPE container_cpu_usage_seconds_total counter
container_cpu_usage_seconds_total{container="app",namespace="default",pod="web"} ` + f(10+cpu) + `
container_cpu_usage_seconds_total{container="proxy",namespace="default",pod="web"} ` + f(1+cpu/4) + `
container_cpu_usage_seconds_total{container="c",namespace="jobs",pod="batch"} ` + f(5+2*cpu) + `
# TYPE container_memory_working_set_bytes gauge
container_memory_working_set_bytes{container="app",namespace="default",pod="web"} 1.048576e+08
container_memory_working_set_bytes{container="proxy",namespace="default",pod="web"} 2.097152e+07
container_memory_working_set_bytes{container="c",namespace="jobs",pod="batch"} 5.24288e+06
# TYPE pod_cpu_usage_seconds_total counter
pod_cpu_usage_seconds_total{namespace="default",pod="web"} ` + f(11+cpu*5/4) + `
pod_cpu_usage_seconds_total{namespace="jobs",pod="batch"} ` + f(5+2*cpu) + `
# TYPE pod_memory_working_set_bytes gauge
pod_memory_working_set_bytes{namespace="default",pod="web"} 1.2582912e+08
pod_memory_working_set_bytes{namespace="jobs",pod="batch"} 5.24288e+06
# TYPE scrape_error gauge
scrape_error 0
`
}

func strconvF(v float64) string { return fmt.Sprintf("%.6f", v) }

// fakeResource serves resourceFixture, its counters growing at 0.25 core (the pod web's at
// 0.3125, the sum of its containers') whenever they are read.
func fakeResource(t *testing.T) *httptest.Server {
	start := time.Now()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/metrics/resource":
			_, _ = io.WriteString(w, resourceFixture(0.25*time.Since(start).Seconds()))
		case "/pods": // the pods' labels, for -l
			_ = json.NewEncoder(w).Encode(v1.PodList{Items: []v1.Pod{
				{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "web", Labels: map[string]string{"app": "web", "tier": "front"}}},
				{ObjectMeta: metav1.ObjectMeta{Namespace: "jobs", Name: "batch", Labels: map[string]string{"app": "batch"}}}}})
		default:
			http.NotFound(w, r)
		}
	}))
	t.Cleanup(srv.Close)
	return srv
}

// TestTopPods: kubectl top pod's table, from two reads of /metrics/resource --window apart: CPU is
// the counters' rate (here 0.3125 core for the pod web: "313m", give or take the time between the
// server's answer and the client's clock), memory the second read's.
func TestTopPods(t *testing.T) {
	srv := fakeResource(t)
	run := func(args ...string) (int, string, string) {
		var out, errb bytes.Buffer
		code := dispatch(append([]string{"top"}, append(args, "--server", srv.URL, "--window", "500ms")...), nil, &out, &errb)
		return code, untab(out.String()), errb.String()
	}
	code, out, _ := run("pods")
	require.Equal(t, 0, code)
	assert.Regexp(t, regexp.MustCompile(`^NAME\s+CPU\(cores\)\s+MEMORY\(bytes\)\nweb\s+\d+m\s+120Mi\n$`), out)
	cpu := regexp.MustCompile(`web\s+(\d+)m`).FindStringSubmatch(out)
	require.Len(t, cpu, 2)
	milli, err := strconv.Atoi(cpu[1])
	require.NoError(t, err)
	assert.InDelta(t, 313, milli, 100, "the rate of a counter growing at 0.3125 core: %s", out)

	code, out, _ = run("pods", "-A", "-l", "tier!=front")
	require.Equal(t, 0, code)
	assert.Regexp(t, `^NAMESPACE\s+NAME\s+CPU\(cores\)\s+MEMORY\(bytes\)\njobs\s+batch\s+\d+m\s+5Mi\n$`, out, "-l: the pods whose labels (from /pods) match")
	code, out, _ = run("pods", "-A", "--sum", "--no-headers")
	require.Equal(t, 0, code)
	assert.Regexp(t, `\n\s+________\s+________\n\s+\d+m\s+125Mi\n$`, out, "--sum: the rule and the totals")

	code, out, _ = run("pods", "-A", "--containers", "--sort-by", "memory", "--no-headers")
	require.Equal(t, 0, code)
	lines := strings.Split(strings.TrimSpace(out), "\n")
	require.Len(t, lines, 3)
	assert.Regexp(t, `^default\s+web\s+app\s+\d+m\s+100Mi$`, lines[0])
	assert.Regexp(t, `^default\s+web\s+proxy\s+\d+m\s+20Mi$`, lines[1])
	assert.Regexp(t, `^jobs\s+batch\s+c\s+\d+m\s+5Mi$`, lines[2])

	code, out, _ = run("pods", "-n", "jobs", "--sort-by", "cpu")
	require.Equal(t, 0, code)
	assert.Regexp(t, `^NAME\s+CPU\(cores\)\s+MEMORY\(bytes\)\nbatch\s+\d+m\s+5Mi\n$`, out)

	code, _, errOut := run("pods", "-n", "empty")
	assert.Equal(t, 0, code)
	assert.Equal(t, "No resources found in empty namespace.\n", errOut)

	code, _, errOut = run("pods", "nope")
	assert.Equal(t, 1, code)
	assert.Equal(t, "error: pod \"nope\" has no metrics in namespace \"default\": it is not running on this node\n", errOut)

	for args, want := range map[string]string{
		"services":             "error: node top shows pods or nodes",
		"pods --show-capacity": "error: --show-capacity: a flag of node top node, not of node top pods",
		"pods --sort-by name":  `error: --sort-by "name": use cpu or memory`,
		"pods -A web":          "error: a pod name and -A cannot go together",
		"pods web -l app=web":  "error: only one of NAME or selector can be provided",
		"pods -l a=b=c":        `error: -l "a=b=c": found '='`,
		"node n1 -l app=web":   "error: only one of NAME or --selector can be provided",
		"node --sum":           "error: --sum: a flag of node top pods, not of node top node",
	} {
		code, _, errOut := run(strings.Fields(args)...)
		assert.Equal(t, 2, code, args)
		assert.Contains(t, errOut, want, args)
	}
	var errb bytes.Buffer
	assert.Equal(t, 2, dispatch([]string{"top", "pods", "--window", "0s", "--server", srv.URL}, nil, io.Discard, &errb))
	assert.Contains(t, errb.String(), "error: --window 0s: must be a positive duration")
}

// TestTopRows: the rate between two reads; a counter that went back (the container restarted)
// counts from zero; what only one read has is left out.
func TestTopRows(t *testing.T) {
	a := usageKey{"default", "web", "app"}
	b := usageKey{"default", "web", "new"}
	first := map[usageKey]usageSample{a: {cpu: 10}, {"default", "web", ""}: {cpu: 12}}
	second := map[usageKey]usageSample{a: {cpu: 0.5, memory: 3}, b: {cpu: 1}, {"default", "web", ""}: {cpu: 14, memory: 9}}
	assert.Equal(t, []string{"default/web/app 250m 3"}, rowStrings(topRows(first, second, 2*time.Second, true)))
	assert.Equal(t, []string{"default/web/ 1 9"}, rowStrings(topRows(first, second, 2*time.Second, false)))
}

// rowStrings shows rows as "namespace/pod/container CPU memory-bytes", CPU as the quantity it is.
func rowStrings(rows []topRow) []string {
	var out []string
	for _, r := range rows {
		out = append(out, fmt.Sprintf("%s/%s/%s %s %d", r.key.namespace, r.key.pod, r.key.container, r.cpu.String(), r.memory.Value()))
	}
	return out
}

// TestNodeMeasuresItsContainers: node's /metrics/resource counts a container's CPU and memory,
// its forked children included, and node top shows the pod.
func TestNodeMeasuresItsContainers(t *testing.T) {
	dir := t.TempDir()
	manifest := onePod(t, filepath.Join(dir, "burn.yaml"), dir, "burn", 1,
		// a child that burns about a second of CPU, then sleeps; the main process waits.
		`sh -c 'i=0; while [ $$i -lt 200000 ]; do i=$$((i+1)); done; echo done > burned; exec sleep 300' & wait`, "")
	n := startRestartNode(t, dir, "-f", manifest)
	require.Eventually(t, func() bool { _, err := os.Stat(filepath.Join(dir, "burned")); return err == nil }, 60*time.Second, 50*time.Millisecond)
	first, _, err := readUsage(n.api)
	require.NoError(t, err)
	u := first[usageKey{"default", "burn", "app"}]
	assert.Greater(t, u.cpu, 0.05, "the child's CPU counts: %+v", first)
	assert.Greater(t, u.memory, float64(100*1024), "the processes' resident memory")
	assert.Equal(t, u, first[usageKey{"default", "burn", ""}], "a one-container pod uses what its container does")

	_, raw := getBody(t, n.api+"/metrics/resource")
	assert.Regexp(t, `(?m)^node_cpu_usage_seconds_total [0-9.e+]+$`, raw, "the host's series too")
	assert.Regexp(t, `(?m)^node_memory_working_set_bytes [0-9.e+]+$`, raw)
	var out, errb bytes.Buffer
	require.Equal(t, 0, dispatch([]string{"top", "pods", "--server", n.api, "--window", "200ms"}, nil, &out, &errb), errb.String())
	assert.Regexp(t, `(?m)^burn\s+\d+m\s+\d+Mi$`, untab(out.String()))

	// The node's own Node object: `node get nodes` and `node top node` read the node itself.
	hostname, err := os.Hostname()
	require.NoError(t, err)
	name := regexp.QuoteMeta(strings.ToLower(strings.TrimSpace(hostname))) // no --node-name: the host's, as kubelet's
	out.Reset()
	require.Equal(t, 0, dispatch([]string{"get", "nodes", "--server", n.api}, nil, &out, &errb), errb.String())
	t.Logf("node get nodes:\n%s", out.String())
	assert.Regexp(t, `^NAME\s+STATUS\s+AGE\n`+name+`\s+Ready\s+\d+s\n$`, out.String())
	out.Reset()
	require.Equal(t, 0, dispatch([]string{"get", "nodes", "--server", n.api, "-o",
		"custom-columns=NAME:.metadata.name,PORT:.status.daemonEndpoints.kubeletEndpoint.Port,OS-IMAGE:.status.nodeInfo.osImage," +
			"KERNEL-VERSION:.status.nodeInfo.kernelVersion,CONTAINER-RUNTIME:.status.nodeInfo.containerRuntimeVersion,VERSION:.status.nodeInfo.kubeletVersion"},
		nil, &out, &errb), errb.String())
	t.Logf("node get nodes -o custom-columns=...:\n%s", out.String())
	release, err := os.ReadFile("/proc/sys/kernel/osrelease")
	require.NoError(t, err)
	port := n.api[strings.LastIndex(n.api, ":")+1:]
	assert.Regexp(t, `\n`+name+`\s+`+port+`\s+\S.*\s+`+regexp.QuoteMeta(strings.TrimSpace(string(release)))+`\s+`+regexp.QuoteMeta("probeactor-node://"+version)+`\s+`+regexp.QuoteMeta(nodeobject.KubeletVersion(version))+`\n$`, out.String())
	out.Reset()
	require.Equal(t, 0, dispatch([]string{"top", "node", "--server", n.api, "--window", "200ms"}, nil, &out, &errb), errb.String())
	t.Logf("node top node:\n%s", out.String())
	m := regexp.MustCompile(`^NAME\s+CPU\(cores\)\s+CPU\(%\)\s+MEMORY\(bytes\)\s+MEMORY\(%\)\n` + name + `\s+(\d+)m\s+(\d+)%\s+(\d+)Mi\s+(\d+)%\n$`).FindStringSubmatch(untab(out.String()))
	require.Len(t, m, 5, out.String())
	memory, err := strconv.Atoi(m[3])
	require.NoError(t, err)
	_, used, err := procfs.Host()
	require.NoError(t, err)
	assert.InDelta(t, used/(1<<20), memory, 512, "the host's memory in use, MiB")
	percent, err := strconv.Atoi(m[4])
	require.NoError(t, err)
	_, total, err := procfs.Capacity()
	require.NoError(t, err)
	assert.InDelta(t, used/total*100, percent, 5, "of MemTotal")
	assert.Equal(t, 1, dispatch([]string{"top", "node", "not-" + strings.ToLower(hostname), "--server", n.api}, nil, io.Discard, &errb))
	assert.Contains(t, errb.String(), `Error from server (NotFound): nodemetrics.metrics.k8s.io "not-`)
}

// fakeNodeAPI is a node's /metrics/resource and /nodes: the host's CPU counter growing at cores
// whenever it is read (0: not at all), 1 GiB of memory in use, and a node n1 with 4 CPUs and 8 GiB
// allocatable, 16 GiB capacity.
func fakeNodeAPI(t *testing.T, cores float64) *httptest.Server {
	start := time.Now()
	node := v1.Node{TypeMeta: metav1.TypeMeta{Kind: "Node", APIVersion: "v1"}, ObjectMeta: metav1.ObjectMeta{Name: "n1", Labels: map[string]string{v1.LabelOSStable: "linux"}},
		Status: v1.NodeStatus{
			Capacity:    v1.ResourceList{v1.ResourceCPU: resource.MustParse("4"), v1.ResourceMemory: resource.MustParse("16Gi")},
			Allocatable: v1.ResourceList{v1.ResourceCPU: resource.MustParse("4"), v1.ResourceMemory: resource.MustParse("8Gi")},
		}}
	mux := http.NewServeMux()
	mux.HandleFunc("GET /metrics/resource", func(w http.ResponseWriter, _ *http.Request) {
		_, _ = io.WriteString(w, resourceFixture(0)+"# TYPE node_cpu_usage_seconds_total counter\nnode_cpu_usage_seconds_total "+
			strconvF(1000+cores*time.Since(start).Seconds())+"\n# TYPE node_memory_working_set_bytes gauge\nnode_memory_working_set_bytes 1.073741824e+09\n")
	})
	mux.HandleFunc("GET /nodes", func(w http.ResponseWriter, _ *http.Request) {
		_ = json.NewEncoder(w).Encode(v1.NodeList{TypeMeta: metav1.TypeMeta{Kind: "NodeList", APIVersion: "v1"}, Items: []v1.Node{node}})
	})
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)
	return srv
}

// TestTopNode: kubectl top node's table for the node behind --server: the host's CPU rate over
// --window and its memory working set, each as a share of the node's allocatable (--show-capacity:
// its capacity); a NAME that is not this node is kubectl's NotFound; a server without
// /metrics/resource is an error that says node top needs a node (a fleet aggregator is read as
// such: TestTopAgainstAFleetAggregator).
func TestTopNode(t *testing.T) {
	run := func(srv *httptest.Server, args ...string) (int, string, string) {
		var out, errb bytes.Buffer
		code := dispatch(append([]string{"top"}, append(args, "--server", srv.URL, "--window", "300ms")...), nil, &out, &errb)
		return code, untab(out.String()), errb.String()
	}
	idle := fakeNodeAPI(t, 0)
	for _, kind := range []string{"node", "nodes", "no"} {
		code, out, errOut := run(idle, kind)
		require.Equal(t, 0, code, errOut)
		assert.Equal(t, "NAME   CPU(cores)   CPU(%)   MEMORY(bytes)   MEMORY(%)\nn1     0m           0%       1024Mi          12%\n", out, kind)
	}
	code, out, _ := run(idle, "node", "n1", "--show-capacity", "--no-headers", "--sort-by", "memory")
	require.Equal(t, 0, code)
	assert.Equal(t, "n1    0m    0%    1024Mi   6%\n", out, "1 GiB of 16 GiB")
	code, out, _ = run(idle, "node", "-l", "kubernetes.io/os=linux", "--no-headers")
	require.Equal(t, 0, code)
	assert.Equal(t, "n1    0m    0%    1024Mi   12%\n", out, "-l: the node's labels match")
	code, out, errOut := run(idle, "node", "-l", "kubernetes.io/os=windows")
	assert.Equal(t, 1, code)
	assert.Empty(t, out)
	assert.Equal(t, "error: metrics not available yet\n", errOut, "kubectl's answer when its selector selects no node")

	busy := fakeNodeAPI(t, 0.5)
	code, out, _ = run(busy, "node")
	require.Equal(t, 0, code)
	m := regexp.MustCompile(`(?m)^n1\s+(\d+)m\s+(\d+)%\s+1024Mi\s+12%$`).FindStringSubmatch(out)
	require.Len(t, m, 3, out)
	milli, err := strconv.Atoi(m[1])
	require.NoError(t, err)
	assert.InDelta(t, 500, milli, 150, "half a core: %s", out)
	percent, err := strconv.Atoi(m[2])
	require.NoError(t, err)
	assert.Equal(t, milli*100/4000, percent, "of 4 CPUs")

	code, out, errOut = run(idle, "node", "n2")
	assert.Equal(t, 1, code)
	assert.Empty(t, out)
	assert.Equal(t, "Error from server (NotFound): nodemetrics.metrics.k8s.io \"n2\" not found\n", errOut)
	code, _, errOut = run(idle, "node", "n1", "n9")
	assert.Equal(t, 1, code)
	assert.Equal(t, "Error from server (NotFound): nodemetrics.metrics.k8s.io \"n9\" not found\n", errOut)

	older := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { // an aggregator without the metrics API
		w.Header().Set("Probeactor-Server", "fleet-aggregator")
		http.NotFound(w, r)
	}))
	defer older.Close()
	code, _, errOut = run(older, "node")
	assert.Equal(t, 1, code)
	assert.Equal(t, "error: "+older.URL+" is a fleet aggregator that serves no /apis/metrics.k8s.io/v1beta1 (404 Not Found): node top needs node fleet of this version\n", errOut)
	other := httptest.NewServer(http.NotFoundHandler())
	defer other.Close()
	code, _, errOut = run(other, "node")
	assert.Equal(t, 1, code)
	assert.Equal(t, "error: node top needs a node's API (node run's --listen, default 127.0.0.1:10255): "+other.URL+
		" serves no /metrics/resource (404 Not Found)\n", errOut)
	code, _, errOut = run(older, "pods")
	assert.Equal(t, 1, code)
	assert.Contains(t, errOut, "is a fleet aggregator that serves no /apis/metrics.k8s.io/v1beta1", "top pods says so too")

	for args, want := range map[string]string{
		"node -A":                "error: -A: a flag of node top pods, not of node top node",
		"node -n x --containers": "error: -n, --containers: a flag of node top pods, not of node top node",
		"node --sort-by name":    `error: --sort-by "name": use cpu or memory`,
	} {
		code, _, errOut := run(idle, strings.Fields(args)...)
		assert.Equal(t, 2, code, args)
		assert.Contains(t, errOut, want, args)
	}
}

// TestTopNodeRows: kubectl's top node line from two reads: the rate, in whole nanocores, shown in
// millicores rounded up; memory in whole MiB; percentages of the millivalues, truncated; of
// capacity with --show-capacity; none for a resource the node does not report; 0% of nothing.
func TestTopNodeRows(t *testing.T) {
	node := v1.Node{ObjectMeta: metav1.ObjectMeta{Name: "n1"}, Status: v1.NodeStatus{
		Capacity:    v1.ResourceList{v1.ResourceCPU: resource.MustParse("8"), v1.ResourceMemory: resource.MustParse("16374232Ki")},
		Allocatable: v1.ResourceList{v1.ResourceCPU: resource.MustParse("2"), v1.ResourceMemory: resource.MustParse("4Gi")},
	}}
	reads := func(cpu0, cpu1, memory float64) (map[usageKey]usageSample, map[usageKey]usageSample) {
		return map[usageKey]usageSample{nodeKey: {cpu: cpu0, memory: 1}, {"default", "web", ""}: {cpu: 1}},
			map[usageKey]usageSample{nodeKey: {cpu: cpu1, memory: memory}, {"default", "web", ""}: {cpu: 2}}
	}
	for _, tc := range []struct {
		name            string
		cpu0, cpu1, mem float64
		elapsed         time.Duration
		capacity        bool
		change          func(*v1.Node)
		want            string
	}{
		{"a quarter core of 2, 1.5 GiB of 4", 100, 100.5, 1.5 * (1 << 30), 2 * time.Second, false, nil,
			"n1    250m   12%   1536Mi   37%\n"},
		{"of capacity: 8 CPUs, 16374232Ki", 100, 100.5, 1.5 * (1 << 30), 2 * time.Second, true, nil,
			"n1    250m   3%    1536Mi   9%\n"},
		{"a part of a millicore is a millicore; a part of a MiB none", 10, 10.0000012, 1048575, time.Second, false, nil,
			"n1    1m    0%    0Mi   0%\n"},
		{"1.0000009 millicores round up to 2", 10, 10.0010009, 1 << 20, time.Second, false, nil,
			"n1    2m    0%    1Mi   0%\n"},
		{"a counter that went back counts from zero", 100, 3, 0, 2 * time.Second, false, nil,
			"n1    1500m   75%   0Mi   0%\n"},
		{"no memory reported: no MEMORY(%)", 0, 1, 1 << 30, time.Second, false, func(n *v1.Node) { delete(n.Status.Allocatable, v1.ResourceMemory) },
			"n1    1000m   50%   1024Mi\n"},
		{"0% of nothing", 0, 1, 1 << 30, time.Second, false, func(n *v1.Node) { n.Status.Allocatable[v1.ResourceCPU] = resource.MustParse("0") },
			"n1    1000m   0%    1024Mi   25%\n"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			n := *node.DeepCopy()
			if tc.change != nil {
				tc.change(&n)
			}
			first, second := reads(tc.cpu0, tc.cpu1, tc.mem)
			row, err := topNodeRow(n, first, second, tc.elapsed, tc.capacity)
			require.NoError(t, err)
			var out bytes.Buffer
			printTopNodes(&out, []nodeTopRow{row}, true)
			assert.Equal(t, tc.want, untab(out.String()))
		})
	}
	_, err := topNodeRow(node, map[usageKey]usageSample{}, map[usageKey]usageSample{nodeKey: {}}, time.Second, false)
	assert.EqualError(t, err, "/metrics/resource has no node_cpu_usage_seconds_total or node_memory_working_set_bytes")
	first, second := reads(0, 1, 1)
	assert.Len(t, topRows(first, second, time.Second, false), 1, "the host's series are no pod's")
}

// fleetBook is a fleet aggregator's book at now: n1 (its Node object: 4 CPUs and 8 GiB allocatable,
// 16 GiB capacity) running default/web (app and proxy), n2 (no Node object) running jobs/batch,
// both with a window; n3 in contact without one.
func fleetBook(t *testing.T, now time.Time) *aggregator.Book {
	t.Helper()
	b := aggregator.NewBook(1, 40*time.Second)
	own := &v1.Node{ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"tier": "front"}}, Status: v1.NodeStatus{
		Capacity:    v1.ResourceList{v1.ResourceCPU: resource.MustParse("4"), v1.ResourceMemory: resource.MustParse("16Gi")},
		Allocatable: v1.ResourceList{v1.ResourceCPU: resource.MustParse("4"), v1.ResourceMemory: resource.MustParse("8Gi")},
	}}
	obj, err := fleetv1.FromNodeObject(own)
	require.NoError(t, err)
	pod := func(ns, name string) *fleetv1.PodChanged {
		p, err := fleetv1.FromPod(&v1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, UID: types.UID(ns + "-" + name),
			Labels: map[string]string{"app": name}},
			Spec: v1.PodSpec{Containers: []v1.Container{{Name: "c"}}}, Status: v1.PodStatus{Phase: v1.PodRunning}})
		require.NoError(t, err)
		return p
	}
	window := func(nodeCPU, nodeMemory uint64, pods ...*fleetv1.PodUsage) *fleetv1.Usage {
		return &fleetv1.Usage{TimestampUnixNano: now.Add(-3 * time.Second).UnixNano(), WindowNanos: int64(10 * time.Second),
			NodeCpuNanocores: nodeCPU, NodeMemoryBytes: nodeMemory, Pods: pods}
	}
	n1 := &fleetv1.Changes{Node: "n1", Incarnation: 1, Seq: 1, Snapshot: true, NodeObject: obj, Pods: []*fleetv1.PodChanged{pod("default", "web")},
		Usage: window(1e9, 2<<30, &fleetv1.PodUsage{Namespace: "default", Name: "web", Containers: []*fleetv1.ContainerUsage{
			{Name: "app", CpuNanocores: 312500000, MemoryBytes: 100 << 20}, {Name: "proxy", CpuNanocores: 2500001, MemoryBytes: 20 << 20}}})}
	n2 := &fleetv1.Changes{Node: "n2", Incarnation: 1, Seq: 1, Snapshot: true, Pods: []*fleetv1.PodChanged{pod("jobs", "batch")},
		Usage: window(2500e6, 1<<30, &fleetv1.PodUsage{Namespace: "jobs", Name: "batch", Containers: []*fleetv1.ContainerUsage{
			{Name: "c", CpuNanocores: 1, MemoryBytes: 5 << 20}}})}
	for _, c := range []*fleetv1.Changes{n1, n2, {Node: "n3", Incarnation: 1, Seq: 1, Snapshot: true}} {
		require.Equal(t, fleetv1.AckStatus_ACK_STATUS_APPLIED, b.Apply(c, now).GetStatus())
	}
	return b
}

// fakeAggregator serves what a fleet aggregator serves of b (its metrics API and /nodes, from the
// Book itself), every answer with its Probeactor-Server header, anything else its 404; paths
// counts the requests by path.
func fakeAggregator(t *testing.T, b *aggregator.Book, now time.Time, paths *sync.Map) *httptest.Server {
	mux := http.NewServeMux()
	write := func(w http.ResponseWriter, v any) { _ = json.NewEncoder(w).Encode(v) }
	list := func(kind string) metav1.TypeMeta {
		return metav1.TypeMeta{Kind: kind, APIVersion: "metrics.k8s.io/v1beta1"}
	}
	mux.HandleFunc("GET "+aggregator.MetricsAPI+"/nodes", func(w http.ResponseWriter, r *http.Request) {
		selector, err := labels.Parse(r.URL.Query().Get("labelSelector"))
		require.NoError(t, err)
		items := slices.DeleteFunc(b.NodeMetrics(now), func(m metricsv1beta1.NodeMetrics) bool { return !selector.Matches(labels.Set(m.Labels)) })
		write(w, metricsv1beta1.NodeMetricsList{TypeMeta: list("NodeMetricsList"), Items: items})
	})
	pods := func(w http.ResponseWriter, r *http.Request) {
		items := b.PodMetrics(now)
		selector, err := labels.Parse(r.URL.Query().Get("labelSelector"))
		require.NoError(t, err)
		ns := r.PathValue("namespace")
		items = slices.DeleteFunc(items, func(m metricsv1beta1.PodMetrics) bool {
			return ns != "" && m.Namespace != ns || !selector.Matches(labels.Set(m.Labels))
		})
		write(w, metricsv1beta1.PodMetricsList{TypeMeta: list("PodMetricsList"), Items: items})
	}
	mux.HandleFunc("GET "+aggregator.MetricsAPI+"/pods", pods)
	mux.HandleFunc("GET "+aggregator.MetricsAPI+"/namespaces/{namespace}/pods", pods)
	mux.HandleFunc("GET /nodes", func(w http.ResponseWriter, _ *http.Request) {
		write(w, v1.NodeList{TypeMeta: metav1.TypeMeta{Kind: "NodeList", APIVersion: "v1"}, Items: b.Nodes()})
	})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if paths != nil {
			n, _ := paths.LoadOrStore(r.URL.Path, new(atomic.Int32))
			n.(*atomic.Int32).Add(1)
		}
		w.Header().Set(aggregator.ServerHeader, aggregator.ServerName)
		mux.ServeHTTP(w, r)
	}))
	t.Cleanup(srv.Close)
	return srv
}

// TestTopAgainstAFleetAggregator: node top reads a fleet aggregator's metrics API once, at once
// (--window does not apply), and prints kubectl's tables: pods' CPU in millicores rounded up (of
// the sum of their containers'), top node every node of the fleet against its allocatable (none
// for a node without a Node object), a node without metrics <unknown>.
func TestTopAgainstAFleetAggregator(t *testing.T) {
	now := time.Now()
	var paths sync.Map
	srv := fakeAggregator(t, fleetBook(t, now), now, &paths)
	run := func(args ...string) (int, string, string) {
		var out, errb bytes.Buffer
		code := dispatch(append([]string{"top"}, append(args, "--server", srv.URL, "--window", "1m")...), nil, &out, &errb)
		return code, untab(out.String()), errb.String()
	}
	start := time.Now()
	code, out, errOut := run("pods")
	require.Equal(t, 0, code, errOut)
	assert.Less(t, time.Since(start), 30*time.Second, "no --window wait")
	assert.Equal(t, "NAME   CPU(cores)   MEMORY(bytes)\nweb    316m         120Mi\n", out, "312.5m + 2.500001m = 315.000001m: 316m, as kubectl rounds")
	requests := map[string]int32{}
	paths.Range(func(k, v any) bool { requests[k.(string)] = v.(*atomic.Int32).Load(); return true })
	assert.Equal(t, map[string]int32{"/metrics/resource": 1, aggregator.MetricsAPI + "/namespaces/default/pods": 1}, requests)

	code, out, _ = run("pods", "-A", "--containers", "--sort-by", "cpu", "--no-headers")
	require.Equal(t, 0, code)
	assert.Equal(t, "default   web     app     313m   100Mi\ndefault   web     proxy   3m     20Mi\njobs      batch   c       1m     5Mi\n", out)
	code, out, _ = run("pods", "-n", "jobs", "batch")
	require.Equal(t, 0, code)
	assert.Equal(t, "NAME    CPU(cores)   MEMORY(bytes)\nbatch   1m           5Mi\n", out)
	code, out, errOut = run("pods", "-n", "jobs", "web")
	assert.Equal(t, 1, code)
	assert.Empty(t, out)
	assert.Equal(t, "Error from server (NotFound): podmetrics.metrics.k8s.io \"jobs/web\" not found\n", errOut)
	code, _, errOut = run("pods", "-n", "empty")
	assert.Equal(t, 0, code)
	assert.Equal(t, "No resources found in empty namespace.\n", errOut)
	code, out, errOut = run("pods", "-A", "-l", "app=batch", "--sum")
	require.Equal(t, 0, code, errOut)
	assert.Equal(t, "NAMESPACE   NAME    CPU(cores)   MEMORY(bytes)\n"+
		"jobs        batch   1m           5Mi\n"+
		"                    ________     ________\n"+
		"                    1m           5Mi\n", out, "selected by the aggregator, by the pods' labels")

	code, out, errOut = run("node")
	require.Equal(t, 0, code, errOut)
	assert.Equal(t, "NAME   CPU(cores)   CPU(%)      MEMORY(bytes)   MEMORY(%)\n"+
		"n1     1000m        25%         2048Mi          25%\n"+
		"n2     2500m        1024Mi\n"+
		"n3     <unknown>    <unknown>   <unknown>       <unknown>\n", out, "kubectl's columns: <unknown> lines up under the header")
	t.Logf("node top node against an aggregator:\n%s", out)
	code, out, _ = run("nodes", "--sort-by", "cpu", "--show-capacity", "--no-headers")
	require.Equal(t, 0, code)
	assert.Equal(t, "n2    2500m       1024Mi\nn1    1000m       25%         2048Mi      12%\nn3    <unknown>   <unknown>   <unknown>   <unknown>\n", out)
	code, out, errOut = run("node", "-l", "tier=front")
	require.Equal(t, 0, code, errOut)
	assert.Equal(t, "NAME   CPU(cores)   CPU(%)   MEMORY(bytes)   MEMORY(%)\nn1     1000m        25%      2048Mi          25%\n", out,
		"-l: the aggregator selects the metrics, and a node without metrics is listed only if selected")
	code, out, _ = run("no", "n1")
	require.Equal(t, 0, code)
	assert.Equal(t, "NAME   CPU(cores)   CPU(%)   MEMORY(bytes)   MEMORY(%)\nn1     1000m        25%      2048Mi          25%\n", out, "a NAME: that node only")
	code, out, errOut = run("node", "n1", "n3")
	assert.Equal(t, 1, code)
	assert.Empty(t, out)
	assert.Equal(t, "Error from server (NotFound): nodemetrics.metrics.k8s.io \"n3\" not found\n", errOut, "a node without metrics")
	assert.Less(t, time.Since(start), 30*time.Second, "never a --window wait")
}

// Against an aggregator without metrics yet, an older one without the metrics API, or one whose
// /nodes fails, node top says so.
func TestTopAgainstAFleetAggregatorErrors(t *testing.T) {
	run := func(srv *httptest.Server, args ...string) (int, string, string) {
		var out, errb bytes.Buffer
		code := dispatch(append([]string{"top"}, append(args, "--server", srv.URL)...), nil, &out, &errb)
		return code, untab(out.String()), errb.String()
	}
	now := time.Now()
	empty := aggregator.NewBook(1, time.Minute)
	empty.Hello(&fleetv1.Hello{Node: "n1", Incarnation: 1}, now)
	fresh := fakeAggregator(t, empty, now, nil)
	code, out, errOut := run(fresh, "node")
	assert.Equal(t, 1, code)
	assert.Empty(t, out)
	assert.Equal(t, "error: metrics not available yet\n", errOut, "kubectl's words")
	code, _, errOut = run(fresh, "pods", "-A")
	assert.Equal(t, 0, code)
	assert.Equal(t, "No resources found\n", errOut)

	older := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set(aggregator.ServerHeader, aggregator.ServerName)
		http.NotFound(w, r)
	}))
	defer older.Close()
	for _, kind := range []string{"node", "pods"} {
		code, _, errOut = run(older, kind)
		assert.Equal(t, 1, code, kind)
		assert.Equal(t, "error: "+older.URL+" is a fleet aggregator that serves no /apis/metrics.k8s.io/v1beta1 (404 Not Found): node top needs node fleet of this version\n", errOut, kind)
	}

	b := fleetBook(t, now)
	good := fakeAggregator(t, b, now, nil)
	broken := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/nodes" {
			w.Header().Set(aggregator.ServerHeader, aggregator.ServerName)
			http.Error(w, "the fleet actor did not answer", http.StatusServiceUnavailable)
			return
		}
		resp, err := http.Get(good.URL + r.URL.RequestURI())
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadGateway)
			return
		}
		defer resp.Body.Close()
		maps.Copy(w.Header(), resp.Header)
		w.WriteHeader(resp.StatusCode)
		_, _ = io.Copy(w, resp.Body)
	}))
	defer broken.Close()
	code, out, errOut = run(broken, "node")
	assert.Equal(t, 1, code)
	assert.Empty(t, out)
	assert.Equal(t, "error: read "+broken.URL+"/nodes: 503 Service Unavailable: the fleet actor did not answer\n", errOut)
}

// TestTopRowsFromMetrics: kubectl top pod's rows from the metrics API: a pod's usage is the sum of
// its containers' quantities, rounded up to millicores once (not each container's); memory in
// bytes; with containers, each container's.
func TestTopRowsFromMetrics(t *testing.T) {
	usage := func(cpu, memory string) v1.ResourceList {
		return v1.ResourceList{v1.ResourceCPU: resource.MustParse(cpu), v1.ResourceMemory: resource.MustParse(memory)}
	}
	items := []metricsv1beta1.PodMetrics{
		{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "web"}, Containers: []metricsv1beta1.ContainerMetrics{
			{Name: "app", Usage: usage("1500001n", "100Mi")}, {Name: "proxy", Usage: usage("1500000n", "1")}}},
		{ObjectMeta: metav1.ObjectMeta{Namespace: "jobs", Name: "idle"}, Containers: []metricsv1beta1.ContainerMetrics{{Name: "c", Usage: usage("0", "0")}}},
	}
	assert.Equal(t, []string{"default/web/ 3000001n 104857601", "jobs/idle/ 0 0"}, rowStrings(metricsRows(items, false)),
		"a pod is the exact sum of its containers (kubectl's getPodMetrics)")
	assert.Equal(t, []string{"default/web/app 1500001n 104857600", "default/web/proxy 1500u 1", "jobs/idle/c 0 0"},
		rowStrings(metricsRows(items, true)))
	var out bytes.Buffer
	printTop(&out, metricsRows(items, false), true, false, true, false)
	assert.Equal(t, "default   web    4m    100Mi\njobs      idle   0m    0Mi\n", untab(out.String()), "kubectl's millicores: rounded up")
}

// TestTopFleetNodeRows: top node's lines from the metrics API and the nodes: against allocatable (or
// capacity), no percentage without a Node object, every node without metrics <unknown> after the
// others (by name) unless NAMEs are given; sorted as kubectl's NodeMetricsSorter.
func TestTopFleetNodeRows(t *testing.T) {
	metric := func(name, cpu, memory string) metricsv1beta1.NodeMetrics {
		return metricsv1beta1.NodeMetrics{ObjectMeta: metav1.ObjectMeta{Name: name},
			Usage: v1.ResourceList{v1.ResourceCPU: resource.MustParse(cpu), v1.ResourceMemory: resource.MustParse(memory)}}
	}
	node := func(name string) v1.Node {
		return v1.Node{ObjectMeta: metav1.ObjectMeta{Name: name}, Status: v1.NodeStatus{
			Capacity:    v1.ResourceList{v1.ResourceCPU: resource.MustParse("8"), v1.ResourceMemory: resource.MustParse("8Gi")},
			Allocatable: v1.ResourceList{v1.ResourceCPU: resource.MustParse("2"), v1.ResourceMemory: resource.MustParse("4Gi")}}}
	}
	metrics := []metricsv1beta1.NodeMetrics{metric("b", "500m", "3Gi"), metric("c", "1", "1Gi"), metric("a", "250m", "2Gi")}
	nodes := []v1.Node{node("z"), node("a"), node("b"), node("y"), {ObjectMeta: metav1.ObjectMeta{Name: "c"}}}
	print := func(rows, unknown []nodeTopRow, by string) string {
		sortTopNodes(rows, by)
		var out bytes.Buffer
		printTopNodes(&out, append(rows, unknown...), true)
		return untab(out.String())
	}
	rows, unknown := fleetNodeRows(metrics, nodes, nil, false)
	assert.Equal(t, "a     250m        12%         2048Mi   50%\n"+
		"b     500m        25%         3072Mi   75%\n"+
		"c     1000m       1024Mi\n"+
		"y     <unknown>   <unknown>   <unknown>   <unknown>\n"+
		"z     <unknown>   <unknown>   <unknown>   <unknown>\n", print(rows, unknown, ""))
	assert.Equal(t, "c     1000m       1024Mi\n"+
		"b     500m        25%         3072Mi      75%\n"+
		"a     250m        12%         2048Mi      50%\n"+
		"y     <unknown>   <unknown>   <unknown>   <unknown>\n"+
		"z     <unknown>   <unknown>   <unknown>   <unknown>\n", print(rows, unknown, "cpu"))
	assert.Equal(t, "b     500m        25%         3072Mi   75%\n"+
		"a     250m        12%         2048Mi   50%\n"+
		"c     1000m       1024Mi\n"+
		"y     <unknown>   <unknown>   <unknown>   <unknown>\n"+
		"z     <unknown>   <unknown>   <unknown>   <unknown>\n", print(rows, unknown, "memory"))
	rows, unknown = fleetNodeRows(metrics, nodes, []string{"b"}, true)
	assert.Empty(t, unknown, "a NAME: no other node")
	assert.Equal(t, "b     500m   6%    3072Mi   37%\n", print(rows, unknown, ""), "of capacity")
}

// untab drops the spaces that end each line of a table: kubectl's tabwriter pads the last cell
// too (every cell ends in a tab), which internal/kubectl's tests and tests/upstream hold to
// kubectl's bytes; these tests read the columns.
func untab(s string) string {
	lines := strings.Split(s, "\n")
	for i, l := range lines {
		lines[i] = strings.TrimRight(l, " ")
	}
	return strings.Join(lines, "\n")
}
