package membership

import (
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/prometheus/client_golang/prometheus"
	"google.golang.org/protobuf/proto"

	"github.com/probeactor/probeactor/internal/clock"
	"github.com/probeactor/probeactor/internal/restartbudget"
	"github.com/probeactor/probeactor/remotesec"
	"github.com/probeactor/probeactor/wire/clusterv1"
)

// Defaults of the failure detector.
const (
	// DefaultFailureTimeout is how long a peer may stay silent before it is dropped from the view:
	// the detection time of a dead member (kill → removed: between the timeout minus one
	// heartbeat interval and the timeout plus one interval).
	DefaultFailureTimeout = 2 * time.Second
	// DefaultLeaveTimeout bounds how long Stop waits for the peers to acknowledge its leave.
	DefaultLeaveTimeout = time.Second
	// minHeartbeatInterval keeps a typo from flooding the peers.
	minHeartbeatInterval = 10 * time.Millisecond
)

// Config configures one cluster member.
type Config struct {
	// Cluster is the cluster's name (--cluster): heartbeats of another cluster are ignored.
	Cluster string
	// Peers lists every member's advertised address (--cluster-peers), this member's included.
	// Every member should be given the same list.
	Peers []string
	// Self is this member's address as its peers list it (--cluster-listen, or the address it
	// advertises): the address of the actor system's remote, which must run before Start (see
	// RemoteConfig).
	Self string
	// FailureTimeout: a peer silent for longer is dropped from the view (default 2 s).
	FailureTimeout time.Duration
	// HeartbeatInterval: how often heartbeats go out (default FailureTimeout/8, at least 10 ms;
	// at most half the failure timeout).
	HeartbeatInterval time.Duration
	// AwaitApplied: heartbeats report the last view the subscriber acknowledged with
	// Member.Applied instead of the last one published (the sharder sets it; see Applied).
	AwaitApplied bool
	// LeaveTimeout bounds how long Stop waits for peers to acknowledge the leave (default 1 s).
	LeaveTimeout time.Duration
	// Incarnation identifies this process among restarts at the same address: default its start
	// time in Unix nanoseconds (a restart is newer).
	Incarnation uint64
	// Clock gives the time and the timers (default: the wall clock, clock.Real).
	Clock  clock.Clock
	Logger hclog.Logger
	// Registerer, when set, gets probeactor_cluster_* metrics.
	Registerer prometheus.Registerer
	// Lease, when set, is called (on the membership actor: it must not block) whenever this
	// member's quorum lease end changes, before the view that carries it is published: node
	// hands it to its containers' shims, which stop their containers when it runs out (not called
	// in a one-member cluster, whose lease never ends; a zero time: no lease any more).
	Lease func(until time.Time)
	// RestartBudget, when N > 0, is the restart budget the cluster's members share (node run
	// --restart-budget with --cluster): at most N kills by liveness or startup failures across
	// the cluster per Window (see the package doc, "The shared restart budget"; Want, Taken).
	RestartBudget restartbudget.Budget

	// lose (tests only) makes heartbeats to a peer vanish while it returns true: a connection that
	// loses what is sent without an error here (see heardOutcome.repair).
	lose func(peer string) bool
}

// repairAfter is how long a live peer may go without acknowledging a heartbeat of this member
// before the connection to it is reset: half the failure timeout (four heartbeat intervals by
// default), well above a round trip plus an interval and well below the peer's failure timeout.
func (c *Config) repairAfter() time.Duration { return c.FailureTimeout / 2 }

// RemoteConfig returns base plus what the membership needs from this process's remote: the
// cluster's heartbeat type (clusterv1), the "membership" actor as a target, futures (peers
// acknowledge a leave by answering its request), and an Inspect that binds a heartbeat's address
// to the address its stream announced (verified by the guard: the peer's IP without TLS, its
// certificate with mTLS) before deferring to base.Inspect for the caller's own messages. The
// process starts one remote with it (remotesec.Start) before Member.Start and stops it
// (remotesec.Stop) after Member.Stop; its listen or advertised address is Config.Self.
func RemoteConfig(base remotesec.Config) remotesec.Config {
	c := base
	c.Accept = append(slices.Clone(base.Accept), clusterv1.Names()...)
	c.Targets = append(slices.Clone(base.Targets), ActorName)
	c.Futures = true
	c.Inspect = inspect(base.Inspect)
	return c
}

