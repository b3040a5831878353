package main

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"flag"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/asynkron/protoactor-go/actor"
	"github.com/hashicorp/go-hclog"
	"github.com/prometheus/client_golang/prometheus"
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/validation"

	"github.com/probeactor/probeactor/cluster/membership"
	"github.com/probeactor/probeactor/cluster/sharder"
	"github.com/probeactor/probeactor/fleet/uplink"
	"github.com/probeactor/probeactor/remotesec"
	"github.com/probeactor/probeactor/wire/fleetv1"
)

// `node run --cluster NAME --cluster-listen ADDR --cluster-peers A,B,C -f pods.yaml`: several node
// processes share one set of pods. Every member reads the same manifests (-f, --pod-manifest-path
// or both); cluster/membership (protoactor's cluster with a static-peers provider, on a guarded
// remote) gives the live members, cluster/sharder runs this member's share (rendezvous hashing of
// pod UIDs, break-before-make handoffs) through clusterRunner, over node's own pod start/stop
// (StartPod, StopPod: the static pod path). The cluster's remote is the process's one remote: with
// --fleet the uplink uses it.
//
// A pod without metadata.uid gets a UID derived from the cluster name, its namespace and name
// (clusterUID), so every member places it alike (a random UID per process would not be one pod).
//
// --pod-manifest-path with --cluster: the static pod watcher only reads (staticpod's cluster mode)
// and after every read hands the sharder the whole set, the -f pods and the directory's
// (setStaticPods), so files added start pods on their owner, removed files stop them wherever they
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
	name           string        // --cluster
	listen         string        // --cluster-listen
	peers          string        // --cluster-peers
	failureTimeout time.Duration // --cluster-failure-timeout
}

func addClusterFlags(fs *flag.FlagSet, c *clusterConfig) {
	fs.StringVar(&c.name, "cluster", "", "join the cluster of this name: the members share the -f pods and --pod-manifest-path's static pods, each pod runs on one live member")
	fs.StringVar(&c.listen, "cluster-listen", "", "host:port of this member's remote (protoactor, gRPC), as its peers list it; a non-loopback address needs mutual TLS")
	fs.StringVar(&c.peers, "cluster-peers", "", "every member's --cluster-listen address, this one's included, comma-separated (the same list on every member)")
	fs.DurationVar(&c.failureTimeout, "cluster-failure-timeout", membership.DefaultFailureTimeout, "a member silent for this long is dropped and its pods start on the others (heartbeats every eighth of it)")
}

func (c *clusterConfig) enabled() bool { return c.name != "" || c.listen != "" || c.peers != "" }

// validate checks the cluster flags of a run with files -f manifests and a static pod path;
// errors name the flag. membership.New checks the peer list further (also naming the flags).
func (c *clusterConfig) validate(files int, manifestPath string) error {
	if !c.enabled() {
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
	case files == 0 && manifestPath == "":
		return errors.New("--cluster needs -f manifests or --pod-manifest-path: every member reads the same pods")
	}
	if err := checkHostPort(c.listen, false); err != nil {
		return fmt.Errorf("--cluster-listen %q: %w", c.listen, err)
	}
	return nil
}

// clusterUID gives a pod without metadata.uid a UID every member of the cluster derives alike.
func clusterUID(cluster string) func(*v1.Pod) {
	return func(p *v1.Pod) {
		if p.UID != "" {
			return
		}
		ns := p.Namespace
		if ns == "" {
			ns = "default"
		}
		h := sha256.Sum256([]byte("probeactor-cluster\x00" + cluster + "\x00" + ns + "\x00" + p.Name))
		p.UID = types.UID(hex.EncodeToString(h[:16]))
	}
}

// clusterPodSet is the cluster's pod set as every member gives it to its sharder: the -f pods, then
// the static pods of --pod-manifest-path (the static pod watcher refuses those whose namespace/name
// or UID an -f pod has, so every UID is there once).
func clusterPodSet(files, static []*v1.Pod) []*v1.Pod {
	return append(slices.Clip(files), static...)
}

