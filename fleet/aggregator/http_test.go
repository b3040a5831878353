package aggregator

import (
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/asynkron/protoactor-go/actor"
	"github.com/hashicorp/go-hclog"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	metricsv1beta1 "k8s.io/metrics/pkg/apis/metrics/v1beta1"

	"github.com/probeactor/probeactor/actors/logging"
	"github.com/probeactor/probeactor/wire/fleetv1"
)

// serve runs the HTTP API over a fleet actor that owns b, its clock stopped at now.
func serve(t *testing.T, b *Book, now time.Time) string {
	t.Helper()
	sys := actor.NewActorSystem(logging.SystemOption(hclog.NewNullLogger()))
	fa := &fleetActor{book: b, now: func() time.Time { return now }, tickEvery: time.Hour, log: hclog.NewNullLogger(), g: &gauges{}}
	pid, err := sys.Root.SpawnNamed(actor.PropsFromProducer(func() actor.Actor { return fa }), ActorName)
	require.NoError(t, err)
	srv := httptest.NewServer(newHandler(sys.Root, pid, prometheus.NewRegistry(), hclog.NewNullLogger()))
	t.Cleanup(func() {
		srv.Close()
		_ = sys.Root.PoisonFuture(pid).Wait()
		sys.Shutdown()
	})
	return srv.URL
}

// metricsFleet is a book of three nodes at t0: n1 (labelled, by its Node object) and n2 with a
// window each, n3 without one; n1 runs default/web (two containers, labelled app=web) and
// kube-system/dns.
func metricsFleet(t *testing.T) *Book {
	b := NewBook(1, 40*time.Second)
	own := &v1.Node{ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{v1.LabelHostname: "host-1", v1.LabelOSStable: "linux"}}}
	obj, err := fleetv1.FromNodeObject(own)
	require.NoError(t, err)
	end := t0.Add(-2 * time.Second)
	n1 := batch("n1", 1, 1, true)
	n1.NodeObject = obj
	n1.Pods = []*fleetv1.PodChanged{readyPodChange(t, "1", "web"), readyPodChange(t, "2", "dns")}
	n1.Pods[0].Meta.Labels = map[string]string{"app": "web"}
	n1.Pods[1].Meta.Namespace = "kube-system"
	n1.Usage = &fleetv1.Usage{TimestampUnixNano: end.UnixNano(), WindowNanos: int64(10 * time.Second), NodeCpuNanocores: 1234567890, NodeMemoryBytes: 3 << 30,
		Pods: []*fleetv1.PodUsage{
			{Namespace: "default", Name: "web", Containers: []*fleetv1.ContainerUsage{{Name: "proxy", CpuNanocores: 2500000, MemoryBytes: 20 << 20}, {Name: "app", CpuNanocores: 312500000, MemoryBytes: 104857601}}},
			{Namespace: "kube-system", Name: "dns", Containers: []*fleetv1.ContainerUsage{{Name: "c", CpuNanocores: 1, MemoryBytes: 5 << 20}}},
		}}
	n2 := batch("n2", 1, 1, true)
	n2.Usage = &fleetv1.Usage{TimestampUnixNano: end.UnixNano(), WindowNanos: int64(10 * time.Second), NodeCpuNanocores: 500000000, NodeMemoryBytes: 1 << 30}
	for _, c := range []*fleetv1.Changes{n1, n2, batch("n3", 1, 1, true)} {
		require.Equal(t, applied, b.Apply(c, t0).GetStatus())
	}
	return b
}

type answer struct {
	code        int
	contentType string
	body        string
}

func httpGet(t *testing.T, u string) answer {
	t.Helper()
	resp, err := http.Get(u)
	require.NoError(t, err)
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	assert.Equal(t, ServerName, resp.Header.Get(ServerHeader), u)
	return answer{resp.StatusCode, resp.Header.Get("Content-Type"), string(body)}
}

