package server

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/pprof"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/validation"

	"github.com/probeactor/probeactor/internal/describe"
	"github.com/probeactor/probeactor/messages"
)

// DefaultListen is kubelet's read-only port, on loopback only.
const DefaultListen = "127.0.0.1:10255"

// Defaults of the limits in Options.
const (
	DefaultMaxHeaderBytes    = 64 << 10 // Go's default is 1 MiB; no request to this API needs more than a few hundred bytes
	DefaultReadHeaderTimeout = 10 * time.Second
	DefaultIdleTimeout       = 2 * time.Minute
	DefaultWriteStall        = 10 * time.Second
	DefaultMaxFollows        = 16
	DefaultFollowPoll        = 250 * time.Millisecond
)

// Source is what the server shows.
type Source interface {
	// Pods returns every pod with its current status, sorted by namespace and name.
	Pods(ctx context.Context) ([]v1.Pod, error)
	// LogPath returns the log file of a container's current (or previous) run, and whether that run
	// is still running (its log may still grow: a follow goes on while it is).
	LogPath(uid types.UID, container string, previous bool) (path string, running bool, err error)
	// Events returns the recorded events.
	Events() v1.EventList
}

// Options configure the server. Zero limits take the defaults above.
type Options struct {
	// Listener is where Start serves (required). node binds it before anything starts, so an
	// address in use fails node before any part of it runs; Stop closes it.
	Listener net.Listener
	Source   Source
	Metrics  prometheus.Gatherer // everything, served at /metrics
	Probes   prometheus.Gatherer // the prober's series, served at /metrics/probes
	Resource prometheus.Gatherer // kubelet's resource metrics, served at /metrics/resource (nil: a 404)
	// Index is served at / exactly (node's status page); nil leaves / a 404 like any unknown path.
	Index  http.Handler
	Logger hclog.Logger
	// Profiling serves Go's profiles at /debug/pprof/ (kubelet's enableProfilingHandler); off, those
	// paths are 404 like any unknown path.
	Profiling bool

	// MaxHeaderBytes caps a request's header (431 beyond it).
	MaxHeaderBytes int
	// ReadHeaderTimeout is how long a client may take to send a request's header (slowloris).
	ReadHeaderTimeout time.Duration
	// IdleTimeout closes a keep-alive connection that sends no next request for this long.
	IdleTimeout time.Duration
	// WriteStall ends a response (and its connection) when one write to the client cannot proceed
	// for this long: a client that stops reading holds nothing longer than that.
	WriteStall time.Duration
	// MaxFollows caps concurrent follow=true log streams (429 beyond it).
	MaxFollows int
	// FollowPoll is how often a followed log is checked for new output.
	FollowPoll time.Duration
	// Now is the clock for sinceSeconds (default time.Now).
	Now func() time.Time
	// Warning, when set, is asked on every /pods: a non-empty answer goes with the list as an
	// HTTP Warning header (code 299, as the Kubernetes API server sends them and kubectl prints
	// them): a cluster member that runs no pods for want of a quorum says why.
	Warning func() string
	// ProbeStates, when set, serves /probes/{namespace}/{name}: the pod's probe workers' states
	// (the probe tree's Tree.ProbeStates), what node describe shows beyond kubectl.
	ProbeStates func(ctx context.Context, uid types.UID) ([]messages.ProbeState, error)
	// Health, when set, serves /healthz and /healthz/{name} (node's: health.Handler over its
	// checks); unset, /healthz always answers "ok".
	Health http.Handler
	// Node, when set, serves /nodes: a v1.NodeList of the one node it returns (node's own Node
	// object, package nodeobject), as a fleet aggregator lists its nodes; its error is a 503.
	// Unset, /nodes is a 404 like any unknown path.
	Node func(ctx context.Context) (v1.Node, error)
}

