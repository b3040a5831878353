package membership

import (
	"errors"
	"fmt"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/probeactor/probeactor/internal/clock"
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
	// Remote configures this process's guarded remote (--cluster-listen, the TLS flags, and
	// whatever else the process's remote must accept besides membership). Start adds the cluster's
	// heartbeat type, the membership actor and futures (for the leave acknowledgements) to it.
	Remote remotesec.Config
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

	// lose (tests only) makes heartbeats to a peer vanish while it returns true: a connection that
	// loses what is sent without an error here (see heardOutcome.repair).
	lose func(peer string) bool
}

// repairAfter is how long a live peer may report views without this member before the
// connection to it is reset: half the failure timeout (at least one heartbeat interval), long
// enough for a peer that has just heard this member to publish and apply a view with it.
func (c *Config) repairAfter() time.Duration { return c.FailureTimeout / 2 }

// self is the address peers know this member by: the advertised address, else the listen address.
func (c *Config) self() string {
	if c.Remote.Advertise != "" {
		return c.Remote.Advertise
	}
	return c.Remote.Listen
}

// validate checks the configuration and fills in the defaults; errors name the flag.
func (c *Config) validate() error {
	if c.Cluster == "" {
		return errors.New("--cluster: the cluster name is required")
	}
	self := c.self()
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
		return fmt.Errorf("the failure timeout (%v) must be at least twice the heartbeat interval (%v)", c.FailureTimeout, c.HeartbeatInterval)
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
