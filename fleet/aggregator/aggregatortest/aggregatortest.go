// Package aggregatortest is test support for the fleet aggregator, for test packages that cannot
// import cmd/node:
//
//   - Child is internal/fleettest's aggregator role (fleettest.AggregatorRole): register it in
//     TestMain with fleettest.Register(fleettest.AggregatorRole, aggregatortest.Child) before
//     fleettest.Main, and fleettest.StartAggregator runs it as a child process. It is the test
//     harness's child, not a CLI: it takes only the flags fleettest passes and runs the same
//     aggregator.Aggregator that `node fleet` runs (cmd/node's tests register the real `node
//     fleet` instead).
//   - Push delivers one batch to an aggregator's fleet actor the way a node's uplink would, without
//     an actor system.
package aggregatortest

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"

	"github.com/asynkron/protoactor-go/actor"
	"github.com/asynkron/protoactor-go/remote"
	"github.com/hashicorp/go-hclog"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials"
	"google.golang.org/protobuf/proto"

	"github.com/probeactor/probeactor/fleet/aggregator"
	"github.com/probeactor/probeactor/internal/lifecycle"
	"github.com/probeactor/probeactor/remotesec"
	"github.com/probeactor/probeactor/wire/fleetv1"
)

// Child runs an aggregator in a child process of fleettest until SIGTERM (or SIGINT) and returns
// the exit code: 0 after a clean stop, 1 when it failed, 2 for arguments it does not take. args
// are fleettest's: --listen, --remote-listen, --node-monitor-grace-period, --log-level and the
// TLS flags of remotesectest's certificates (--tls-cert-file, --tls-private-key-file,
// --client-ca-file). It logs to stderr, where fleettest reads the addresses it bound.
func Child(args []string) int {
	fs := flag.NewFlagSet("aggregatortest", flag.ContinueOnError)
	fs.SetOutput(os.Stderr)
	var cfg aggregator.Config
	var certFile, keyFile, caFile, logLevel string
	fs.StringVar(&cfg.Listen, "listen", "127.0.0.1:0", "")
	fs.StringVar(&cfg.RemoteListen, "remote-listen", "127.0.0.1:0", "")
	fs.DurationVar(&cfg.GracePeriod, "node-monitor-grace-period", aggregator.DefaultGracePeriod, "")
	fs.StringVar(&logLevel, "log-level", "debug", "")
	fs.StringVar(&certFile, "tls-cert-file", "", "")
	fs.StringVar(&keyFile, "tls-private-key-file", "", "")
	fs.StringVar(&caFile, "client-ca-file", "", "")
	if err := fs.Parse(args); err != nil {
		return 2
	}
	if fs.NArg() > 0 {
		fmt.Fprintf(os.Stderr, "aggregatortest: unexpected arguments %q\n", fs.Args())
		return 2
	}
	tlsCfg, err := remotesec.LoadTLS(certFile, keyFile, caFile)
	if err != nil {
		fmt.Fprintf(os.Stderr, "aggregatortest: %v\n", err)
		return 1
	}
	cfg.TLS = tlsCfg
	cfg.Logger = hclog.New(&hclog.LoggerOptions{Name: "fleet", Level: hclog.LevelFromString(logLevel), Output: os.Stderr})
	cfg.ActorLogger = cfg.Logger.Named("protoactor")
	agg, err := aggregator.New(cfg)
	if err != nil {
		fmt.Fprintf(os.Stderr, "aggregatortest: %v\n", err)
		return 2
	}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, syscall.SIGINT)
	defer stop()
	if err := lifecycle.New([]lifecycle.Part{{Name: "aggregator", Component: agg}}, lifecycle.WithLogger(cfg.Logger)).Run(ctx); err != nil {
		cfg.Logger.Error("fleet aggregator failed", "error", err)
		return 1
	}
	cfg.Logger.Info("fleet aggregator stopped")
	return 0
}

// Push delivers one batch to an aggregator's fleet actor over a raw protoactor Remoting stream,
// the way a node's uplink would but without an actor system (so a test process needs no remote of
// its own): it announces self (a loopback address nobody needs to listen on; nothing is answered
// because the batch has no sender) and keeps the stream open until ctx ends.
func Push(ctx context.Context, remoteAddr, self string, creds credentials.TransportCredentials, c *fleetv1.Changes) error {
	conn, err := grpc.NewClient(remoteAddr, grpc.WithTransportCredentials(creds))
	if err != nil {
		return err
	}
	defer conn.Close()
	s, err := remote.NewRemotingClient(conn).Receive(ctx)
	if err != nil {
		return err
	}
	if err := s.Send(&remote.RemoteMessage{MessageType: &remote.RemoteMessage_ConnectRequest{ConnectRequest: &remote.ConnectRequest{
		ConnectionType: &remote.ConnectRequest_ServerConnection{ServerConnection: &remote.ServerConnection{SystemId: "fleettest", Address: self}}}}}); err != nil {
		return err
	}
	if _, err := s.Recv(); err != nil {
		return err
	}
	data, err := proto.Marshal(c)
	if err != nil {
		return err
	}
	if err := s.Send(&remote.RemoteMessage{MessageType: &remote.RemoteMessage_MessageBatch{MessageBatch: &remote.MessageBatch{
		TypeNames: []string{string(c.ProtoReflect().Descriptor().FullName())},
		Targets:   []*actor.PID{{Address: remoteAddr, Id: aggregator.ActorName}},
		Envelopes: []*remote.MessageEnvelope{{MessageData: data}},
	}}}); err != nil {
		return err
	}
	if err := s.CloseSend(); err != nil {
		return err
	}
	for { // the server ends the stream once it has read everything sent
		if _, err := s.Recv(); err != nil {
			if errors.Is(err, io.EOF) {
				return nil
			}
			return err
		}
	}
}