func (o *Options) setDefaults() {
	if o.Logger == nil {
		o.Logger = hclog.NewNullLogger()
	}
	if o.MaxHeaderBytes <= 0 {
		o.MaxHeaderBytes = DefaultMaxHeaderBytes
	}
	if o.ReadHeaderTimeout <= 0 {
		o.ReadHeaderTimeout = DefaultReadHeaderTimeout
	}
	if o.IdleTimeout <= 0 {
		o.IdleTimeout = DefaultIdleTimeout
	}
	if o.WriteStall <= 0 {
		o.WriteStall = DefaultWriteStall
	}
	if o.MaxFollows <= 0 {
		o.MaxFollows = DefaultMaxFollows
	}
	if o.FollowPoll <= 0 {
		o.FollowPoll = DefaultFollowPoll
	}
	if o.Now == nil {
		o.Now = time.Now
	}
}

// Server is node's status API: the routes below behind an http.Server that enforces Options'
// limits. It is a lifecycle.Component that can fail on its own (lifecycle.Failing).
type Server struct {
	http   *http.Server
	ln     net.Listener
	cancel context.CancelFunc // ends every request's context: in-flight follows return at Stop

	start  sync.Once
	served chan struct{} // closed once Serve has returned (or at Stop, if never started)
	failed chan error    // Serve's unexpected end (buffered 1)
}

// New returns a Server; Start starts it.
func New(opts Options) *Server {
	opts.setDefaults()
	base, cancel := context.WithCancel(context.Background())
	srv := &http.Server{
		Handler:           handler(opts),
		MaxHeaderBytes:    opts.MaxHeaderBytes,
		ReadHeaderTimeout: opts.ReadHeaderTimeout,
		IdleTimeout:       opts.IdleTimeout,
		// No ReadTimeout or WriteTimeout: they would cut a long follow. Bodies are refused, and
		// every write has its own deadline (WriteStall).
		BaseContext: func(net.Listener) context.Context { return base },
		ErrorLog:    opts.Logger.Named("http").StandardLogger(&hclog.StandardLoggerOptions{ForceLevel: hclog.Warn}),
	}
	srv.RegisterOnShutdown(cancel)
	return &Server{http: srv, ln: opts.Listener, cancel: cancel, served: make(chan struct{}), failed: make(chan error, 1)}
}

// ErrNoListener is Start's error when Options.Listener is nil.
var ErrNoListener = errors.New("server: Options.Listener is required")

// Start implements lifecycle.Component: it serves Options.Listener on a goroutine of its own,
// which ends at Stop (or when serving fails: see Failed), and returns at once.
func (s *Server) Start(context.Context) error {
	if s.ln == nil {
		return ErrNoListener
	}
	s.start.Do(func() {
		go func() { // ends when Serve returns: at Stop, or when accepting fails
			defer close(s.served)
			if err := s.http.Serve(s.ln); !errors.Is(err, http.ErrServerClosed) {
				s.failed <- fmt.Errorf("serve %s: %w", s.ln.Addr(), err)
			}
		}()
	})
	return nil
}

// Failed implements lifecycle.Failing: it yields why the server stopped serving before Stop (its
// listener failed), at most once. It is never closed.
func (s *Server) Failed() <-chan error { return s.failed }

// Stop implements lifecycle.Component: it ends in-flight log follows, closes the listener and
// idle connections, and waits for the requests still running until ctx ends; then it closes
// every connection still open and returns ctx's error. The serving goroutine has ended when Stop
// returns.
func (s *Server) Stop(ctx context.Context) error {
	s.start.Do(func() { close(s.served) }) // never started: nothing serves
	s.cancel()
	err := s.http.Shutdown(ctx)
	if err != nil {
		_ = s.http.Close() // the deadline passed: cut the requests still running
		err = fmt.Errorf("requests still running: %w", err)
	}
	<-s.served // Serve returns as soon as Shutdown closed the listener
	return err
}

