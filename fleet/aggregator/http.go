package aggregator

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"slices"
	"time"

	"github.com/asynkron/protoactor-go/actor"
	"github.com/hashicorp/go-hclog"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime/schema"
	metricsv1beta1 "k8s.io/metrics/pkg/apis/metrics/v1beta1"
)

// queryTimeout bounds how long an HTTP request waits for the fleet actor.
const queryTimeout = 10 * time.Second

// handler serves the aggregator's read-only API in the API server's shapes.
type handler struct {
	root  *actor.RootContext
	fleet *actor.PID
	log   hclog.Logger
}

func newHandler(root *actor.RootContext, fleet *actor.PID, metrics prometheus.Gatherer, log hclog.Logger) http.Handler {
	h := &handler{root: root, fleet: fleet, log: log}
	mux := http.NewServeMux()
	mux.HandleFunc("GET /healthz", func(w http.ResponseWriter, _ *http.Request) { _, _ = io.WriteString(w, "ok") })
	mux.HandleFunc("GET /pods", h.pods)
	mux.HandleFunc("GET /nodes", h.nodes)
	mux.HandleFunc("GET /events", h.events)
	mux.HandleFunc("GET /results", h.results)
	mux.Handle("GET /metrics", promhttp.HandlerFor(metrics, promhttp.HandlerOpts{}))
	mux.HandleFunc("GET "+MetricsAPI+"/nodes", h.nodeMetricsList)
	mux.HandleFunc("GET "+MetricsAPI+"/nodes/{name}", h.nodeMetrics)
	mux.HandleFunc("GET "+MetricsAPI+"/pods", h.podMetricsList)
	mux.HandleFunc("GET "+MetricsAPI+"/namespaces/{namespace}/pods", h.podMetricsList)
	mux.HandleFunc("GET "+MetricsAPI+"/namespaces/{namespace}/pods/{name}", h.podMetrics)
	mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodGet && r.Method != http.MethodHead {
			w.Header().Set("Allow", "GET, HEAD")
			http.Error(w, fmt.Sprintf("method %s not allowed: the fleet API is read-only", r.Method), http.StatusMethodNotAllowed)
			return
		}
		http.Error(w, fmt.Sprintf("404 page not found: %s (try /pods, /nodes, /events, /results, /metrics, /healthz, "+
			MetricsAPI+"/nodes[/NAME], "+MetricsAPI+"/pods, "+MetricsAPI+"/namespaces/NAMESPACE/pods[/NAME])", r.URL.Path), http.StatusNotFound)
	})
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set(ServerHeader, ServerName)
		mux.ServeHTTP(w, r)
	})
}

// ServerHeader names the server kind on every response, so `node get pods -A` knows it talks to
// an aggregator (NODE column).
const (
	ServerHeader = "Probeactor-Server"
	ServerName   = "fleet-aggregator"
)

// ask sends a query to the fleet actor and waits for its answer.
func (h *handler) ask(w http.ResponseWriter, q any) (any, bool) {
	res, err := h.root.RequestFuture(h.fleet, q, queryTimeout).Result()
	if err != nil {
		http.Error(w, fmt.Sprintf("the fleet actor did not answer: %v", err), http.StatusServiceUnavailable)
		return nil, false
	}
	return res, true
}

func (h *handler) writeJSON(w http.ResponseWriter, v any) { h.writeJSONCode(w, http.StatusOK, v) }

func (h *handler) writeJSONCode(w http.ResponseWriter, code int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(code)
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	if err := enc.Encode(v); err != nil {
		h.log.Debug("write response", "error", err)
	}
}

func (h *handler) pods(w http.ResponseWriter, _ *http.Request) {
	res, ok := h.ask(w, queryPods{})
	if !ok {
		return
	}
	a := res.(*podsAnswer)
	if a.err != nil {
		http.Error(w, a.err.Error(), http.StatusInternalServerError)
		return
	}
	h.writeJSON(w, v1.PodList{TypeMeta: metav1.TypeMeta{Kind: "PodList", APIVersion: "v1"}, Items: nonNil(a.pods)})
}

func (h *handler) nodes(w http.ResponseWriter, _ *http.Request) {
	if res, ok := h.ask(w, queryNodes{}); ok {
		h.writeJSON(w, v1.NodeList{TypeMeta: metav1.TypeMeta{Kind: "NodeList", APIVersion: "v1"}, Items: nonNil(res.(*nodesAnswer).nodes)})
	}
}

func (h *handler) events(w http.ResponseWriter, _ *http.Request) {
	if res, ok := h.ask(w, queryEvents{}); ok {
		h.writeJSON(w, v1.EventList{TypeMeta: metav1.TypeMeta{Kind: "EventList", APIVersion: "v1"}, Items: nonNil(res.(*eventsAnswer).events)})
	}
}

// ResultList is /results: every node's latest probe results (a probeactor extension, no
// Kubernetes counterpart).
type ResultList struct {
	Items []Result `json:"items"`
}

func (h *handler) results(w http.ResponseWriter, _ *http.Request) {
	if res, ok := h.ask(w, queryResults{}); ok {
		h.writeJSON(w, ResultList{Items: nonNil(res.(*resultsAnswer).results)})
	}
}

