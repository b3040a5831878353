package staticpod

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"path/filepath"
	"slices"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/probeactor/probeactor/cmd/node/internal/manifest"
	"github.com/probeactor/probeactor/cmd/node/internal/proc"
	"github.com/probeactor/probeactor/features"
)

// File is one manifest file as listed: its content, or why it could not be read. Unread marks a
// file the core was given before and that was not read again since (no event named it): the core
// keeps what it knew of it, and Data and Err are not looked at.
type File struct {
	Path   string
	Data   []byte
	Err    error
	Unread bool
}

// Why a pod is started or stopped.
const (
	Added   = "added"   // a new file, or a new pod in a file
	Changed = "changed" // the pod's manifest changed: the old instance stops, then the new one starts
	Removed = "removed" // its file, or the pod in it, is gone
)

// Action is one pod to start or stop.
type Action struct {
	Pod    *v1.Pod
	Origin string // "DIR/web.yaml" or "DIR/web.yaml: document 2"
	Why    string // Added, Changed or Removed
}

// Plan is what the shell carries out after a Core call: stop and start pods, report problems.
type Plan struct {
	Stop     []Action // report each with Stopped once its processes are gone
	Start    []Action // report a failure with StartFailed
	Problems []string // problems not reported before, one line each ("DIR/x.yaml: spec.containers: Required value")
}

// candidate is a valid pod from a file.
type candidate struct {
	key    string // namespace/name
	pod    *v1.Pod
	hash   string // identity of the manifest content: a different hash is a different pod
	origin string
}

// fileState is what the core knows of one file.
type fileState struct {
	sum      [sha256.Size]byte // of the content last parsed; zero after a read error
	parsed   bool
	pods     []candidate // of the last valid version (kept while the file is invalid)
	problems []string    // of the current content; empty when valid
}

// instance is a pod the core has started and not yet seen stopped.
type instance struct {
	candidate
	stopping bool
}

// Core decides which static pods run. It is not safe for concurrent use (the Watcher's goroutine
// owns it).
type Core struct {
	reservedName map[string]string    // namespace/name → where it comes from (-f)
	reservedUID  map[types.UID]string // UID → where it comes from
	files        map[string]*fileState
	listing      []string // the manifest path's files as last listed, in name order
	url          string   // the --manifest-url source ("" until ScanURL or ReadURL gave it)
	dirProblem   string
	desired      map[string]candidate // by namespace/name, from the last Scan
	running      map[string]*instance // by namespace/name: running or stopping
	uids         map[types.UID]*instance
	replacing    map[string]bool // names stopped because they changed: their next start is a change
	clashes      []string        // pods refused by the last choose (name or UID taken)
	reported     map[string]bool // problems reported and still present
	cluster      string          // NewClusterCore's cluster name ("" = node alone)

	// Gates are node's feature gates: a manifest is validated (and defaulted) under them, as by
	// node validate (set before the first Scan).
	Gates features.Gates
}

// NewCore returns a core with no static pods. reserved are pods node runs from elsewhere (-f):
// their names and UIDs are refused to static pods, with origin naming where they come from.
func NewCore(reserved []*v1.Pod, origin string) *Core {
	c := &Core{
		reservedName: map[string]string{},
		reservedUID:  map[types.UID]string{},
		files:        map[string]*fileState{},
		desired:      map[string]candidate{},
		running:      map[string]*instance{},
		uids:         map[types.UID]*instance{},
		replacing:    map[string]bool{},
		reported:     map[string]bool{},
	}
	for _, p := range reserved {
		c.reservedName[podKey(p)] = origin
		c.reservedUID[p.UID] = origin
	}
	return c
}

// NewClusterCore returns a core for a member of the cluster named cluster: it only reads (Read),
// the cluster's sharder starts and stops the pods. A pod's UID derives from the cluster name, the
// file's name (not its directory: members may keep their manifests at different paths) and the
// pod's content, so every member reading the same file derives the same UID; a pod that sets
// metadata.uid is refused (the sharder places pods by UID, and a changed pod must be a new pod).
func NewClusterCore(reserved []*v1.Pod, origin, cluster string) *Core {
	c := NewCore(reserved, origin)
	c.cluster = cluster
	return c
}

func podKey(p *v1.Pod) string { return p.Namespace + "/" + p.Name }

// ListFailed records that the manifest path could not be listed: nothing changes, the problem is
// reported once.
func (c *Core) ListFailed(err error) Plan {
	c.dirProblem = manifest.OneLine(err.Error())
	return Plan{Problems: c.newProblems()}
}

// Scan takes the complete listing of the manifest path (every file, in name order) at time now
// (the creation time of pods it parses) and returns what to do.
func (c *Core) Scan(files []File, now time.Time) Plan {
	c.read(files, now)
	plan := c.reconcile()
	plan.Problems = c.newProblems()
	return plan
}

