package server

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"strconv"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
)

// DefaultListen is kubelet's read-only port, on loopback only.
const DefaultListen = "127.0.0.1:10255"

// Source is what the server shows.
type Source interface {
	// Pods returns every pod with its current status, sorted by namespace and name.
	Pods(ctx context.Context) ([]v1.Pod, error)
	// LogPath returns the log file of a container's current (or previous) run.
	LogPath(uid types.UID, container string, previous bool) (string, error)
	// Events returns the recorded events.
	Events() v1.EventList
}

// Options configure the handler.
type Options struct {
	Source  Source
	Metrics prometheus.Gatherer // everything, served at /metrics
	Probes  prometheus.Gatherer // the prober's series, served at /metrics/probes
	Logger  hclog.Logger
	// FollowPoll is how often a followed log is checked for new output (default 250 ms).
	FollowPoll time.Duration
}

// New returns the handler.
func New(opts Options) http.Handler {
	if opts.Logger == nil {
		opts.Logger = hclog.NewNullLogger()
	}
	if opts.FollowPoll <= 0 {
		opts.FollowPoll = 250 * time.Millisecond
	}
	s := &server{opts: opts}
	mux := http.NewServeMux()
	mux.HandleFunc("GET /healthz", func(w http.ResponseWriter, _ *http.Request) { _, _ = io.WriteString(w, "ok") })
	mux.HandleFunc("GET /pods", s.pods)
	mux.HandleFunc("GET /pods/{$}", s.pods)
	mux.HandleFunc("GET /pods/{namespace}/{name}", s.pod)
	mux.HandleFunc("GET /events", s.events)
	mux.Handle("GET /metrics", promhttp.HandlerFor(opts.Metrics, promhttp.HandlerOpts{}))
	mux.Handle("GET /metrics/probes", promhttp.HandlerFor(opts.Probes, promhttp.HandlerOpts{}))
	mux.HandleFunc("GET /containerLogs/{namespace}/{pod}/{container}", s.logs)
	mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodGet && r.Method != http.MethodHead {
			w.Header().Set("Allow", "GET, HEAD")
			http.Error(w, fmt.Sprintf("method %s not allowed: node's API is read-only", r.Method), http.StatusMethodNotAllowed)
			return
		}
		http.Error(w, fmt.Sprintf("404 page not found: %s (try /pods, /pods/{namespace}/{name}, /events, /metrics, /metrics/probes, /containerLogs/{namespace}/{pod}/{container}, /healthz)", r.URL.Path), http.StatusNotFound)
	})
	return mux
}

type server struct{ opts Options }

func (s *server) writeJSON(w http.ResponseWriter, v any) {
	w.Header().Set("Content-Type", "application/json")
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	if err := enc.Encode(v); err != nil {
		s.opts.Logger.Debug("write response", "error", err)
	}
}

func (s *server) pods(w http.ResponseWriter, r *http.Request) {
	pods, err := s.opts.Source.Pods(r.Context())
	if err != nil {
		http.Error(w, err.Error(), http.StatusServiceUnavailable)
		return
	}
	s.writeJSON(w, v1.PodList{TypeMeta: metav1.TypeMeta{Kind: "PodList", APIVersion: "v1"}, Items: pods})
}

func (s *server) find(w http.ResponseWriter, r *http.Request, namespace, name string) (v1.Pod, bool) {
	pods, err := s.opts.Source.Pods(r.Context())
	if err != nil {
		http.Error(w, err.Error(), http.StatusServiceUnavailable)
		return v1.Pod{}, false
	}
	for _, p := range pods {
		if p.Namespace == namespace && p.Name == name {
			return p, true
		}
	}
	http.Error(w, fmt.Sprintf("pod %s/%s not found", namespace, name), http.StatusNotFound)
	return v1.Pod{}, false
}

func (s *server) pod(w http.ResponseWriter, r *http.Request) {
	if p, ok := s.find(w, r, r.PathValue("namespace"), r.PathValue("name")); ok {
		s.writeJSON(w, p)
	}
}

func (s *server) events(w http.ResponseWriter, _ *http.Request) {
	s.writeJSON(w, s.opts.Source.Events())
}

