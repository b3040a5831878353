package staticpod

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/fsnotify/fsnotify"
	"github.com/hashicorp/go-hclog"
	"github.com/prometheus/client_golang/prometheus"
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/probeactor/probeactor/cmd/node/internal/manifest"
	"github.com/probeactor/probeactor/features"
)

// DefaultPeriod is how often the manifest path is read (kubelet's --file-check-frequency).
const DefaultPeriod = 20 * time.Second

// MaxFileSize bounds what is read of one manifest file; a larger file is a problem, not read.
const MaxFileSize = 1 << 20

// URLTimeout bounds one GET of the --manifest-url source, as kubelet's (its client's timeout).
const URLTimeout = 10 * time.Second

// Runner starts and stops pods for the watcher (node: the probe tree and the process runtime).
type Runner interface {
	// StartPod starts a valid pod; an error means nothing of it runs.
	StartPod(pod *v1.Pod) error
	// StopPod stops a pod the watcher started (containers killed with their grace periods) and
	// forgets it; it returns once its processes are gone.
	StopPod(pod *v1.Pod)
}

// Options configure a Watcher: Path, URL or both.
type Options struct {
	Path   string        // a directory of manifests, or one manifest file ("" = none)
	Period time.Duration // DefaultPeriod when zero

	// URL is kubelet's --manifest-url: read with a GET (sending Header) at start and every
	// URLPeriod (DefaultPeriod when zero, as kubelet's --http-check-frequency); "" = none.
	URL       string
	Header    http.Header
	URLPeriod time.Duration

	Runner   Runner
	Logger   hclog.Logger
	Reserved []*v1.Pod // pods node runs from -f: their names and UIDs are not available
	Now      func() time.Time
	Gates    features.Gates // node's --feature-gates: manifests are validated under them

	// Registerer, when given, gets the watcher's metrics: probeactor_static_pod_problems (Core.Problems
	// after every read) and probeactor_static_pod_source_last_success_timestamp_seconds{source} (when
	// the path was last listed, source="path", or the URL last gave a valid answer, source="url").
	Registerer prometheus.Registerer

	// Set, when given, makes the watcher a reader for a member of the cluster named Cluster (see
	// NewClusterCore): after every read of the path, Set gets the whole set of valid static pods
	// (Core.Read) and the watcher starts and stops nothing (Runner is not used; the cluster's
	// sharder runs this member's share). A path that cannot be listed calls nothing: the last set
	// stands. Set is called on the watcher's goroutine, one read at a time.
	Set     func(pods []*v1.Pod)
	Cluster string
}

// Watcher runs the static pods of a manifest path, of a URL, or of both as one set. It is a
// lifecycle.Component: Start it once, Stop ends it.
type Watcher struct {
	opts    Options
	log     hclog.Logger
	core    *Core
	stopped chan types.UID // a pod the plan stopped is gone
	// singleFile: the path was a manifest file when last read (owned by the loop). Its removal then
	// stops its pods; a directory that cannot be read changes nothing.
	singleFile bool

	// The watch (owned by the loop): notes is nil until a notifier could be made, watched the
	// directory it watches ("" while none), watchProblem the last watch problem logged.
	newNotifier  func() (notifier, error)
	notes        notifier
	watched      string
	watchProblem string
	ticks        <-chan time.Time // tests' periodic reads; nil: a ticker of Period

	// What a burst of events needs read (owned by the loop). As kubelet reads only the file an
	// event names, a burst that names manifests of a directory re-reads only those: listed are the
	// paths of the directory's files as the last full read found them, in name order, kept up to
	// date by the partial reads (their contents are the core's: only paths are kept here);
	// listedOK is false until a full read of a directory succeeded, and after one failed. pending
	// are the manifests the burst named; whole is set when the burst concerned the path itself (a
	// single manifest file, the directory's mode or removal) or events were lost.
	listed   []string
	listedOK bool
	pending  map[string]bool
	whole    bool
	readOne  func(path string) (File, bool) // readFile; tests count the files read

	// The URL source: the poller's answers reach the loop through fetched; client is the watcher's
	// own (the poller closes its idle connections as it ends); urlTicks are tests' polls (nil: a
	// ticker of URLPeriod). ctx ends at Stop, and with it a GET under way.
	ctx      context.Context
	cancel   context.CancelFunc
	client   *http.Client
	fetched  chan File
	urlTicks <-chan time.Time
	polls    sync.WaitGroup

	problems    prometheus.Gauge
	lastSuccess *prometheus.GaugeVec

	// seen is closed once every source was read successfully (kubelet's sourcesReady): the path
	// listed, the URL's answer valid; pathSeen and urlSeen are the loop's.
	seen     chan struct{}
	pathSeen bool
	urlSeen  bool

	quit  chan struct{}
	read  chan struct{} // closed once the first read of the path and of the URL was carried out
	done  chan struct{} // closed when the loop has ended
	stops sync.WaitGroup
	start sync.Once
	stop  sync.Once
}