// clusterLink is what node runs for the cluster.
type clusterLink struct {
	cfg      clusterConfig
	member   *membership.Member
	runner   *clusterRunner
	reg      prometheus.Registerer
	sharder  *actor.PID
	joined   bool
	filePods []*v1.Pod              // the -f pods
	lastSet  map[types.UID]struct{} // the last set given to the sharder (owned by whoever sets it: joinCluster, then the static pod watcher)
}

// buildCluster prepares the membership on the node's actor system (nothing listens yet): its
// remote also takes the fleet aggregator's answers to the uplink when --fleet is given.
func (n *node) buildCluster(cfg runConfig, reg prometheus.Registerer) error {
	if !cfg.cluster.enabled() {
		return nil
	}
	rc := remotesec.Config{Listen: cfg.cluster.listen, TLS: cfg.fleet.tls, Logger: n.log.Named("remote")}
	if cfg.fleet.aggregator != "" {
		rc.Accept, rc.Targets, rc.Futures = fleetv1.ToNode(), []string{uplink.ActorName}, true
	}
	m, err := membership.New(n.sys, membership.Config{Cluster: cfg.cluster.name, Peers: strings.Split(cfg.cluster.peers, ","), Remote: rc,
		FailureTimeout: cfg.cluster.failureTimeout, AwaitApplied: true, Logger: n.log.Named("cluster"), Registerer: reg})
	if err != nil {
		return err
	}
	n.cluster = &clusterLink{cfg: cfg.cluster, member: m, reg: reg, runner: newClusterRunner(n, n.log.Named("cluster"))}
	return nil
}

// joinCluster hands the pods to the sharder, joins the cluster (the remote starts listening) and
// then starts the fleet uplink on the cluster's remote. Housekeeping runs, as pods come and go.
func (n *node) joinCluster(pods []*v1.Pod) error {
	c := n.cluster
	props, err := sharder.Props(sharder.Config{Membership: c.member, Runner: c.runner, Logger: n.log.Named("cluster"), Registerer: c.reg})
	if err != nil {
		return err
	}
	if c.sharder, err = n.sys.Root.SpawnNamed(props, sharder.ActorName); err != nil {
		return fmt.Errorf("start the sharder: %w", err)
	}
	c.filePods = pods
	if err := n.setClusterPods(pods); err != nil {
		return err
	}
	n.housekeepingDone = make(chan struct{})
	go n.housekeeping() // ends when shutdown closes housekeepingStop
	if err := c.member.Start(); err != nil {
		return fmt.Errorf("--cluster-listen %s: %w", c.cfg.listen, err)
	}
	c.joined = true
	n.log.Info("member of the cluster", "cluster", c.cfg.name, "self", c.member.Self(), "pods_in_set", len(pods))
	if f := n.fleet; f != nil {
		return n.startUplink(f.cfg)
	}
	return nil
}

// setClusterPods gives the sharder the cluster's whole pod set.
func (n *node) setClusterPods(pods []*v1.Pod) error {
	c := n.cluster
	res, err := n.sys.Root.RequestFuture(c.sharder, &sharder.SetPods{Pods: pods}, 10*time.Second).Result()
	if err != nil {
		return fmt.Errorf("give the pods to the sharder: %w", err)
	}
	if r, ok := res.(*sharder.SetPodsResult); !ok || r.Err != nil {
		return fmt.Errorf("give the pods to the sharder: %v", res)
	}
	set := make(map[types.UID]struct{}, len(pods))
	added := 0
	for _, p := range pods {
		set[p.UID] = struct{}{}
		if _, ok := c.lastSet[p.UID]; !ok {
			added++
		}
	}
	if removed := len(c.lastSet) + added - len(set); c.lastSet != nil && added+removed > 0 {
		n.log.Info("the cluster's pod set changed", "pods_in_set", len(set), "added", added, "removed", removed)
	}
	c.lastSet = set
	return nil
}