// Read takes the complete listing of the manifest path, as Scan, and returns the pods that should
// run (in namespace/name order) and the problems not reported yet, without starting or stopping
// anything: a cluster's sharder runs the pods (NewClusterCore). The choice among clashing pods is
// Scan's with nothing running: the first file in name order wins, so members reading the same
// files choose alike.
func (c *Core) Read(files []File, now time.Time) (pods []*v1.Pod, problems []string) {
	c.read(files, now)
	for _, key := range sortedKeys(c.desired) {
		pods = append(pods, c.desired[key].pod)
	}
	return pods, c.newProblems()
}

// ScanURL takes what a GET of the --manifest-url source answered (f.Path is the URL; Err when it
// could not be read) and returns what to do, as Scan does for the manifest path. The URL's pods
// come after the path's in the order that decides a clash. Unlike a file's, a List of no pods is
// valid and runs no pods: a server cannot delete a file. An empty answer is a problem, as an empty
// file is (kubelet would stop every pod of the URL): a server that serves a file while it is
// rewritten sends one.
func (c *Core) ScanURL(f File, now time.Time) Plan {
	c.readURL(f, now)
	plan := c.reconcile()
	plan.Problems = c.newProblems()
	return plan
}

// ReadURL is ScanURL for a member of a cluster, as Read is Scan's: it returns every static pod that
// should run, the path's and the URL's.
func (c *Core) ReadURL(f File, now time.Time) (pods []*v1.Pod, problems []string) {
	c.readURL(f, now)
	for _, key := range sortedKeys(c.desired) {
		pods = append(pods, c.desired[key].pod)
	}
	return pods, c.newProblems()
}

// read parses the files of the path's listing that changed since the last read and chooses the
// desired pods (the URL's, if any, among them).
func (c *Core) read(files []File, now time.Time) {
	c.dirProblem = ""
	seen := make(map[string]bool, len(files))
	c.listing = c.listing[:0]
	for _, f := range files {
		seen[f.Path] = true
		c.listing = append(c.listing, f.Path)
		c.readFile(f, now)
	}
	for path := range c.files {
		if !seen[path] && path != c.url {
			delete(c.files, path)
		}
	}
	c.desired = c.choose(c.paths())
}

// readURL parses the URL's answer if it changed and chooses the desired pods.
func (c *Core) readURL(f File, now time.Time) {
	c.url = f.Path
	c.readFile(f, now)
	c.desired = c.choose(c.paths())
}

// paths are the sources in the order that decides a clash: the path's files, then the URL.
func (c *Core) paths() []string {
	if c.url == "" {
		return c.listing
	}
	return append(slices.Clip(c.listing), c.url)
}

// readFile parses one file (or the URL's answer) if its content changed since it was last parsed.
func (c *Core) readFile(f File, now time.Time) {
	fs := c.files[f.Path]
	if fs == nil {
		fs = &fileState{}
		c.files[f.Path] = fs
		if f.Unread { // the shell's mistake: a file never read is not kept as if it were
			f.Err = errors.New("not read")
		}
	} else if f.Unread {
		return
	}
	if f.Err != nil {
		fs.sum, fs.parsed = [sha256.Size]byte{}, false
		fs.problems = []string{manifest.OneLine(fmt.Sprintf("%s: %v", f.Path, f.Err))}
		if len(fs.pods) > 0 {
			fs.problems = append(fs.problems, keptNote(f.Path))
		}
		return
	}
	sum := sha256.Sum256(f.Data)
	if fs.parsed && sum == fs.sum {
		return
	}
	fs.sum, fs.parsed = sum, true
	pods, problems := load(f.Path, f.Data, now, c.cluster, c.Gates, f.Path == c.url)
	fs.problems = problems
	switch {
	case len(problems) == 0:
		fs.pods = pods
	case len(fs.pods) > 0:
		fs.problems = append(fs.problems, keptNote(f.Path))
	}
}

// Problems is how many things are wrong now: the path cannot be listed, a file (or the URL) cannot
// be read, decoded or validated (each counts once, however many errors it has), a pod is refused
// for a clash (each pod once). Zero means the pods that run are what the sources say.
func (c *Core) Problems() int {
	n := len(c.clashes)
	if c.dirProblem != "" {
		n++
	}
	for _, fs := range c.files {
		if len(fs.problems) > 0 {
			n++
		}
	}
	return n
}

// Valid reports whether the last read of path (a file, or the URL) gave its pods without a problem.
func (c *Core) Valid(path string) bool {
	fs := c.files[path]
	return fs != nil && fs.parsed && len(fs.problems) == 0
}