// New returns a watcher that has not read anything yet.
func New(opts Options) *Watcher {
	if opts.Period <= 0 {
		opts.Period = DefaultPeriod
	}
	if opts.URLPeriod <= 0 {
		opts.URLPeriod = DefaultPeriod
	}
	if opts.Logger == nil {
		opts.Logger = hclog.NewNullLogger()
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	core := NewCore(opts.Reserved, "-f")
	if opts.Set != nil {
		core = NewClusterCore(opts.Reserved, "-f", opts.Cluster)
	}
	core.Gates = opts.Gates
	ctx, cancel := context.WithCancel(context.Background())
	problems := prometheus.NewGauge(prometheus.GaugeOpts{Name: "probeactor_static_pod_problems",
		Help: "Static pod manifests (files, the URL) that cannot be read, decoded or validated, plus the path if it cannot be listed and each pod refused for a clash: 0 when what runs is what the sources say."})
	lastSuccess := prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: "probeactor_static_pod_source_last_success_timestamp_seconds",
		Help: "When a static pod source was last read successfully (source=path: listed; source=url: a valid answer), in seconds since the epoch."}, []string{"source"})
	if opts.Registerer != nil {
		opts.Registerer.MustRegister(problems, lastSuccess)
	}
	return &Watcher{
		problems:    problems,
		lastSuccess: lastSuccess,
		ctx:         ctx,
		cancel:      cancel,
		opts:        opts,
		log:         opts.Logger.Named("static-pods"),
		core:        core,
		stopped:     make(chan types.UID),
		newNotifier: newFSNotifier,
		pending:     map[string]bool{},
		readOne:     readFile,
		client:      &http.Client{Timeout: URLTimeout, Transport: http.DefaultTransport.(*http.Transport).Clone()},
		fetched:     make(chan File),
		seen:        make(chan struct{}),
		quit:        make(chan struct{}),
		read:        make(chan struct{}),
		done:        make(chan struct{}),
	}
}

// Start implements lifecycle.Component: it starts the goroutine that reads the manifest path at
// once, then every period and soon after a change is seen through inotify (and the URL at once,
// then every URLPeriod), and returns once the first read was carried out (its pods started, or
// handed to Set): whatever comes after the watcher in node's list (the runtime's orphan sweep) sees
// every static pod. The goroutines end with Stop. A path or URL that cannot be read is no error:
// it is logged, and read again at each period. When ctx ends before the first read, Start stops
// the watcher again (ending a GET under way) and returns ctx's error.
func (w *Watcher) Start(ctx context.Context) error {
	w.start.Do(func() { go w.loop() })
	select {
	case <-w.read:
		return nil
	case <-ctx.Done():
		_ = w.Stop(context.Background())
		return fmt.Errorf("static pods: the first read did not finish: %w", ctx.Err())
	}
}

// Stop implements lifecycle.Component: it stops reading the manifest path (the loop ends, and
// inotify's reader with it) and waits until the pods being stopped are gone, or until ctx ends:
// it then returns ctx's error, and each stop that is still under way ends in the background when
// its Runner.StopPod returns. Stop leaves the pods still running to whoever started them (node's
// pod host terminates every pod it started).
func (w *Watcher) Stop(ctx context.Context) error {
	w.stop.Do(func() { close(w.quit); w.cancel() })
	w.start.Do(func() { close(w.done) }) // never started: nothing to wait for
	stopped := make(chan struct{})
	go func() { // ends once the loop and every stop have ended
		defer close(stopped)
		<-w.done
		w.stops.Wait()
		w.polls.Wait()
	}()
	select {
	case <-stopped:
		return nil
	case <-ctx.Done():
		return fmt.Errorf("static pods still stopping: %w", ctx.Err())
	}
}