// inspect binds a heartbeat's address to the stream it arrived on (the guard verified that the
// peer owns that address: its IP without TLS, its certificate with mTLS), then defers to the
// caller's own check for its messages.
func inspect(next func(string, []byte, remotesec.Peer) error) func(string, []byte, remotesec.Peer) error {
	name := clusterv1.Names()[0]
	return func(typeName string, data []byte, peer remotesec.Peer) error {
		if typeName != name {
			if next != nil {
				return next(typeName, data, peer)
			}
			return nil
		}
		var hb clusterv1.Heartbeat
		if err := proto.Unmarshal(data, &hb); err != nil {
			return fmt.Errorf("heartbeat: %w", err)
		}
		if hb.GetAddress() != peer.Address {
			return fmt.Errorf("a heartbeat from %s speaks for %q", peer.Address, hb.GetAddress())
		}
		return nil
	}
}

// validate checks the configuration and fills in the defaults; errors name the flag.
func (c *Config) validate() error {
	if c.Cluster == "" {
		return errors.New("--cluster: the cluster name is required")
	}
	self := c.Self
	if err := clusterv1.CheckAddress(self); err != nil {
		return fmt.Errorf("--cluster-listen: this member's address must be a fixed host:port its peers list: %w", err)
	}
	if len(c.Peers) == 0 {
		return errors.New("--cluster-peers: required (every member's address, this one's included)")
	}
	if len(c.Peers) > clusterv1.MaxView {
		return fmt.Errorf("--cluster-peers: %d members (at most %d)", len(c.Peers), clusterv1.MaxView)
	}
	seen := map[string]bool{}
	for i, p := range c.Peers {
		if err := clusterv1.CheckAddress(p); err != nil {
			return fmt.Errorf("--cluster-peers: entry %d: %w", i+1, err)
		}
		if seen[p] {
			return fmt.Errorf("--cluster-peers: entry %d: %s is listed twice", i+1, p)
		}
		seen[p] = true
	}
	if !seen[self] {
		return fmt.Errorf("--cluster-peers must list this member's own address %s (as its peers list it)", self)
	}
	if c.FailureTimeout == 0 {
		c.FailureTimeout = DefaultFailureTimeout
	}
	if c.HeartbeatInterval == 0 {
		c.HeartbeatInterval = max(c.FailureTimeout/8, minHeartbeatInterval)
	}
	if c.FailureTimeout < 0 || c.HeartbeatInterval < minHeartbeatInterval {
		return fmt.Errorf("the heartbeat interval (%v) must be at least %v and the failure timeout (%v) positive", c.HeartbeatInterval, minHeartbeatInterval, c.FailureTimeout)
	}
	if c.FailureTimeout < 2*c.HeartbeatInterval {
		return fmt.Errorf("--cluster-failure-timeout %v: must be at least twice the heartbeat interval (%v)", c.FailureTimeout, c.HeartbeatInterval)
	}
	if b := c.RestartBudget; b != (restartbudget.Budget{}) {
		if err := b.Validate(); err != nil {
			return fmt.Errorf("--restart-budget: %w", err)
		}
	}
	if c.LeaveTimeout <= 0 {
		c.LeaveTimeout = DefaultLeaveTimeout
	}
	if c.Incarnation == 0 {
		c.Incarnation = uint64(time.Now().UnixNano())
	}
	if c.Clock == nil {
		c.Clock = clock.Real()
	}
	if c.Logger == nil {
		c.Logger = hclog.NewNullLogger()
	}
	return nil
}
