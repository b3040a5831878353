// Package staticpod is node's static pod path (`node run --pod-manifest-path DIR`): kubelet's file
// source. Every regular file in DIR whose name does not start with "." is read once per
// --file-check-frequency; a file that appears starts its pods, a file that disappears stops them
// (each container with its grace period), a file whose pods change replaces them (the old instance
// is stopped first, then the new one starts).
//
// It is a pure core (Core: files in, a Plan of pods to start and stop and problems to report out,
// table-tested) in a thin shell (Watcher: one goroutine that lists the directory on a ticker, carries
// out the plan through a Runner and hears back when a stopped pod is gone).
//
// As kubelet: files starting with "." and subdirectories are ignored; files are read in name
// order; a pod without metadata.uid gets a UID derived from the file's path and the pod's content
// (so the same file gives the same UID after a restart of node, and an edited pod is a new pod);
// a pod with an unchanged content (comments and formatting do not count) is left alone; two pods
// with one namespace/name never run at once — a replacement starts only after the pod it replaces
// has stopped; directory changes are seen by polling (kubelet also uses inotify).
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
// In a cluster (`node run --cluster`; Options.Set and Cluster, NewClusterCore) the watcher only
// reads: after every read it hands the whole set of valid static pods to the cluster's sharder,
// which starts and stops this member's share. Parsing, problems and clashes are as above (nothing
// runs here, so among clashing pods the first file in name order wins, alike on every member that
// reads the same files). A pod's UID derives from the cluster name, the file's name (not its
// directory, which may differ between members) and the pod's content, so members agree on it and
// an edited pod is a new pod; metadata.uid is refused (Forbidden), since the sharder places and
// replaces pods by UID only. An unreadable directory hands over nothing: the last set stands.
//
// Invariants: the core never starts a pod while another instance with its name or UID still runs
// or stops; each distinct problem is reported once while it lasts (again if it recurs after it was
// fixed); Watcher.Close stops scanning, waits for the pods it is stopping and returns the ones it
// runs, so node's shutdown takes them down with the rest.
package staticpod