// loop reads the path at every tick of Period (first setting the watch up if there is none) and
// settleDelay after the first event of a burst, carries out the plans and hears of stopped pods.
// It ends at Stop, and closes the notifier as it ends.
func (w *Watcher) loop() {
	defer close(w.done)
	defer w.closeNotifier()
	ticks := w.ticks
	if ticks == nil && w.opts.Path != "" {
		t := time.NewTicker(w.opts.Period)
		defer t.Stop()
		ticks = t.C
	}
	settle := time.NewTimer(settleDelay) // armed by the first event of a burst; stopped as the loop ends
	settle.Stop()
	defer settle.Stop()
	settling := false
	soon := func() {
		if !settling {
			settle.Reset(settleDelay)
			settling = true
		}
	}
	if w.opts.Path != "" {
		w.watch()
		w.scan()
	}
	if w.opts.URL != "" {
		w.applyURL(w.get())
		w.polls.Add(1)
		go w.poll()
	}
	close(w.read)
	for {
		var events <-chan fsnotify.Event
		var errs <-chan error
		if w.notes != nil {
			events, errs = w.notes.Events(), w.notes.Errors()
		}
		select {
		case <-w.quit:
			return
		case <-ticks:
			settle.Stop() // this read covers the burst's events
			settling = false
			w.watch()
			w.scan()
		case <-settle.C:
			settling = false
			if w.whole || !w.listedOK {
				w.scan()
			} else {
				w.reread()
			}
		case ev, ok := <-events:
			if !ok {
				w.notifierStopped()
				continue
			}
			switch classify(filepath.Clean(w.opts.Path), w.watched, ev) {
			case named:
				w.pending[filepath.Clean(ev.Name)] = true
				soon()
			case changed:
				w.whole = true
				soon()
			case watchGone:
				w.watchFailed(fmt.Errorf("%s was removed or moved", w.watched))
				w.unwatch()
				w.whole = true
				soon()
			case unrelated:
			default:
			}
		case err, ok := <-errs:
			if !ok {
				w.notifierStopped()
				continue
			}
			w.watchFailed(fmt.Errorf("inotify: %w", err))
			w.unwatch() // events may have been lost: read all soon, watch again at the next periodic read
			w.whole = true
			soon()
		case f := <-w.fetched:
			w.applyURL(f)
		case uid := <-w.stopped:
			w.carryOut(w.core.Stopped(uid))
		}
	}
}

// poll reads the URL at every tick of URLPeriod and hands each answer to the loop, until Stop. It
// owns the client once the loop's first read is done, and closes its idle connections as it ends.
func (w *Watcher) poll() {
	defer w.polls.Done()
	defer w.client.CloseIdleConnections()
	ticks := w.urlTicks
	if ticks == nil {
		t := time.NewTicker(w.opts.URLPeriod)
		defer t.Stop()
		ticks = t.C
	}
	for {
		select {
		case <-w.quit:
			return
		case <-ticks:
		}
		f := w.get()
		select {
		case w.fetched <- f:
		case <-w.quit:
			return
		}
	}
}

// get reads the URL: its answer, or why there is none.
func (w *Watcher) get() File {
	data, err := manifest.Get(w.ctx, w.client, w.opts.URL, w.opts.Header)
	return File{Path: w.opts.URL, Data: data, Err: err}
}

// applyURL hands the URL's answer to the core and carries out its plan, as apply does for files.
func (w *Watcher) applyURL(f File) {
	give(w, f, w.core.ReadURL, w.core.ScanURL)
	if !w.core.Valid(f.Path) {
		return
	}
	w.lastSuccess.WithLabelValues("url").Set(float64(w.opts.Now().UnixNano()) / 1e9)
	if !w.urlSeen {
		w.urlSeen = true
		w.markSeen()
	}
}

// Seen is closed once every source has been read successfully, as kubelet's sourcesReady: the
// manifest path listed, the URL's answer valid. Until then a pod none of them has given yet may
// still be one of theirs: what an earlier node left running is not swept before (podhost.Orphans).
func (w *Watcher) Seen() <-chan struct{} { return w.seen }

// markSeen closes seen when every source has been read successfully.
func (w *Watcher) markSeen() {
	if (w.opts.Path == "" || w.pathSeen) && (w.opts.URL == "" || w.urlSeen) {
		select {
		case <-w.seen:
		default:
			close(w.seen)
		}
	}
}

