// Command testmember is a cluster member for tests only: a guarded remote (remotesec), the
// cluster membership on it (cluster/membership) and a sharder (cluster/sharder) over a fake PodRunner that runs nothing and
// prints every start and stop, and every view, as event lines (clustertest.Line) on stdout. The
// process tests of this package build it and run three of them on fixed 127.0.0.1 ports, SIGKILL
// and restart them, and check what runs where from those lines. Node's own cluster mode is phase 2.
//
//	testmember --cluster demo --listen 127.0.0.1:7101 --peers 127.0.0.1:7101,127.0.0.1:7102 --pods 60
//
// SIGTERM leaves the cluster gracefully (the pods are released first); SIGKILL is a crash.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/signal"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/asynkron/protoactor-go/actor"
	"github.com/hashicorp/go-hclog"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/probeactor/probeactor/actors/logging"
	"github.com/probeactor/probeactor/cluster/internal/clustertest"
	"github.com/probeactor/probeactor/cluster/membership"
	"github.com/probeactor/probeactor/cluster/sharder"
	"github.com/probeactor/probeactor/remotesec"
)

func main() { os.Exit(run(os.Args[1:], os.Stdout, os.Stderr)) }

// printer writes event lines; the runner (sharder goroutine) and the view subscription
// (membership goroutine) share it.
type printer struct {
	mu sync.Mutex
	w  io.Writer
}

func (p *printer) event(e clustertest.Event) {
	p.mu.Lock()
	defer p.mu.Unlock()
	fmt.Fprintln(p.w, clustertest.Line(e))
}

// runner is the fake PodRunner: it runs nothing and prints what it is asked.
type runner struct{ p *printer }

func (r *runner) Start(pod *v1.Pod) error {
	r.p.event(clustertest.Event{At: time.Now(), Kind: clustertest.Start, UID: pod.UID})
	return nil
}

func (r *runner) Stop(uid types.UID, _ time.Duration) error {
	r.p.event(clustertest.Event{At: time.Now(), Kind: clustertest.Stop, UID: uid})
	return nil
}

func run(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("testmember", flag.ContinueOnError)
	fs.SetOutput(stderr)
	name := fs.String("cluster", "demo", "cluster name")
	listen := fs.String("listen", "", "remote listen address (host:port), also this member's address")
	peers := fs.String("peers", "", "every member's address, comma-separated")
	timeout := fs.Duration("failure-timeout", membership.DefaultFailureTimeout, "failure detection time")
	interval := fs.Duration("heartbeat-interval", 0, "heartbeat interval (default: failure timeout / 8)")
	npods := fs.Int("pods", 60, "fake pods pod-00 … in the set")
	metricsListen := fs.String("metrics-listen", "", "serve /metrics here (optional)")
	certFile := fs.String("tls-cert-file", "", "member certificate (mTLS)")
	keyFile := fs.String("tls-private-key-file", "", "member key (mTLS)")
	caFile := fs.String("client-ca-file", "", "cluster CA (mTLS)")
	level := fs.String("log-level", "info", "log level")
	if err := fs.Parse(args); err != nil {
		return 2
	}
	// Catch the stop signals first: a test may stop a member while it is still joining, and a
	// SIGTERM that arrives before the handler is installed would kill the process uncleanly.
	sig := make(chan os.Signal, 1)
	signal.Notify(sig, syscall.SIGTERM, syscall.SIGINT)
	defer signal.Stop(sig)
	log := hclog.New(&hclog.LoggerOptions{Name: *listen, Level: hclog.LevelFromString(*level), Output: stderr})
	tlsCfg, err := remotesec.LoadTLS(*certFile, *keyFile, *caFile)
	if err != nil {
		log.Error("bad flags", "error", err)
		return 2
	}
	reg := prometheus.NewRegistry()
	if *metricsListen != "" {
		ln, err := net.Listen("tcp", *metricsListen)
		if err != nil {
			log.Error("--metrics-listen", "error", err)
			return 1
		}
		srv := &http.Server{Handler: promhttp.HandlerFor(reg, promhttp.HandlerOpts{}), ReadHeaderTimeout: 5 * time.Second}
		go func() { _ = srv.Serve(ln) }() // ends with the process
	}

	// protoactor logs every topology change and connection at Info: keep its warnings only,
	// unless debugging.
	actorLevel := max(hclog.LevelFromString(*level), hclog.Warn)
	if l := hclog.LevelFromString(*level); l <= hclog.Debug && l != hclog.NoLevel {
		actorLevel = l
	}
	actorLog := hclog.New(&hclog.LoggerOptions{Name: *listen + ".protoactor", Level: actorLevel, Output: stderr})
	sys := actor.NewActorSystem(logging.SystemOption(actorLog))
	m, err := membership.New(sys, membership.Config{
		Cluster: *name, Peers: strings.Split(*peers, ","), Self: *listen,
		FailureTimeout: *timeout, HeartbeatInterval: *interval, AwaitApplied: true, Logger: log.Named("membership"), Registerer: reg,
	})
	if err != nil {
		log.Error("cluster configuration", "error", err)
		return 1
	}
	// node's order: the remote starts before the membership and stops after it.
	r, err := remotesec.Start(sys, membership.RemoteConfig(remotesec.Config{Listen: *listen, TLS: tlsCfg, Logger: log.Named("remote"), Registerer: reg}))
	if err != nil {
		log.Error("remote", "error", err)
		return 1
	}
	defer remotesec.Stop(r)
	out := &printer{w: stdout}
	cancel := m.Subscribe(func(v membership.View) {
		out.event(clustertest.Event{At: v.Published, Kind: clustertest.View, Members: v.Members})
	})
	defer cancel()
	props, err := sharder.Props(sharder.Config{Membership: m, Runner: &runner{p: out}, Logger: log.Named("sharder"), Registerer: reg,
		Margin: sharder.Margin(*timeout)})
	if err != nil {
		log.Error("sharder", "error", err)
		return 1
	}
	pid, err := sys.Root.SpawnNamed(props, sharder.ActorName)
	if err != nil {
		log.Error("sharder", "error", err)
		return 1
	}
	var pods []*v1.Pod
	for i := range *npods {
		uid := types.UID(fmt.Sprintf("pod-%02d", i))
		grace := int64(1)
		pods = append(pods, &v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: string(uid), Namespace: "default", UID: uid}, Spec: v1.PodSpec{TerminationGracePeriodSeconds: &grace}})
	}
	if err := request(sys, pid, &sharder.SetPods{Pods: pods}); err != nil {
		log.Error("set pods", "error", err)
		return 1
	}
	if err := m.Start(context.Background()); err != nil { // the sharder is subscribed: it sees the first view
		log.Error("join the cluster", "error", err)
		_ = sys.Root.PoisonFuture(pid).Wait()
		return 1
	}
	log.Info("member running", "self", m.Self(), "pods", len(pods))

	<-sig
	log.Info("leaving the cluster")
	if err := request(sys, pid, &sharder.Release{}); err != nil {
		log.Error("release", "error", err)
	}
	ctx, cancelStop := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancelStop()
	if err := m.Stop(ctx); err != nil {
		log.Error("leave the cluster", "error", err)
	}
	_ = sys.Root.PoisonFuture(pid).Wait()
	return 0
}

func request(sys *actor.ActorSystem, pid *actor.PID, msg any) error {
	res, err := sys.Root.RequestFuture(pid, msg, 10*time.Second).Result()
	if err != nil {
		return err
	}
	if r, ok := res.(*sharder.SetPodsResult); ok && r.Err != nil {
		return r.Err
	}
	if res == nil {
		return errors.New("no answer")
	}
	return nil
}