// routes lists the paths for the 404 message.
const routes = "/pods, /pods/{namespace}/{name}, /probes/{namespace}/{name}, /events, /metrics, /metrics/probes, /metrics/resource, /containerLogs/{namespace}/{pod}/{container}, /healthz, /healthz/{check}"

// handler is every route behind the request guards.
func handler(opts Options) http.Handler {
	s := &server{opts: opts, follows: make(chan struct{}, opts.MaxFollows)}
	mux := http.NewServeMux()
	if opts.Health != nil {
		mux.Handle("GET /healthz", opts.Health)
		mux.Handle("GET /healthz/{name}", opts.Health)
	} else {
		mux.HandleFunc("GET /healthz", func(w http.ResponseWriter, _ *http.Request) { _, _ = io.WriteString(w, "ok") })
	}
	mux.HandleFunc("GET /pods", s.pods)
	mux.HandleFunc("GET /pods/{$}", s.pods)
	mux.HandleFunc("GET /pods/{namespace}/{name}", s.pod)
	mux.HandleFunc("GET /events", s.events)
	if opts.Node != nil {
		mux.HandleFunc("GET /nodes", s.nodes)
	}
	if opts.ProbeStates != nil {
		mux.HandleFunc("GET /probes/{namespace}/{name}", s.probes)
	}
	mux.Handle("GET /metrics", promhttp.HandlerFor(opts.Metrics, promhttp.HandlerOpts{}))
	mux.Handle("GET /metrics/probes", promhttp.HandlerFor(opts.Probes, promhttp.HandlerOpts{}))
	if opts.Resource != nil {
		mux.Handle("GET /metrics/resource", promhttp.HandlerFor(opts.Resource, promhttp.HandlerOpts{}))
	}
	mux.HandleFunc("GET /containerLogs/{namespace}/{pod}/{container}", s.logs)
	hint := routes
	if opts.Node != nil {
		hint = "/nodes, " + hint
	}
	if opts.Index != nil {
		mux.Handle("GET /{$}", opts.Index) // GET also matches HEAD; any other path under / stays a 404
		hint = "/ (status page), " + routes
	}
	if opts.Profiling {
		mux.HandleFunc("GET /debug/pprof/", pprof.Index) // also every named profile: heap, goroutine, ...
		mux.HandleFunc("GET /debug/pprof/cmdline", pprof.Cmdline)
		mux.HandleFunc("GET /debug/pprof/profile", pprof.Profile)
		mux.HandleFunc("GET /debug/pprof/symbol", pprof.Symbol)
		mux.HandleFunc("GET /debug/pprof/trace", pprof.Trace)
	}
	mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodGet && r.Method != http.MethodHead {
			w.Header().Set("Allow", "GET, HEAD")
			http.Error(w, fmt.Sprintf("method %q not allowed: node's API is read-only", r.Method), http.StatusMethodNotAllowed)
			return
		}
		http.Error(w, fmt.Sprintf("404 page not found: %q (try %s)", r.URL.Path, hint), http.StatusNotFound)
	})
	return guard(opts.WriteStall, mux)
}

// guard refuses request bodies (the API is read-only: nothing a client sends is read or kept) and
// puts a deadline on every write, so a client that stops reading frees its handler within WriteStall.
func guard(stall time.Duration, next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !strings.HasPrefix(r.URL.Path, "/") { // "*", or an absolute URL without a path
			http.Error(w, fmt.Sprintf("request target %q is not a path such as /pods", r.RequestURI), http.StatusBadRequest)
			return
		}
		if r.ContentLength != 0 { // -1: chunked, length unknown
			w.Header().Set("Connection", "close") // the unread body is not drained
			http.Error(w, "request body not allowed: node's API is read-only and takes no body", http.StatusRequestEntityTooLarge)
			return
		}
		next.ServeHTTP(&deadlineWriter{ResponseWriter: w, rc: http.NewResponseController(w), stall: stall}, r)
	})
}