// The metrics API's lists, in the API server's JSON: kind and apiVersion metrics.k8s.io/v1beta1,
// items without a kind, quantities as metrics-server writes them.
func TestMetricsAPIServesTheFleetsUsage(t *testing.T) {
	base := serve(t, metricsFleet(t), t0) + MetricsAPI
	got := httpGet(t, base+"/nodes")
	require.Equal(t, http.StatusOK, got.code, got.body)
	assert.Equal(t, "application/json", got.contentType)
	assert.JSONEq(t, `{
  "kind": "NodeMetricsList",
  "apiVersion": "metrics.k8s.io/v1beta1",
  "metadata": {},
  "items": [
    {
      "metadata": {
        "name": "n1",
        "creationTimestamp": "2026-03-01T12:00:00Z",
        "labels": {"kubernetes.io/hostname": "host-1", "kubernetes.io/os": "linux"}
      },
      "timestamp": "2026-03-01T11:59:58Z",
      "window": "10s",
      "usage": {"cpu": "1234567890n", "memory": "3Gi"}
    },
    {
      "metadata": {"name": "n2", "creationTimestamp": "2026-03-01T12:00:00Z"},
      "timestamp": "2026-03-01T11:59:58Z",
      "window": "10s",
      "usage": {"cpu": "500m", "memory": "1Gi"}
    }
  ]
}`, got.body, "n3 sent no window: not listed")
	t.Logf("GET %s/nodes:\n%s", MetricsAPI, got.body)

	got = httpGet(t, base+"/pods")
	require.Equal(t, http.StatusOK, got.code, got.body)
	assert.JSONEq(t, `{
  "kind": "PodMetricsList",
  "apiVersion": "metrics.k8s.io/v1beta1",
  "metadata": {},
  "items": [
    {
      "metadata": {"name": "web", "namespace": "default", "creationTimestamp": "2026-03-01T12:00:00Z", "labels": {"app": "web"}},
      "timestamp": "2026-03-01T11:59:58Z",
      "window": "10s",
      "containers": [
        {"name": "app", "usage": {"cpu": "312500u", "memory": "104857601"}},
        {"name": "proxy", "usage": {"cpu": "2500u", "memory": "20Mi"}}
      ]
    },
    {
      "metadata": {"name": "dns", "namespace": "kube-system", "creationTimestamp": "2026-03-01T12:00:00Z"},
      "timestamp": "2026-03-01T11:59:58Z",
      "window": "10s",
      "containers": [{"name": "c", "usage": {"cpu": "1n", "memory": "5Mi"}}]
    }
  ]
}`, got.body)
	t.Logf("GET %s/pods:\n%s", MetricsAPI, got.body)

	var pods metricsv1beta1.PodMetricsList
	got = httpGet(t, base+"/namespaces/kube-system/pods")
	require.NoError(t, json.Unmarshal([]byte(got.body), &pods))
	require.Len(t, pods.Items, 1)
	assert.Equal(t, "dns", pods.Items[0].Name)
	got = httpGet(t, base+"/pods?labelSelector="+url.QueryEscape("app=web"))
	require.NoError(t, json.Unmarshal([]byte(got.body), &pods))
	require.Len(t, pods.Items, 1, "selected by the pod's labels, as the node reports them")
	assert.Equal(t, "web", pods.Items[0].Name)
	got = httpGet(t, base+"/namespaces/kube-system/pods?labelSelector="+url.QueryEscape("app=web"))
	require.NoError(t, json.Unmarshal([]byte(got.body), &pods))
	assert.Empty(t, pods.Items, "the namespace and the selector both hold")
	got = httpGet(t, base+"/namespaces/empty/pods")
	assert.JSONEq(t, `{"kind":"PodMetricsList","apiVersion":"metrics.k8s.io/v1beta1","metadata":{},"items":[]}`, got.body, "none: an empty list, not null")

	var pod metricsv1beta1.PodMetrics
	got = httpGet(t, base+"/namespaces/default/pods/web")
	require.Equal(t, http.StatusOK, got.code, got.body)
	require.NoError(t, json.Unmarshal([]byte(got.body), &pod))
	assert.Equal(t, metav1.TypeMeta{Kind: "PodMetrics", APIVersion: "metrics.k8s.io/v1beta1"}, pod.TypeMeta)
	assert.Equal(t, "web", pod.Name)
	assert.Len(t, pod.Containers, 2)

	var node metricsv1beta1.NodeMetrics
	got = httpGet(t, base+"/nodes/n2")
	require.Equal(t, http.StatusOK, got.code, got.body)
	require.NoError(t, json.Unmarshal([]byte(got.body), &node))
	assert.Equal(t, metav1.TypeMeta{Kind: "NodeMetrics", APIVersion: "metrics.k8s.io/v1beta1"}, node.TypeMeta)
	assert.Equal(t, "500m", node.Usage.Cpu().String())

	var nodes metricsv1beta1.NodeMetricsList
	got = httpGet(t, base+"/nodes?labelSelector="+url.QueryEscape("kubernetes.io/hostname=host-1"))
	require.NoError(t, json.Unmarshal([]byte(got.body), &nodes))
	require.Len(t, nodes.Items, 1)
	assert.Equal(t, "n1", nodes.Items[0].Name)
	got = httpGet(t, base+"/nodes?labelSelector="+url.QueryEscape("!kubernetes.io/hostname"))
	require.NoError(t, json.Unmarshal([]byte(got.body), &nodes))
	require.Len(t, nodes.Items, 1)
	assert.Equal(t, "n2", nodes.Items[0].Name)
}

