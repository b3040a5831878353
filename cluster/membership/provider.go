package membership

import (
	"fmt"

	"github.com/asynkron/protoactor-go/actor"
	"github.com/asynkron/protoactor-go/cluster"
)

// provider is protoactor's ClusterProvider for a static list of peers: it spawns the membership
// actor, which heartbeats every peer over the guarded remote and reports the live members to
// protoactor's MemberList (UpdateClusterTopology). It binds nothing beyond the remote's own
// listener: the health checks are the remote's messages.
type provider struct {
	m       *Member
	started bool
}

var _ cluster.ClusterProvider = (*provider)(nil)

// StartMember runs inside protoactor's Cluster.StartMember, once the remote is listening.
func (p *provider) StartMember(c *cluster.Cluster) error {
	props := actor.PropsFromProducer(func() actor.Actor { return newMemberActor(p.m, c) })
	pid, err := c.ActorSystem.Root.SpawnNamed(props, ActorName)
	if err != nil {
		return fmt.Errorf("spawn the membership actor: %w", err)
	}
	p.m.mu.Lock()
	p.m.pid = pid
	p.m.mu.Unlock()
	p.started = true
	return nil
}

func (p *provider) StartClient(*cluster.Cluster) error { return errNoClient }

// Shutdown stops the membership actor (protoactor's Cluster.Shutdown calls it; Member.Stop does
// the whole sequence itself).
func (p *provider) Shutdown(bool) error {
	pid := p.m.actor()
	if pid == nil {
		return nil
	}
	return p.m.sys.Root.PoisonFuture(pid).Wait()
}

// noGrains is the identity lookup of a cluster without grains: members run their pods as
// ordinary local actors (see the package doc), so nothing is ever looked up or activated, and
// protoactor's disthash lookup (its placement actor, its rendezvous swapped under Get, #1131) is
// not started at all.
type noGrains struct{}

var _ cluster.IdentityLookup = noGrains{}

func (noGrains) Get(*cluster.ClusterIdentity) *actor.PID        { return nil }
func (noGrains) RemovePid(*cluster.ClusterIdentity, *actor.PID) {}
func (noGrains) Setup(*cluster.Cluster, []string, bool)         {}
func (noGrains) Shutdown()                                      {}
