package main

import (
	"errors"
	"flag"
	"fmt"
	"strings"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation"

	"github.com/probeactor/probeactor/cluster/membership"
	"github.com/probeactor/probeactor/fleet/uplink"
)

// `node run --cluster NAME --cluster-listen ADDR --cluster-peers A,B,C -f pods.yaml`: several node
// processes share one set of pods. Every member reads the same manifests (-f, --pod-manifest-path,
// --manifest-url, or several of them); the membership part (cluster/membership: a failure detector over the guarded remote)
// gives the live members, the cluster-runner part (cluster/runner over cluster/sharder) runs this
// member's share (rendezvous hashing of pod UIDs, break-before-make handoffs) through the pod
// host's StartPod and StopPod. The cluster's remote is the process's one remote: with --fleet the
// uplink uses it. This file holds the flags; node.go assembles the parts.
//
// A pod without metadata.uid gets a UID derived from the cluster name, its namespace and name
// (runner.ClusterUID), so every member places it alike (a random UID per process would not be one
// pod).
//
// --pod-manifest-path (or --manifest-url) with --cluster: the static pod watcher only reads (staticpod's cluster mode)
// and after every read hands the runner the whole set, the -f pods and the directory's
// (Runner.SetStaticPods), so files added start pods on their owner, removed files stop them wherever they
// run, changed files replace them. A static pod's UID derives from the cluster name, its file's
// name and its content (a changed pod is a new pod, placed anew), alike on every member whatever
// its directory; metadata.uid is refused there, and a static pod whose namespace/name or UID an -f
// pod has is refused (the -f pod runs; the file and field are named, as without --cluster).
// Members whose directories differ for a moment (a file copied to one before another) never run a
// pod twice: each pod is placed by its UID over the live members, whatever the set it comes in. A
// pod only some members know runs on its rendezvous owner among the live members if that member
// knows it, else nowhere until it does; once the directories agree, so do the members. An edited
// static pod's new instance starts on its own owner (perhaps another member) while the old one
// stops with its grace period: two instances of one name may overlap that long (kubelet, on one
// node, starts the new one after the old stopped).

// clusterConfig is the cluster flags of `node run`.
type clusterConfig struct {
	name           string          // --cluster
	listen         string          // --cluster-listen
	peers          string          // --cluster-peers
	failureTimeout time.Duration   // --cluster-failure-timeout
	given          map[string]bool // the flags given on the command line (flagsSet)
}

func addClusterFlags(fs *flag.FlagSet, c *clusterConfig) {
	fs.StringVar(&c.name, "cluster", "", "join the cluster of this name: the members share the -f pods and the static pods (--pod-manifest-path's, --manifest-url's), each pod runs on one live member")
	fs.StringVar(&c.listen, "cluster-listen", "", "host:port of this member's remote (protoactor, gRPC), as its peers list it; a non-loopback address needs mutual TLS")
	fs.StringVar(&c.peers, "cluster-peers", "", "every member's --cluster-listen address, this one's included, comma-separated (the same list on every member)")
	fs.DurationVar(&c.failureTimeout, "cluster-failure-timeout", membership.DefaultFailureTimeout, "a member silent for this long is dropped and its pods start on the others (heartbeats every eighth of it)")
}

func (c *clusterConfig) enabled() bool { return c.name != "" || c.listen != "" || c.peers != "" }

// validate checks the cluster flags of a run with files -f manifests and static pods (a
// --pod-manifest-path or a --manifest-url) or not; errors name the flag. membership.New checks the
// peer list further (also naming the flags).
func (c *clusterConfig) validate(files int, static bool) error {
	if !c.enabled() {
		if c.given["cluster-failure-timeout"] { // a setting that would silently do nothing
			return errors.New("--cluster-failure-timeout: needs --cluster")
		}
		return nil
	}
	switch {
	case c.name == "":
		return errors.New("--cluster: the cluster's name is required with --cluster-listen and --cluster-peers")
	case len(validation.IsDNS1123Label(c.name)) > 0:
		return fmt.Errorf("--cluster %q: %s", c.name, validation.IsDNS1123Label(c.name)[0])
	case c.listen == "":
		return errors.New("--cluster-listen: required with --cluster (this member's host:port, as its peers list it)")
	case c.peers == "":
		return errors.New("--cluster-peers: required with --cluster (every member's address, this one's included)")
	case c.failureTimeout <= 0:
		return fmt.Errorf("--cluster-failure-timeout %v: must be a positive duration (e.g. 2s)", c.failureTimeout)
	case files == 0 && !static:
		return errors.New("--cluster needs -f manifests, --pod-manifest-path or --manifest-url: every member reads the same pods")
	}
	if err := checkHostPort(c.listen, false); err != nil {
		return fmt.Errorf("--cluster-listen %q: %w", c.listen, err)
	}
	if n := len(strings.Split(c.peers, ",")); n == 2 {
		return errors.New("--cluster-peers: 2 members cannot fail over safely: a member runs pods only while it is in contact with a majority, " +
			"and 2 members have none once either is lost; list 3 or more members (or 1)")
	}
	return nil
}

// ClusterQuorumCondition is the node condition a cluster member reports to the fleet: True while
// it holds its quorum lease and runs its share, False (reason QuorumLost) while it runs no pods.
const ClusterQuorumCondition = "ClusterQuorum"

// quorumCondition is the ClusterQuorum condition for the runner's reason ("" while the member
// runs its share).
func quorumCondition(reason string, now time.Time) uplink.Condition {
	if reason == "" {
		return uplink.Condition{Type: ClusterQuorumCondition, Status: "True", Reason: "QuorumHeld",
			Message: "a majority of the cluster's members grants this member its lease: it runs its share of the pods", Transition: now}
	}
	why, msg, ok := strings.Cut(reason, ": ")
	if !ok {
		why, msg = "QuorumLost", reason
	}
	return uplink.Condition{Type: ClusterQuorumCondition, Status: "False", Reason: why, Message: msg + "; it runs no pods", Transition: now}
}

// nodeCondition is c as a v1.NodeCondition, for node's own Node object (its heartbeat is set when
// the object is read).
func nodeCondition(c uplink.Condition) v1.NodeCondition {
	return v1.NodeCondition{Type: v1.NodeConditionType(c.Type), Status: v1.ConditionStatus(c.Status), Reason: c.Reason, Message: c.Message,
		LastTransitionTime: metav1.NewTime(c.Transition)}
}