// keptNote follows the problems of a file whose last valid version runs.
func keptNote(path string) string {
	return path + ": not applied; the pods of its last valid version keep running"
}

// Stopped records that a pod the plan stopped is gone, and returns what may start now (a
// replacement waiting for its name or UID).
func (c *Core) Stopped(uid types.UID) Plan {
	if inst, ok := c.uids[uid]; ok {
		delete(c.uids, uid)
		if c.running[inst.key] == inst {
			delete(c.running, inst.key)
		}
	}
	return c.reconcile()
}

// StartFailed records that a pod the plan started could not start: the core forgets it and tries
// again at the next Scan.
func (c *Core) StartFailed(uid types.UID) {
	if inst, ok := c.uids[uid]; ok {
		delete(c.uids, uid)
		delete(c.running, inst.key)
	}
}

// Running returns the pods started and not being stopped, by namespace/name.
func (c *Core) Running() []*v1.Pod {
	var out []*v1.Pod
	for _, key := range sortedKeys(c.running) {
		if inst := c.running[key]; !inst.stopping {
			out = append(out, inst.pod)
		}
	}
	return out
}

// choose picks, for every namespace/name, the pod that should run: the one running already if its
// file still defines it unchanged, else the first in file order. Pods that clash with a chosen one
// or with a reserved one are refused (the file's problems say so).
func (c *Core) choose(paths []string) map[string]candidate {
	c.clashes = nil
	var first, rest []candidate
	for _, path := range paths {
		fs := c.files[path]
		for _, cand := range fs.pods {
			if inst, ok := c.running[cand.key]; ok && !inst.stopping && inst.hash == cand.hash && inst.pod.UID == cand.pod.UID {
				first = append(first, cand)
			} else {
				rest = append(rest, cand)
			}
		}
	}
	desired := map[string]candidate{}
	uidOwner := map[types.UID]string{}
	for _, cand := range append(first, rest...) {
		if origin, ok := c.reservedName[cand.key]; ok {
			c.addProblem(cand.origin, fmt.Sprintf("metadata.name: Duplicate value: pod %q is also run from %s", cand.key, origin))
			continue
		}
		if other, ok := desired[cand.key]; ok {
			c.addProblem(cand.origin, fmt.Sprintf("metadata.name: Duplicate value: pod %q is also defined in %s", cand.key, other.origin))
			continue
		}
		if origin, ok := c.reservedUID[cand.pod.UID]; ok {
			c.addProblem(cand.origin, fmt.Sprintf("metadata.uid: Duplicate value: %q is also the UID of a pod run from %s", cand.pod.UID, origin))
			continue
		}
		if other, ok := uidOwner[cand.pod.UID]; ok {
			c.addProblem(cand.origin, fmt.Sprintf("metadata.uid: Duplicate value: %q is also the UID of the pod in %s", cand.pod.UID, other))
			continue
		}
		desired[cand.key] = cand
		uidOwner[cand.pod.UID] = cand.origin
	}
	return desired
}

// addProblem records a clash found while choosing.
func (c *Core) addProblem(origin, detail string) {
	c.clashes = append(c.clashes, origin+": "+detail)
}

// reconcile stops what should not run (any more, or not in this version) and starts what should
// and can: a pod starts only once no instance with its name or UID remains.
func (c *Core) reconcile() Plan {
	var plan Plan
	for _, key := range sortedKeys(c.running) {
		inst := c.running[key]
		if inst.stopping {
			continue
		}
		d, ok := c.desired[key]
		switch {
		case !ok:
			inst.stopping = true
			plan.Stop = append(plan.Stop, Action{Pod: inst.pod, Origin: inst.origin, Why: Removed})
		case d.hash != inst.hash || d.pod.UID != inst.pod.UID:
			inst.stopping = true
			c.replacing[key] = true
			plan.Stop = append(plan.Stop, Action{Pod: inst.pod, Origin: inst.origin, Why: Changed})
		}
	}
	for _, key := range sortedKeys(c.desired) {
		d := c.desired[key]
		if _, busy := c.running[key]; busy {
			continue
		}
		if _, busy := c.uids[d.pod.UID]; busy {
			continue // an instance with this UID (under another name) is still stopping
		}
		inst := &instance{candidate: d}
		c.running[key] = inst
		c.uids[d.pod.UID] = inst
		why := Added
		if c.replacing[key] {
			why = Changed
		}
		plan.Start = append(plan.Start, Action{Pod: d.pod, Origin: d.origin, Why: why})
	}
	for key := range c.replacing {
		if _, ok := c.desired[key]; !ok || c.running[key] != nil && !c.running[key].stopping {
			delete(c.replacing, key)
		}
	}
	return plan
}

