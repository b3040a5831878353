package aggregator

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"time"

	"github.com/asynkron/protoactor-go/actor"
	"github.com/hashicorp/go-hclog"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
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
	mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodGet && r.Method != http.MethodHead {
			w.Header().Set("Allow", "GET, HEAD")
			http.Error(w, fmt.Sprintf("method %s not allowed: the fleet API is read-only", r.Method), http.StatusMethodNotAllowed)
			return
		}
		http.Error(w, fmt.Sprintf("404 page not found: %s (try /pods, /nodes, /events, /results, /metrics, /healthz)", r.URL.Path), http.StatusNotFound)
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

func (h *handler) writeJSON(w http.ResponseWriter, v any) {
	w.Header().Set("Content-Type", "application/json")
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