func nonNil[T any](s []T) []T {
	if s == nil {
		return []T{}
	}
	return s
}

// MetricsAPI is where the aggregator serves metrics.k8s.io/v1beta1 (the resource metrics API,
// metrics-server's), as the API server's aggregation layer would.
const MetricsAPI = "/apis/metrics.k8s.io/v1beta1"

// metricsGroup is the group of metrics-server's NotFound errors ("nodemetrics.metrics.k8s.io").
const metricsGroup = metricsv1beta1.GroupName

func metricsTypeMeta(kind string) metav1.TypeMeta {
	return metav1.TypeMeta{Kind: kind, APIVersion: metricsv1beta1.SchemeGroupVersion.String()}
}

func (h *handler) metrics(w http.ResponseWriter) (*metricsAnswer, bool) {
	res, ok := h.ask(w, queryMetrics{})
	if !ok {
		return nil, false
	}
	return res.(*metricsAnswer), true
}

// selectMetrics is a list request's labelSelector (a BadRequest if it does not parse) and the
// metrics; false when an answer was written instead.
func (h *handler) selectMetrics(w http.ResponseWriter, r *http.Request) (labels.Selector, *metricsAnswer, bool) {
	selector, err := labels.Parse(r.URL.Query().Get("labelSelector"))
	if err != nil {
		h.writeStatus(w, apierrors.NewBadRequest(fmt.Sprintf("labelSelector: %v", err)))
		return nil, nil, false
	}
	a, ok := h.metrics(w)
	return selector, a, ok
}

// nodeMetricsList is GET /apis/metrics.k8s.io/v1beta1/nodes[?labelSelector=]: every node with
// metrics (Book.NodeMetrics), those whose labels match the selector.
func (h *handler) nodeMetricsList(w http.ResponseWriter, r *http.Request) {
	selector, a, ok := h.selectMetrics(w, r)
	if !ok {
		return
	}
	items := slices.DeleteFunc(a.nodes, func(m metricsv1beta1.NodeMetrics) bool { return !selector.Matches(labels.Set(m.Labels)) })
	h.writeJSON(w, metricsv1beta1.NodeMetricsList{TypeMeta: metricsTypeMeta("NodeMetricsList"), Items: nonNil(items)})
}

// nodeMetrics is GET /apis/metrics.k8s.io/v1beta1/nodes/{name}: the node's NodeMetrics, or
// metrics-server's NotFound (a node unknown, out of contact, or without a fresh window).
func (h *handler) nodeMetrics(w http.ResponseWriter, r *http.Request) {
	name := r.PathValue("name")
	a, ok := h.metrics(w)
	if !ok {
		return
	}
	for _, m := range a.nodes {
		if m.Name == name {
			m.TypeMeta = metricsTypeMeta("NodeMetrics")
			h.writeJSON(w, m)
			return
		}
	}
	h.writeStatus(w, apierrors.NewNotFound(schema.GroupResource{Group: metricsGroup, Resource: "nodemetrics"}, name))
}

// podMetricsList is GET /apis/metrics.k8s.io/v1beta1/pods[?labelSelector=] (every namespace)
// and .../namespaces/{namespace}/pods: the pods with metrics, those whose labels match.
func (h *handler) podMetricsList(w http.ResponseWriter, r *http.Request) {
	selector, a, ok := h.selectMetrics(w, r)
	if !ok {
		return
	}
	ns := r.PathValue("namespace")
	items := slices.DeleteFunc(a.pods, func(m metricsv1beta1.PodMetrics) bool {
		return ns != "" && m.Namespace != ns || !selector.Matches(labels.Set(m.Labels))
	})
	h.writeJSON(w, metricsv1beta1.PodMetricsList{TypeMeta: metricsTypeMeta("PodMetricsList"), Items: nonNil(items)})
}

// podMetrics is GET /apis/metrics.k8s.io/v1beta1/namespaces/{namespace}/pods/{name}: the pod's
// PodMetrics (the first node's, by name, if two nodes run a pod of that name), or metrics-server's
// NotFound ("podmetrics.metrics.k8s.io \"NAMESPACE/NAME\" not found").
func (h *handler) podMetrics(w http.ResponseWriter, r *http.Request) {
	ns, name := r.PathValue("namespace"), r.PathValue("name")
	a, ok := h.metrics(w)
	if !ok {
		return
	}
	for _, m := range a.pods {
		if m.Namespace == ns && m.Name == name {
			m.TypeMeta = metricsTypeMeta("PodMetrics")
			h.writeJSON(w, m)
			return
		}
	}
	h.writeStatus(w, apierrors.NewNotFound(schema.GroupResource{Group: metricsGroup, Resource: "podmetrics"}, ns+"/"+name))
}

// writeStatus answers with an API error as the API server does: its Status (kind Status,
// apiVersion v1) with the error's code.
func (h *handler) writeStatus(w http.ResponseWriter, err *apierrors.StatusError) {
	st := err.Status()
	st.TypeMeta = metav1.TypeMeta{Kind: "Status", APIVersion: "v1"}
	h.writeJSONCode(w, int(st.Code), st)
}