// setStaticPods is the static pod watcher's Set with --cluster (called on its goroutine after every
// read of --pod-manifest-path): the sharder gets the -f pods and these. A refusal leaves the
// previous set in place.
func (n *node) setStaticPods(static []*v1.Pod) {
	if err := n.setClusterPods(clusterPodSet(n.cluster.filePods, static)); err != nil {
		n.log.Error("the cluster's pod set was not updated; the previous one stands", "error", err)
	}
}

// leaveCluster is the first step of shutdown in cluster mode: the sharder stops every pod here
// (each with its grace period; no start after), then the membership tells the peers this member
// leaves so they take the pods over at once, then the sharder stops.
func (n *node) leaveCluster() {
	c := n.cluster
	if c == nil {
		return
	}
	if c.sharder != nil {
		if _, err := n.sys.Root.RequestFuture(c.sharder, &sharder.Release{}, 10*time.Second).Result(); err != nil {
			n.log.Error("could not release the cluster's pods", "error", err)
		}
	}
	c.runner.Close() // waits for the stops the release issued
	n.stopFleet()    // reports the stops, while the cluster's remote still runs
	if c.joined {
		c.member.Stop()
	}
	if c.sharder != nil {
		if err := n.sys.Root.PoisonFuture(c.sharder).Wait(); err != nil {
			n.log.Warn("sharder did not stop cleanly", "error", err)
		}
	}
}

// podOps is what clusterRunner needs of node (StartPod and StopPod of the static pod path).
type podOps interface {
	StartPod(pod *v1.Pod) error
	StopPod(pod *v1.Pod)
}

// clusterRunner is the sharder's PodRunner over node's pods. Start runs a pod at once; Stop hands
// the stop (grace period included: StopPod waits for it) to a goroutine, so neither blocks the
// sharder. A pod started again while it is still stopping (its share came back) starts once the
// stop finished.
type clusterRunner struct {
	ops podOps
	log hclog.Logger

	mu     sync.Mutex
	pods   map[types.UID]*runnerPod
	closed bool
	stops  sync.WaitGroup // one per stop in progress; each ends when its pod stopped
}

type runnerPod struct {
	pod      *v1.Pod
	stopping bool
	again    *v1.Pod // start this once the stop finished
}

func newClusterRunner(ops podOps, log hclog.Logger) *clusterRunner {
	return &clusterRunner{ops: ops, log: log, pods: map[types.UID]*runnerPod{}}
}

var errRunnerClosed = errors.New("node is shutting down")

// Start implements sharder.PodRunner.
func (r *clusterRunner) Start(pod *v1.Pod) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.closed {
		return errRunnerClosed
	}
	if p, ok := r.pods[pod.UID]; ok {
		if p.stopping {
			p.again = pod
		}
		return nil
	}
	if err := r.ops.StartPod(pod); err != nil {
		return err
	}
	r.pods[pod.UID] = &runnerPod{pod: pod}
	return nil
}

// Stop implements sharder.PodRunner. The grace period is the pod's own (StopPod reads it from the
// spec, as the sharder does).
func (r *clusterRunner) Stop(uid types.UID, _ time.Duration) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	p, ok := r.pods[uid]
	if !ok {
		return nil
	}
	p.again = nil
	if p.stopping {
		return nil
	}
	p.stopping = true
	r.stops.Go(func() { // ends when the pod stopped (StopPod is bounded by its grace period)
		r.ops.StopPod(p.pod)
		r.mu.Lock()
		defer r.mu.Unlock()
		delete(r.pods, uid)
		if again := p.again; again != nil && !r.closed {
			if err := r.ops.StartPod(again); err != nil {
				r.log.Error("could not start a pod again after its stop; it stays stopped here", "uid", uid, "error", err)
				return
			}
			r.pods[uid] = &runnerPod{pod: again}
		}
	})
	return nil
}

// Close refuses further starts and waits for the stops in progress.
func (r *clusterRunner) Close() {
	r.mu.Lock()
	r.closed = true
	r.mu.Unlock()
	r.stops.Wait()
}
