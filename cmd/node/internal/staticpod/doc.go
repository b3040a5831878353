// Package staticpod is node's static pod path (`node run --pod-manifest-path DIR`): kubelet's file
// source. Every regular file in DIR whose name does not start with "." is read when inotify reports
// a change and once per --file-check-frequency; a file that appears starts its pods, a file that
// disappears stops them (each container with its grace period), a file whose pods change replaces
// them (the old instance is stopped first, then the new one starts).
//
// It is a pure core (Core: files in, a Plan of pods to start and stop and problems to report out,
// table-tested) in a thin shell (Watcher: one goroutine that decides when to list the path, carries
// out the plan through a Runner and hears back when a stopped pod is gone).
//
// It is also kubelet's URL source (`--manifest-url`, pkg/kubelet/config/http.go): a poller goroutine
// GETs the URL (with --manifest-url-header's headers, 10 s at most, as kubelet's client) at start,
// before Start returns, and every --http-check-frequency, and hands each answer to the loop, which
// gives it to the core as one more file (ScanURL, ReadURL) whose path is the URL. The path's files
// and the URL are one set of static pods: a listing of the path never drops the URL's pods, the
// URL's pods come after the path's in the order that decides a clash, and a clash is refused naming
// both. As kubelet's: an answer other than 200, or one that fails, changes nothing; a pod's UID
// derives from the URL and its content. A List of no items runs no pods (a server has no file to
// delete). Unlike kubelet's: an empty answer is a problem that changes nothing, as an empty file
// is (kubelet stops every pod of the URL; a server that serves a file while it is rewritten sends
// one); each distinct problem is logged once while it lasts (kubelet logs three failures, then only
// at a higher verbosity); an answer that does not decode or validate is reported with the URL and
// the field path (kubelet: without it); several documents are read, as from a file (kubelet: one
// pod or a PodList). Stop ends a GET under way.
//
// When: as kubelet (pkg/kubelet/config/file_linux.go), the path is watched with fsnotify (inotify) —
// a directory itself, a path naming one file through its parent directory (events for other names
// are ignored) — and a create, write, remove, rename or mode change of a manifest (names starting
// with "." ignored) makes the watcher read that file 100 ms after the first event of a burst
// (settleDelay: a burst is one read of the files it named, and a file written in steps is usually
// read complete; kubelet handles each event at once, reading the file it names). The other files
// are not read again: the core keeps what it last read of them (File.Unread), so a directory of
// 300 manifests with a pod replaced every second costs a read of one file a second, not of 300. An
// event on the directory itself (its mode; a single manifest file's path), lost events and the
// periodic read read the whole path. Without it, every pod added after start-up would start at one tick of one
// ticker, and the workers of all of them would probe in phase. The periodic read stays as the
// safety net, in a cluster too. A watch that cannot be set up or is lost — the path does not exist
// yet, inotify's limits (EMFILE, ENOSPC: the log says which sysctl to raise), the watched directory
// removed or moved, an error event (an overflow: events lost), inotify's reader ending — is
// logged once as a warning with the path and the error; the watcher keeps reading every period and
// tries to watch again at each periodic read until it works (an error event also reads soon;
// kubelet retries every 1 s, backing off to 20 s on errors other than a missing path; node at
// each read of the period). A
// symbolic link's target is not watched (only the name in the directory): its edits are seen by the
// periodic read. The decisions (classify: what an event means; watchDir: what to watch) are pure
// and table-tested.
//
// As kubelet: files starting with "." and subdirectories are ignored; files are read in name
// order; a pod without metadata.uid gets a UID derived from the file's path and the pod's content
// (so the same file gives the same UID after a restart of node, and an edited pod is a new pod);
// a pod with an unchanged content (comments and formatting do not count) is left alone; two pods
// with one namespace/name never run at once — a replacement starts only after the pod it replaces
// has stopped; changes are seen through inotify, with a periodic full read as the safety net; a
// pod carries kubelet's annotations kubernetes.io/config.hash (its UID), config.source ("file", or
// "http" for the URL's) and config.seen (when it was read; not part of its content).
//
// Deliberate differences from kubelet, each so that a mistake in one file cannot disturb running
// pods:
//   - a file that fails to read, decode or validate is reported (file and field path, as
//     `node validate` prints it) and changes nothing: the pods of its last valid version keep
//     running (kubelet drops them at its next full listing);
//   - a file may hold several pods (YAML documents or a List), as with -f (kubelet: one pod);
//   - a pod whose namespace/name or UID is already run by another file (or by -f) is refused with
//     both origins named; the pod already running keeps running, and among new ones the first file
//     in name order wins (kubelet keeps the first and logs the duplicate);
//   - names are not suffixed with the node name (node has no API server and no mirror pods);
//   - a directory that cannot be listed changes nothing (kubelet: a missing path stops every static
//     pod); a path naming one manifest file that is removed stops its pods, as a file removed from a
//     directory does.
//
// With Options.Registerer the watcher keeps two gauges: probeactor_static_pod_problems (Core.Problems:
// manifests that cannot be read, decoded or validated, the path if it cannot be listed, pods refused
// for a clash) after every read, and probeactor_static_pod_source_last_success_timestamp_seconds
// {source="path"|"url"}, so that a source that stopped being read is an alert, not a log line.
//
// In a cluster (`node run --cluster`; Options.Set and Cluster, NewClusterCore) the watcher only
// reads: after every read it hands the whole set of valid static pods to Set (node's cluster
// runner, cluster/runner's SetStaticPods, which gives the sharder the -f pods and these; the
// sharder starts and stops this member's share). Parsing, problems and clashes are as above (nothing
// runs here, so among clashing pods the first file in name order wins, alike on every member that
// reads the same files). A pod's UID derives from the cluster name, the file's name (not its
// directory, which may differ between members) and the pod's content, so members agree on it and
// an edited pod is a new pod; metadata.uid is refused (Forbidden), since the sharder places and
// replaces pods by UID only. An unreadable directory hands over nothing: the last set stands.
//
// Invariants: the core never starts a pod while another instance with its name or UID still runs
// or stops; each distinct problem is reported once while it lasts (again if it recurs after it was
// fixed); Watcher is a lifecycle.Component: Start starts its one goroutine, Stop ends it (and
// inotify's reader with it) and waits, bounded by its ctx, for the pods being stopped; the pods
// still running are left to whoever started them (node's pod host stops every pod it started).
package staticpod