// logOptions are kubelet's containerLogs query parameters that node supports.
type logOptions struct {
	previous, follow bool
	tailLines        int64 // -1: all
	limitBytes       int64 // 0: no limit
}

func parseLogOptions(q map[string][]string) (logOptions, error) {
	o := logOptions{tailLines: -1}
	get := func(k string) (string, bool) {
		v, ok := q[k]
		if !ok || len(v) == 0 {
			return "", false
		}
		return v[0], true
	}
	for _, b := range []struct {
		name string
		dst  *bool
	}{{"previous", &o.previous}, {"follow", &o.follow}} {
		if v, ok := get(b.name); ok {
			parsed, err := strconv.ParseBool(v)
			if err != nil {
				return o, fmt.Errorf("query parameter %s=%q: must be true or false", b.name, v)
			}
			*b.dst = parsed
		}
	}
	if v, ok := get("tailLines"); ok {
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil || n < 0 {
			return o, fmt.Errorf("query parameter tailLines=%q: must be a non-negative integer", v)
		}
		o.tailLines = n
	}
	if v, ok := get("limitBytes"); ok {
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil || n < 1 {
			return o, fmt.Errorf("query parameter limitBytes=%q: must be a positive integer", v)
		}
		o.limitBytes = n
	}
	for k := range q {
		switch k {
		case "previous", "follow", "tailLines", "limitBytes":
		default:
			return o, fmt.Errorf("unsupported query parameter %q (supported: previous, follow, tailLines, limitBytes)", k)
		}
	}
	return o, nil
}

func (s *server) logs(w http.ResponseWriter, r *http.Request) {
	opts, err := parseLogOptions(r.URL.Query())
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	p, ok := s.find(w, r, r.PathValue("namespace"), r.PathValue("pod"))
	if !ok {
		return
	}
	path, err := s.opts.Source.LogPath(p.UID, r.PathValue("container"), opts.previous)
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	f, err := os.Open(path)
	if err != nil {
		if errors.Is(err, os.ErrNotExist) {
			http.Error(w, fmt.Sprintf("no log for container %q yet", r.PathValue("container")), http.StatusNotFound)
			return
		}
		http.Error(w, err.Error(), http.StatusInternalServerError)
		return
	}
	defer f.Close()
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	if opts.tailLines >= 0 {
		if err := seekTail(f, opts.tailLines); err != nil {
			http.Error(w, err.Error(), http.StatusInternalServerError)
			return
		}
	}
	var out io.Writer = w
	var lw *limitedWriter
	if opts.limitBytes > 0 {
		lw = &limitedWriter{w: w, left: opts.limitBytes}
		out = lw
	}
	if _, err := io.Copy(out, f); err != nil {
		return
	}
	if !opts.follow {
		return
	}
	flusher, _ := w.(http.Flusher)
	t := time.NewTicker(s.opts.FollowPoll)
	defer t.Stop()
	for {
		if flusher != nil {
			flusher.Flush()
		}
		if lw != nil && lw.left <= 0 {
			return
		}
		select {
		case <-r.Context().Done():
			return
		case <-t.C:
			if _, err := io.Copy(out, f); err != nil {
				return
			}
		}
	}
}

// seekTail positions f at the start of its last n lines.
func seekTail(f *os.File, n int64) error {
	var starts []int64 // start offsets of the last n lines seen
	var pos int64
	br := bufio.NewReader(f)
	for {
		line, err := br.ReadBytes('\n')
		if len(line) > 0 {
			starts = append(starts, pos)
			if int64(len(starts)) > n {
				starts = starts[1:]
			}
			pos += int64(len(line))
		}
		if err != nil {
			break
		}
	}
	start := pos
	if len(starts) > 0 {
		start = starts[0]
	}
	_, err := f.Seek(start, io.SeekStart)
	return err
}

type limitedWriter struct {
	w    io.Writer
	left int64
}

func (l *limitedWriter) Write(p []byte) (int, error) {
	if l.left <= 0 {
		return len(p), nil
	}
	if int64(len(p)) > l.left {
		p = p[:l.left]
	}
	n, err := l.w.Write(p)
	l.left -= int64(n)
	return n, err
}