// What is not there is the API server's NotFound Status (metrics-server's resources nodemetrics
// and podmetrics); what cannot be answered a BadRequest Status; an unknown path the catch-all 404
// naming the metrics API among the paths to try.
func TestMetricsAPIErrors(t *testing.T) {
	base := serve(t, metricsFleet(t), t0) + MetricsAPI
	for _, tc := range []struct {
		path string
		code int
		body string
	}{
		{"/nodes/n3", 404, `{"kind":"Status","apiVersion":"v1","metadata":{},"status":"Failure","message":"nodemetrics.metrics.k8s.io \"n3\" not found",` +
			`"reason":"NotFound","details":{"name":"n3","group":"metrics.k8s.io","kind":"nodemetrics"},"code":404}`},
		{"/nodes/nope", 404, `{"kind":"Status","apiVersion":"v1","metadata":{},"status":"Failure","message":"nodemetrics.metrics.k8s.io \"nope\" not found",` +
			`"reason":"NotFound","details":{"name":"nope","group":"metrics.k8s.io","kind":"nodemetrics"},"code":404}`},
		{"/nodes/a%2Fb%22%3Cx%3E", 404, `{"kind":"Status","apiVersion":"v1","metadata":{},"status":"Failure","message":"nodemetrics.metrics.k8s.io \"a/b\\\"\u003cx\u003e\" not found",` +
			`"reason":"NotFound","details":{"name":"a/b\"\u003cx\u003e","group":"metrics.k8s.io","kind":"nodemetrics"},"code":404}`},
		{"/namespaces/default/pods/nope", 404, `{"kind":"Status","apiVersion":"v1","metadata":{},"status":"Failure","message":"podmetrics.metrics.k8s.io \"default/nope\" not found",` +
			`"reason":"NotFound","details":{"name":"default/nope","group":"metrics.k8s.io","kind":"podmetrics"},"code":404}`},
		{"/namespaces/kube-system/pods/web", 404, `{"kind":"Status","apiVersion":"v1","metadata":{},"status":"Failure","message":"podmetrics.metrics.k8s.io \"kube-system/web\" not found",` +
			`"reason":"NotFound","details":{"name":"kube-system/web","group":"metrics.k8s.io","kind":"podmetrics"},"code":404}`},
		{"/nodes?labelSelector=" + url.QueryEscape("a=b=c"), 400, `{"kind":"Status","apiVersion":"v1","metadata":{},"status":"Failure",` +
			`"message":"labelSelector: found '=', expected: ',' or 'end of string'","reason":"BadRequest","code":400}`},
		{"/pods?labelSelector=" + url.QueryEscape("a=b=c"), 400, `{"kind":"Status","apiVersion":"v1","metadata":{},"status":"Failure",` +
			`"message":"labelSelector: found '=', expected: ',' or 'end of string'","reason":"BadRequest","code":400}`},
	} {
		got := httpGet(t, base+tc.path)
		assert.Equal(t, tc.code, got.code, tc.path)
		assert.Equal(t, "application/json", got.contentType, tc.path)
		assert.JSONEq(t, tc.body, got.body, tc.path)
	}
	for _, path := range []string{"/nodes/", "/namespaces/default/pods/web/extra", "/pod", "/namespaces//pods/web/x"} {
		got := httpGet(t, base+path)
		assert.Contains(t, []int{http.StatusNotFound, http.StatusMovedPermanently}, got.code, path)
		if got.code == http.StatusNotFound {
			assert.Contains(t, got.body, "(try /pods, /nodes, /events, /results, /metrics, /healthz, "+MetricsAPI+"/nodes[/NAME], "+MetricsAPI+"/pods, "+
				MetricsAPI+"/namespaces/NAMESPACE/pods[/NAME])", path)
		}
	}
	resp, err := http.Post(base+"/nodes", "application/json", strings.NewReader("{}"))
	require.NoError(t, err)
	resp.Body.Close()
	assert.Equal(t, http.StatusMethodNotAllowed, resp.StatusCode, "read-only")
}

// A node out of contact (Unknown) leaves the metrics API, as metrics-server drops a node it cannot
// scrape, while /nodes keeps it.
func TestMetricsAPIDropsANodeOutOfContact(t *testing.T) {
	base := serve(t, metricsFleet(t), t0.Add(41*time.Second))
	got := httpGet(t, base+MetricsAPI+"/nodes")
	assert.JSONEq(t, `{"kind":"NodeMetricsList","apiVersion":"metrics.k8s.io/v1beta1","metadata":{},"items":[]}`, got.body)
	assert.Equal(t, http.StatusNotFound, httpGet(t, base+MetricsAPI+"/nodes/n1").code)
	assert.Contains(t, httpGet(t, base+MetricsAPI+"/pods").body, `"items": []`)
	var nodes v1.NodeList
	require.NoError(t, json.Unmarshal([]byte(httpGet(t, base+"/nodes").body), &nodes))
	require.Len(t, nodes.Items, 3)
	assert.Equal(t, v1.ConditionUnknown, nodes.Items[0].Status.Conditions[0].Status)
}