// newProblems returns the current problems not reported yet, and remembers the current ones (a
// problem fixed and later made again is reported again).
func (c *Core) newProblems() []string {
	var current []string
	if c.dirProblem != "" {
		current = append(current, c.dirProblem)
	}
	for _, path := range sortedKeys(c.files) {
		current = append(current, c.files[path].problems...)
	}
	current = append(current, c.clashes...)
	var fresh []string
	now := make(map[string]bool, len(current))
	for _, p := range current {
		if !c.reported[p] && !now[p] {
			fresh = append(fresh, p)
		}
		now[p] = true
	}
	c.reported = now
	return fresh
}

// load decodes, defaults and validates one file. A pod without a UID gets one derived from the
// path and its content, as kubelet derives it; in a cluster, from the cluster name, the file's name
// and its content (and a pod with a UID is refused, see NewClusterCore).
func load(path string, data []byte, now time.Time, cluster string, gates features.Gates, fromURL bool) ([]candidate, []string) {
	decoded, errs := manifest.Decode(path, data)
	if len(errs) > 0 {
		var problems []string
		for _, e := range errs {
			problems = append(problems, manifest.OneLine(e.Error()))
		}
		return nil, problems
	}
	if len(decoded) == 0 {
		if fromURL && !manifest.Empty(data) {
			return nil, nil // an empty List: the URL's way of saying that no pod runs
		}
		hint := "delete the file to stop its pods"
		if fromURL {
			hint = "serve an empty List to stop its pods"
		}
		return nil, []string{fmt.Sprintf("%s: %v (%s)", path, manifest.ErrNoPods, hint)}
	}
	source := "file:" + path
	if fromURL {
		source = "url:" + path
	}
	var pods []candidate
	var problems []string
	for _, d := range decoded {
		raw, err := json.Marshal(d.Pod)
		if err != nil {
			problems = append(problems, fmt.Sprintf("%s: %v", d.Origin, err))
			continue
		}
		content := sha256.Sum256(raw)
		switch {
		case cluster != "" && d.Pod.UID != "":
			from := "file name"
			if fromURL {
				from = "URL"
			}
			problems = append(problems, fmt.Sprintf("%s: metadata.uid: Forbidden: with --cluster a static pod's UID derives from its %s and content, alike on every member (remove it)", d.Origin, from))
			continue
		case cluster != "" && fromURL:
			d.Pod.UID = derivedUID(fmt.Sprintf("cluster:%s\n%s\n", cluster, source), raw)
		case cluster != "":
			d.Pod.UID = derivedUID(fmt.Sprintf("cluster:%s\nfile:%s\n", cluster, filepath.Base(path)), raw)
		case d.Pod.UID == "":
			d.Pod.UID = derivedUID(source+"\n", raw)
		}
		for _, e := range proc.Prepare(d.Pod, now, gates) {
			problems = append(problems, manifest.OneLine(d.Origin+": "+e.Error()))
		}
		annotate(d.Pod, fromURL, now)
		pods = append(pods, candidate{key: podKey(d.Pod), pod: d.Pod, hash: hex.EncodeToString(content[:]), origin: d.Origin})
	}
	if len(problems) > 0 {
		return nil, problems
	}
	return pods, nil
}

// kubelet's annotations of a pod from a static source (pkg/kubelet/types): its config hash (the UID),
// its source and when node first saw it.
const (
	configHashAnnotation   = "kubernetes.io/config.hash"
	configSourceAnnotation = "kubernetes.io/config.source"
	configSeenAnnotation   = "kubernetes.io/config.seen"
)

// annotate gives pod kubelet's annotations of a static pod: config.hash is its UID, config.source
// "file" or "http", config.seen the time it was read, as kubelet's RFC 3339 timestamp in UTC. They
// are not part of the pod's content (its hash and derived UID are taken before).
func annotate(pod *v1.Pod, fromURL bool, now time.Time) {
	if pod.Annotations == nil {
		pod.Annotations = map[string]string{}
	}
	source := "file"
	if fromURL {
		source = "http"
	}
	pod.Annotations[configHashAnnotation] = string(pod.UID)
	pod.Annotations[configSourceAnnotation] = source
	pod.Annotations[configSeenAnnotation] = now.UTC().Format(time.RFC3339Nano)
}

// derivedUID is the UID of a pod whose content (JSON) is raw, read from the source that prefix names.
func derivedUID(prefix string, raw []byte) types.UID {
	h := sha256.New()
	h.Write([]byte(prefix))
	h.Write(raw)
	return types.UID(hex.EncodeToString(h.Sum(nil))[:32])
}

func sortedKeys[K ~string, V any](m map[K]V) []K {
	keys := make([]K, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}
