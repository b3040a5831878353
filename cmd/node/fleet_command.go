package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os/signal"
	"syscall"

	"github.com/hashicorp/go-hclog"

	"github.com/probeactor/probeactor/fleet/aggregator"
	"github.com/probeactor/probeactor/internal/lifecycle"
	"github.com/probeactor/probeactor/remotesec"
)

// fleetCommand is `node fleet`: it parses flags, runs a fleet aggregator until SIGINT/SIGTERM
// (a lifecycle list of that one part) and returns the exit code (2 for bad usage, 1 for failures).
func fleetCommand(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("fleet", flag.ContinueOnError)
	fs.SetOutput(stderr)
	var cfg aggregator.Config
	var certFile, keyFile, caFile, logLevel, logFormat string
	fs.StringVar(&cfg.Listen, "listen", aggregator.DefaultListen, "address of the HTTP API (/pods, /nodes, /events, /results, /metrics, /healthz)")
	fs.StringVar(&cfg.RemoteListen, "remote-listen", aggregator.DefaultRemoteListen, "address nodes connect to (protoactor remote, gRPC); a non-loopback address needs mutual TLS")
	fs.StringVar(&cfg.RemoteAdvertise, "remote-advertise", "", "host:port nodes dial, when --remote-listen's host is 0.0.0.0 or ::")
	fs.DurationVar(&cfg.GracePeriod, "node-monitor-grace-period", aggregator.DefaultGracePeriod, "time without contact after which a node's Ready condition turns Unknown")
	fs.StringVar(&certFile, "tls-cert-file", "", "PEM certificate of this aggregator (serverAuth and clientAuth, naming the advertised host); enables mutual TLS")
	fs.StringVar(&keyFile, "tls-private-key-file", "", "PEM private key of --tls-cert-file")
	fs.StringVar(&caFile, "client-ca-file", "", "PEM CA bundle that signed every node's certificate (a node's Common Name must be system:node:<node name>)")
	fs.StringVar(&logLevel, "log-level", "info", "log level: trace, debug, info, warn, error")
	fs.StringVar(&logFormat, "log-format", "text", "log format on stderr: text or json")
	fs.Usage = func() {
		fmt.Fprintf(stderr, "Usage: node fleet [--listen ADDR] [--remote-listen ADDR] [flags]\n\nRuns the fleet aggregator: nodes' uplinks report their pods and probe results to it; it serves them\nin the API server's shapes (node get nodes, node get pods -A).\n\nFlags:\n")
		fs.PrintDefaults()
	}
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return 0
		}
		return 2
	}
	if fs.NArg() > 0 {
		fmt.Fprintf(stderr, "error: unexpected arguments %q\n", fs.Args())
		return 2
	}
	lvl := hclog.LevelFromString(logLevel)
	if lvl == hclog.NoLevel {
		fmt.Fprintf(stderr, "error: --log-level %q: use trace, debug, info, warn or error\n", logLevel)
		return 2
	}
	if logFormat != "text" && logFormat != "json" {
		fmt.Fprintf(stderr, "error: --log-format %q: use text or json\n", logFormat)
		return 2
	}
	if err := cfg.Validate(); err != nil { // usage errors (2) before the TLS files are read (1)
		fmt.Fprintf(stderr, "error: %v\n", err)
		return 2
	}
	tlsCfg, err := remotesec.LoadTLS(certFile, keyFile, caFile)
	if err != nil {
		fmt.Fprintf(stderr, "error: %v\n", err)
		return 1
	}
	cfg.TLS = tlsCfg
	cfg.Logger = hclog.New(&hclog.LoggerOptions{Name: "fleet", Level: lvl, Output: stderr, JSONFormat: logFormat == "json"})
	if lvl <= hclog.Debug {
		cfg.ActorLogger = cfg.Logger.Named("protoactor")
	} else {
		cfg.ActorLogger = hclog.New(&hclog.LoggerOptions{Name: "fleet.protoactor", Level: hclog.Warn, Output: stderr, JSONFormat: logFormat == "json"})
	}
	agg, err := aggregator.New(cfg)
	if err != nil { // validated above
		fmt.Fprintf(stderr, "error: %v\n", err)
		return 2
	}

	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	defer stop()
	parts := lifecycle.New([]lifecycle.Part{{Name: "aggregator", Component: agg}}, lifecycle.WithLogger(cfg.Logger))
	if err := parts.Run(ctx); err != nil {
		cfg.Logger.Error("fleet aggregator failed", "error", err)
		return 1
	}
	cfg.Logger.Info("fleet aggregator stopped")
	return 0
}
