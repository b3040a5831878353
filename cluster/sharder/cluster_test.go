package sharder_test

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/asynkron/protoactor-go/actor"
	"github.com/asynkron/protoactor-go/remote"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/probeactor/probeactor/actors/logging"
	"github.com/probeactor/probeactor/cluster/internal/clustertest"
	"github.com/probeactor/probeactor/cluster/membership"
	"github.com/probeactor/probeactor/cluster/sharder"
	"github.com/probeactor/probeactor/internal/freeport"
	"github.com/probeactor/probeactor/internal/logtest"
	"github.com/probeactor/probeactor/internal/racecheck"
	"github.com/probeactor/probeactor/remotesec"
)

// member is one in-process cluster member: an actor system with its membership and sharder.
type member struct {
	addr   string
	sys    *actor.ActorSystem
	remote *remote.Remote
	m      *membership.Member
	pid    *actor.PID
}

func startMember(t testing.TB, ledger *clustertest.Ledger, addr string, peers []string, pods []*v1.Pod) *member {
	t.Helper()
	log := logtest.New(t).Named(addr)
	sys := actor.NewActorSystem(logging.SystemOption(log), actor.WithDeadLetterThrottleInterval(10*time.Millisecond))
	m, err := membership.New(sys, membership.Config{Cluster: "demo", Peers: peers, Self: addr,
		FailureTimeout: time.Second, HeartbeatInterval: 100 * time.Millisecond, AwaitApplied: true, Logger: log})
	require.NoError(t, err)
	r, err := remotesec.Start(sys, membership.RemoteConfig(remotesec.Config{Listen: addr, Logger: log}))
	require.NoError(t, err)
	props, err := sharder.Props(sharder.Config{Membership: m, Runner: ledger.Runner(addr), Logger: log, Margin: func(time.Duration) time.Duration { return 0 }})
	require.NoError(t, err)
	pid, err := sys.Root.SpawnNamed(props, sharder.ActorName)
	require.NoError(t, err)
	res, err := sys.Root.RequestFuture(pid, &sharder.SetPods{Pods: pods}, 5*time.Second).Result()
	require.NoError(t, err)
	require.NoError(t, res.(*sharder.SetPodsResult).Err)
	require.NoError(t, m.Start(t.Context())) // the sharder is subscribed: it sees the first view
	return &member{addr: addr, sys: sys, remote: r, m: m, pid: pid}
}

// leave is the graceful exit a node performs: release the pods, leave, stop the sharder, stop the
// remote.
func (mb *member) leave(t testing.TB) {
	res, err := mb.sys.Root.RequestFuture(mb.pid, &sharder.Release{}, 5*time.Second).Result()
	require.NoError(t, err)
	require.IsType(t, &sharder.Released{}, res)
	require.NoError(t, mb.m.Stop(context.Background()))
	require.NoError(t, mb.sys.Root.PoisonFuture(mb.pid).Wait())
	remotesec.Stop(mb.remote)
}

func testPods(n int) ([]*v1.Pod, []types.UID) {
	var pods []*v1.Pod
	var uids []types.UID
	for i := range n {
		uid := types.UID(fmt.Sprintf("pod-%02d", i))
		grace := int64(1)
		pods = append(pods, &v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: string(uid), Namespace: "default", UID: uid}, Spec: v1.PodSpec{TerminationGracePeriodSeconds: &grace}})
		uids = append(uids, uid)
	}
	return pods, uids
}

// Three members in one process share 30 pods exactly once; one leaves and its pods move to the
// others; it comes back and gets its share back. Each handoff is break-before-make: the ledger
// (one clock for every member) never shows a pod started on one member before the other stopped
// it. Three remotes in one process race on gRPC's global logger (protoactor's remote.Start), so
// the scenario runs in a child process with the known protoactor races allow-listed.
func TestMembersShareThePodsAndHandThemOverWithoutRunningOneTwice(t *testing.T) {
	racecheck.InChild(t, racecheck.KnownProtoactorRaces, func(t testing.TB) {
		ledger := &clustertest.Ledger{}
		pods, uids := testPods(30)
		addrs := []string{freeport.Addr(t), freeport.Addr(t), freeport.Addr(t)}
		slices.Sort(addrs)
		ms := make([]*member, 3)
		var wg sync.WaitGroup
		for i, a := range addrs {
			wg.Go(func() { ms[i] = startMember(t, ledger, a, addrs, pods) })
		}
		wg.Wait()
		for i, m := range ms {
			require.NotNil(t, m, "member %s started", addrs[i]) // startMember failed in its goroutine
		}
		exactlyOnce := func(members []string, what string) {
			var err error
			require.Eventually(t, func() bool {
				err = clustertest.ExactlyOnce(ledger.Events(), uids, members)
				return err == nil
			}, 30*time.Second, 10*time.Millisecond, "%s: %v", what, err)
		}
		exactlyOnce(addrs, "three members start")
		began := time.Now()

		left := time.Now()
		ms[2].leave(t)
		exactlyOnce(addrs[:2], "after a leave")
		t.Logf("graceful leave → every pod running again: %v", clustertest.LastChange(ledger.Events(), left).Sub(left).Round(time.Millisecond))

		back := time.Now()
		ms[2] = startMember(t, ledger, addrs[2], addrs, pods)
		exactlyOnce(addrs, "after the rejoin")
		t.Logf("rejoin → rebalanced: %v", clustertest.LastChange(ledger.Events(), back).Sub(back).Round(time.Millisecond))

		longest, n := clustertest.Duplicates(ledger.Events(), began)
		assert.Zero(t, n, "no pod ran on two members at once (longest %v)", longest)
		for _, m := range ms {
			m.leave(t)
		}
	})
}
