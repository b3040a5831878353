package logging_test

import (
	"log/slog"
	"os"

	"github.com/hashicorp/go-hclog"

	"github.com/probeactor/probeactor/actors/logging"
)

func ExampleNewSlogHandler() {
	log := hclog.New(&hclog.LoggerOptions{Name: "node", Output: os.Stdout, DisableTime: true})
	slog.New(logging.NewSlogHandler(log)).
		With("system", "abc").
		WithGroup("probe").
		Warn("probe failed", "pod", "default/web", "attempt", 3)
	// Output: [WARN]  node: probe failed: system=abc probe.pod=default/web probe.attempt=3
}