// deadlineWriter sets the connection's write deadline before each write and flush.
type deadlineWriter struct {
	http.ResponseWriter
	rc    *http.ResponseController
	stall time.Duration
}

func (d *deadlineWriter) Write(p []byte) (int, error) {
	_ = d.rc.SetWriteDeadline(time.Now().Add(d.stall))
	return d.ResponseWriter.Write(p)
}

// Flush implements http.Flusher (promhttp and the log follow flush).
func (d *deadlineWriter) Flush() {
	_ = d.rc.SetWriteDeadline(time.Now().Add(d.stall))
	_ = d.rc.Flush()
}

// Unwrap lets http.ResponseController reach the connection.
func (d *deadlineWriter) Unwrap() http.ResponseWriter { return d.ResponseWriter }

type server struct {
	opts    Options
	follows chan struct{} // one token per running follow=true stream
}

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
	if s.opts.Warning != nil {
		if text := s.opts.Warning(); text != "" {
			w.Header().Add("Warning", WarningHeader(text))
		}
	}
	s.writeJSON(w, v1.PodList{TypeMeta: metav1.TypeMeta{Kind: "PodList", APIVersion: "v1"}, Items: pods})
}

// WarningHeader formats text as an HTTP Warning header value: 299, no agent, the quoted text
// (RFC 7234 §5.5; what the Kubernetes API server sends).
func WarningHeader(text string) string { return "299 - " + strconv.Quote(text) }

// checkNames answers 400 for a namespace, pod or container name no pod can have (node validates
// manifests with the same rules), without looking anything up.
func checkNames(w http.ResponseWriter, namespace, pod, container string) bool {
	check := func(what, value string, rule func(string) []string) bool {
		if msgs := rule(value); len(msgs) > 0 {
			http.Error(w, fmt.Sprintf("invalid %s name %q: %s", what, value, msgs[0]), http.StatusBadRequest)
			return false
		}
		return true
	}
	return check("namespace", namespace, validation.IsDNS1123Label) &&
		check("pod", pod, validation.IsDNS1123Subdomain) &&
		(container == "" || check("container", container, validation.IsDNS1123Label))
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
	http.Error(w, fmt.Sprintf("pod %s/%s not found on this node", namespace, name), http.StatusNotFound)
	return v1.Pod{}, false
}

func (s *server) pod(w http.ResponseWriter, r *http.Request) {
	ns, name := r.PathValue("namespace"), r.PathValue("name")
	if !checkNames(w, ns, name, "") {
		return
	}
	if p, ok := s.find(w, r, ns, name); ok {
		s.writeJSON(w, p)
	}
}

// probes is /probes/{namespace}/{name}: the pod's probe workers' states (a probeactor extension,
// no kubelet counterpart), as describe.List.
func (s *server) probes(w http.ResponseWriter, r *http.Request) {
	ns, name := r.PathValue("namespace"), r.PathValue("name")
	if !checkNames(w, ns, name, "") {
		return
	}
	p, ok := s.find(w, r, ns, name)
	if !ok {
		return
	}
	states, err := s.opts.ProbeStates(r.Context(), p.UID)
	if err != nil {
		http.Error(w, err.Error(), http.StatusServiceUnavailable)
		return
	}
	s.writeJSON(w, describe.List{Items: describe.FromStates(states)})
}

// nodes is /nodes: the one node this server runs on.
func (s *server) nodes(w http.ResponseWriter, r *http.Request) {
	n, err := s.opts.Node(r.Context())
	if err != nil {
		http.Error(w, "node object: "+err.Error(), http.StatusServiceUnavailable)
		return
	}
	s.writeJSON(w, v1.NodeList{TypeMeta: metav1.TypeMeta{Kind: "NodeList", APIVersion: "v1"}, Items: []v1.Node{n}})
}

func (s *server) events(w http.ResponseWriter, _ *http.Request) {
	s.writeJSON(w, s.opts.Source.Events())
}
