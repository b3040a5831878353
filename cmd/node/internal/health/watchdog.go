package health

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/hashicorp/go-hclog"
)

// The states node sends to systemd (sd_notify(3)).
const (
	Ready    = "READY=1"
	Stopping = "STOPPING=1"
	Alive    = "WATCHDOG=1"
)

// minWatchdog is the shortest WatchdogSec node accepts (kubelet's minimalNotifyInterval).
const minWatchdog = time.Second

// Notify sends state to the systemd notification socket at socket (a path, or "@name" for an
// abstract one); without a socket (not started by systemd, or not Type=notify) it sends nothing
// and returns false.
func Notify(socket, state string) (bool, error) {
	if socket == "" {
		return false, nil
	}
	conn, err := net.DialUnix("unixgram", nil, &net.UnixAddr{Name: socket, Net: "unixgram"})
	if err != nil {
		return false, fmt.Errorf("notify systemd at %s: %w", socket, err)
	}
	defer conn.Close()
	if _, err := conn.Write([]byte(state)); err != nil {
		return false, fmt.Errorf("notify systemd at %s: %w", socket, err)
	}
	return true, nil
}

// WatchdogInterval is how often node tells systemd it is alive: half of $WATCHDOG_USEC (getenv
// reads the environment), 0 when there is no watchdog or it is another process's
// ($WATCHDOG_PID), as sd_watchdog_enabled(3). A value that does not parse, or a watchdog of a
// second or less, is an error (kubelet refuses to start on both).
func WatchdogInterval(getenv func(string) string, pid int) (time.Duration, error) {
	usec := getenv("WATCHDOG_USEC")
	if usec == "" {
		return 0, nil
	}
	if p := getenv("WATCHDOG_PID"); p != "" && p != strconv.Itoa(pid) {
		return 0, nil
	}
	n, err := strconv.ParseUint(usec, 10, 63)
	if err != nil || n == 0 {
		return 0, fmt.Errorf("systemd watchdog: WATCHDOG_USEC=%q: want a positive number of microseconds", usec)
	}
	d := time.Duration(n) * time.Microsecond
	if d <= minWatchdog {
		return 0, fmt.Errorf("systemd watchdog: WatchdogSec %v is too small: node needs more than %v", d, minWatchdog)
	}
	return d / 2, nil
}

// WatchdogOptions configure a Watchdog.
type WatchdogOptions struct {
	Checks []Check
	// Interval is how often the checks run and, when they pass, WATCHDOG=1 is sent; 0: never
	// (READY=1 and STOPPING=1 only). node's is WatchdogInterval's.
	Interval time.Duration
	// Notify sends a state to systemd (node's: Notify at $NOTIFY_SOCKET).
	Notify func(state string) (bool, error)
	Logger hclog.Logger
}

// Watchdog is node's systemd notifier, a lifecycle component (doc.go).
type Watchdog struct {
	opts WatchdogOptions
	stop chan struct{}
	done chan struct{}
}

// NewWatchdog returns a Watchdog, not started.
func NewWatchdog(opts WatchdogOptions) *Watchdog {
	if opts.Logger == nil {
		opts.Logger = hclog.NewNullLogger()
	}
	return &Watchdog{opts: opts, stop: make(chan struct{}), done: make(chan struct{})}
}

// systemdVars are the variables systemd hands a service for sd_notify(3).
var systemdVars = []string{"NOTIFY_SOCKET", "WATCHDOG_USEC", "WATCHDOG_PID"}

// FromEnvironment is node's Watchdog: systemd's socket and watchdog from this process's
// environment, which it then removes from it (sd_notify's unset_environment), so that no
// container or exec probe, which inherit node's environment, talks to systemd as node.
func FromEnvironment(checks []Check, log hclog.Logger) (*Watchdog, error) {
	interval, err := WatchdogInterval(os.Getenv, os.Getpid())
	if err != nil {
		return nil, err
	}
	socket := os.Getenv("NOTIFY_SOCKET")
	for _, v := range systemdVars {
		_ = os.Unsetenv(v)
	}
	if interval > 0 && socket == "" {
		return nil, errors.New("systemd watchdog: WATCHDOG_USEC is set but NOTIFY_SOCKET is not: node could not tell systemd it is alive (Type=notify, or NotifyAccess=main)")
	}
	return NewWatchdog(WatchdogOptions{Checks: checks, Interval: interval, Logger: log,
		Notify: func(state string) (bool, error) { return Notify(socket, state) }}), nil
}

// Start sends READY=1 and starts the watchdog loop on a goroutine that ends with Stop.
func (w *Watchdog) Start(context.Context) error {
	w.notify(Ready)
	if w.opts.Interval <= 0 {
		close(w.done)
		return nil
	}
	w.opts.Logger.Info("systemd watchdog: telling systemd node is alive while every health check passes", "every", w.opts.Interval,
		"checks", names(w.opts.Checks))
	go w.loop()
	return nil
}

// Stop ends the loop (a check under way ends first, within CheckTimeout) and sends STOPPING=1.
func (w *Watchdog) Stop(ctx context.Context) error {
	select {
	case <-w.stop:
	default:
		close(w.stop)
	}
	select {
	case <-w.done:
	case <-ctx.Done():
		return ctx.Err()
	}
	w.notify(Stopping)
	return nil
}

func (w *Watchdog) loop() {
	defer close(w.done)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go func() { // a check under way ends with Stop
		select {
		case <-w.stop:
			cancel()
		case <-ctx.Done():
		}
	}()
	t := time.NewTicker(w.opts.Interval)
	defer t.Stop()
	for {
		select {
		case <-w.stop:
			return
		case <-t.C:
		}
		if failed := Failures(ctx, w.opts.Checks); len(failed) > 0 {
			if ctx.Err() == nil {
				w.opts.Logger.Error("systemd watchdog: not telling systemd node is alive: a health check failed (systemd restarts node when this lasts WatchdogSec; the containers wait for the next node)",
					"failed", strings.Join(failed, "; "))
			}
			continue
		}
		w.notify(Alive)
	}
}

func (w *Watchdog) notify(state string) {
	if _, err := w.opts.Notify(state); err != nil {
		w.opts.Logger.Warn("systemd notification failed", "state", state, "error", err)
	}
}