// watch sets the watch on the manifest path up if there is none. A failure (no such path yet,
// inotify's limits) is logged once while it lasts, and the watcher keeps polling.
func (w *Watcher) watch() {
	if w.watched != "" {
		return
	}
	if w.notes == nil {
		n, err := w.newNotifier()
		if err != nil {
			w.watchFailed(fmt.Errorf("start inotify: %w", explainWatchError(err)))
			return
		}
		w.notes = n
	}
	dir, err := watchDir(w.opts.Path)
	if err == nil {
		dir = filepath.Clean(dir)
		err = w.notes.Add(dir)
		if err != nil {
			err = fmt.Errorf("watch %s: %w", dir, explainWatchError(err))
		}
	}
	if err != nil {
		w.watchFailed(err)
		return
	}
	w.watched = dir
	if w.watchProblem != "" {
		w.log.Info("watching the static pod manifest path again", "path", w.opts.Path, "dir", dir)
		w.watchProblem = ""
	}
}

// watchFailed logs a watch problem unless it is the one logged last.
func (w *Watcher) watchFailed(err error) {
	if msg := err.Error(); msg != w.watchProblem {
		w.watchProblem = msg
		w.log.Warn("static pod manifest path not watched; reading it every --file-check-frequency and watching again then", "path", w.opts.Path, "period", w.opts.Period, "error", err)
	}
}

// unwatch drops the watch on the directory (gone, moved, or its events lost).
func (w *Watcher) unwatch() {
	if w.watched != "" {
		_ = w.notes.Remove(w.watched) // an error means inotify dropped it already
		w.watched = ""
	}
}

// notifierStopped forgets a notifier whose channels closed: a new one is made at the next
// periodic read.
func (w *Watcher) notifierStopped() {
	w.watchFailed(errors.New("inotify stopped"))
	w.closeNotifier()
}

func (w *Watcher) closeNotifier() {
	if w.notes != nil {
		if err := w.notes.Close(); err != nil {
			w.log.Debug("closing inotify", "error", err)
		}
		w.notes, w.watched = nil, ""
	}
}

// scan reads the whole path (List) and applies it.
func (w *Watcher) scan() {
	clear(w.pending)
	w.whole = false
	files, err := List(w.opts.Path)
	if errors.Is(err, fs.ErrNotExist) && w.singleFile {
		files, err = nil, nil // the one manifest was removed: its pods stop, as a file removed from a directory
	}
	if err != nil {
		w.listed, w.listedOK = nil, false
		w.carryOut(w.core.ListFailed(err))
		return
	}
	if len(files) == 1 && files[0].Path == w.opts.Path {
		w.singleFile = true
	}
	// Only a directory's files are kept for partial reads: a path naming one file is read whole.
	w.listed = w.listed[:0]
	for _, f := range files {
		w.listed = append(w.listed, f.Path)
	}
	w.listedOK = w.watched != "" && w.watched == filepath.Clean(w.opts.Path)
	w.apply(files)
	w.lastSuccess.WithLabelValues("path").Set(float64(w.opts.Now().UnixNano()) / 1e9)
	if !w.pathSeen {
		w.pathSeen = true
		w.markSeen()
	}
}

// reread reads again only the manifests the burst's events named, and applies the directory's
// files as the last full read found them with those changes (relist), without reading the others
// again.
func (w *Watcher) reread() {
	read := make(map[string]File, len(w.pending))
	gone := map[string]bool{}
	for path := range w.pending {
		if f, ok := w.readOne(path); ok {
			read[path] = f
		} else {
			gone[path] = true
		}
	}
	clear(w.pending)
	var files []File
	w.listed, files = relist(w.listed, read, gone)
	w.apply(files)
}

// relist is a directory's listing after a partial read: listed (paths in name order, as List
// gives them) with the files read again (read: in the listing now, in name order) and those no
// longer there (gone) taken out. It returns the new listing and the files for the core: the ones
// read with their contents, the others Unread. A full read would list the same paths.
func relist(listed []string, read map[string]File, gone map[string]bool) ([]string, []File) {
	out := make([]string, 0, len(listed)+len(read))
	for _, path := range listed {
		if _, ok := read[path]; !ok && !gone[path] {
			out = append(out, path)
		}
	}
	for path := range read {
		out = append(out, path)
	}
	slices.Sort(out)
	files := make([]File, len(out))
	for i, path := range out {
		if f, ok := read[path]; ok {
			files[i] = f
		} else {
			files[i] = File{Path: path, Unread: true}
		}
	}
	return out, files
}

// apply hands the files read to the core and carries out its plan.
func (w *Watcher) apply(files []File) { give(w, files, w.core.Read, w.core.Scan) }

// give hands what was read to the core: in a cluster to read (the whole set goes to Set, and only
// the problems are carried out), else to scan, whose plan is carried out.
func give[T any](w *Watcher, in T, read func(T, time.Time) ([]*v1.Pod, []string), scan func(T, time.Time) Plan) {
	if w.opts.Set != nil {
		pods, problems := read(in, w.opts.Now())
		w.carryOut(Plan{Problems: problems})
		w.opts.Set(pods)
		return
	}
	w.carryOut(scan(in, w.opts.Now()))
}

// carryOut reports the plan's problems, begins its stops (each on its own goroutine, which ends
// when the pod is gone and the loop heard of it, or at Stop) and makes its starts.
func (w *Watcher) carryOut(p Plan) {
	w.problems.Set(float64(w.core.Problems()))
	for _, msg := range p.Problems {
		w.log.Error("static pod manifest not applied", "problem", msg)
	}
	for _, a := range p.Stop {
		w.log.Info("stopping static pod", "pod", podKey(a.Pod), "why", a.Why, "manifest", a.Origin)
		w.stops.Add(1)
		go func() {
			defer w.stops.Done()
			w.opts.Runner.StopPod(a.Pod)
			select {
			case w.stopped <- a.Pod.UID:
			case <-w.quit:
			}
		}()
	}
	for _, a := range p.Start {
		if err := w.opts.Runner.StartPod(a.Pod); err != nil {
			w.log.Error("static pod did not start; trying again at the next read", "pod", podKey(a.Pod), "manifest", a.Origin, "error", err)
			w.core.StartFailed(a.Pod.UID)
			continue
		}
		w.log.Info("static pod started", "pod", podKey(a.Pod), "why", a.Why, "manifest", a.Origin)
	}
}

// List reads a manifest path as kubelet's file source does: a regular file is the only manifest; in
// a directory every entry not starting with "." is one, in name order (subdirectories are not read
// and are reported). A file removed while the directory is read is not listed.
func List(path string) ([]File, error) {
	st, err := os.Stat(path)
	if err != nil {
		return nil, err
	}
	if !st.IsDir() {
		if f, ok := readFile(path); ok {
			return []File{f}, nil
		}
		return nil, nil // removed since the Stat above: no manifest
	}
	entries, err := os.ReadDir(path)
	if err != nil {
		return nil, err
	}
	files := make([]File, 0, len(entries))
	for _, e := range entries {
		if strings.HasPrefix(e.Name(), ".") {
			continue
		}
		if f, ok := readFile(filepath.Join(path, e.Name())); ok {
			files = append(files, f)
		}
	}
	return files, nil
}

// readFile reads one manifest, following symbolic links, at most MaxFileSize bytes. Only a regular
// file is opened (opening a FIFO would block the watcher). ok is false when the file no longer
// exists (removed since it was listed): it is not there, which is not a problem.
func readFile(path string) (f File, ok bool) {
	st, err := os.Stat(path)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return File{}, false
	case err != nil:
		return File{Path: path, Err: err}, true
	case st.IsDir():
		return File{Path: path, Err: fmt.Errorf("a directory: manifests in subdirectories are not read")}, true
	case !st.Mode().IsRegular():
		return File{Path: path, Err: fmt.Errorf("not a regular file (%s)", st.Mode().Type())}, true
	}
	file, err := os.Open(path)
	if errors.Is(err, fs.ErrNotExist) {
		return File{}, false
	}
	if err != nil {
		return File{Path: path, Err: err}, true
	}
	defer file.Close()
	data, err := manifest.ReadAtMost(file, MaxFileSize)
	if errors.Is(err, manifest.ErrTooLarge) {
		err = fmt.Errorf("larger than %d bytes: not read", MaxFileSize)
	}
	if err != nil {
		return File{Path: path, Err: err}, true
	}
	return File{Path: path, Data: data}, true
}
