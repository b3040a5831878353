package probes

import (
	"context"
	"errors"
	"io"
	"time"

	v1 "k8s.io/api/core/v1"
)

// Result is what one probe attempt observed (kubelet's probe.Result).
type Result int

const (
	// Success: the target is healthy.
	Success Result = iota
	// Warning counts as success but carries a message (kubelet: an HTTP redirect to another host).
	Warning
	// Failure: the target answered unhealthy, or did not answer in time.
	Failure
	// Unknown: the attempt produced no verdict.
	Unknown
)

// String returns kubelet's lower-case names: "success", "warning", "failure", "unknown".
func (r Result) String() string {
	switch r {
	case Success:
		return "success"
	case Warning:
		return "warning"
	case Failure:
		return "failure"
	default:
		return "unknown"
	}
}

// Reason is a machine-readable cause for a non-success Outcome, beyond kubelet's free text.
type Reason string

// Reasons an attempt can report. The empty Reason means none (a Success).
const (
	ReasonNone              Reason = ""
	ReasonTimeout           Reason = "Timeout"
	ReasonConnectionRefused Reason = "ConnectionRefused"
	ReasonConnectionReset   Reason = "ConnectionReset"
	ReasonDNS               Reason = "DNS"
	ReasonTLS               Reason = "TLS"
	ReasonStatusCode        Reason = "StatusCode"
	ReasonRedirect          Reason = "Redirect"
	ReasonExitCode          Reason = "ExitCode"
	ReasonNotServing        Reason = "NotServing"
	ReasonProtocol          Reason = "Protocol"
	ReasonNoHandler         Reason = "NoHandler"
	ReasonError             Reason = "Error"
	// ReasonInvalidPort: a named port did not resolve or a port number is out of range (the attempt
	// could not be made; Probe also returns an error).
	ReasonInvalidPort Reason = "InvalidPort"
	// ReasonCanceled: the caller's context ended before the attempt finished (Probe also returns an
	// error: the verdict is not trustworthy).
	ReasonCanceled Reason = "Canceled"
	// ReasonExhausted: the prober's own resources ran out — descriptors, memory, socket buffers,
	// ephemeral ports, processes — so the attempt could not be made (Probe also returns an error
	// wrapping ErrExhausted). Nothing the target did.
	ReasonExhausted Reason = "Exhausted"
)

// Outcome is the full report of one attempt.
type Outcome struct {
	Result   Result
	Output   string        // kubelet's output text (body, command output, or error text), capped at 10 KiB
	Reason   Reason        // why it was not a Success
	Duration time.Duration // wall time of the attempt
}

// Target is what an attempt is aimed at: the container (for named ports, env and its runtime ID) and
// the pod IP (the default host).
type Target struct {
	Container   *v1.Container
	ContainerID string // "<type>://<id>", handed to the CommandRunner for exec probes
	PodIP       string
}

// CommandRunner runs an exec probe's command "in" a container. The runner writes stdout then stderr
// to out (which caps what it keeps), honours ctx's deadline, and returns:
//   - nil for exit status 0;
//   - an error with an ExitCode() int method for a non-zero exit;
//   - an error wrapping ErrCommandTimedOut when the deadline passed (after the command and everything
//     it started have been killed and reaped);
//   - any other error when the command could not be run.
type CommandRunner interface {
	RunInContainer(ctx context.Context, containerID string, cmd []string, out io.Writer) error
}

// ErrCommandTimedOut is wrapped by CommandRunner errors when the probe's timeout expired.
var ErrCommandTimedOut = errors.New("command timed out")

// ErrNoHandler is wrapped by Probe's error when the probe sets none of exec, httpGet, tcpSocket and
// grpc (kubelet: "missing probe handler for <pod>:<container>").
var ErrNoHandler = errors.New("missing probe handler")

// ErrExhausted is wrapped by Probe's error when the attempt failed because the prober itself (its
// process or its node) ran out of a resource: EMFILE, ENFILE, ENOBUFS, ENOMEM, EADDRNOTAVAIL (no
// ephemeral port left) or EAGAIN (fork, routing) while connecting or starting an exec command. The
// target is not at fault, so like every probe error it is retried and then discarded: the previous
// result stands and nothing is restarted for it.
var ErrExhausted = errors.New("prober out of resources")

// ErrInvalidPort is Probe's error (errors.Is) when the probe's port cannot be resolved: an unknown
// port name, or a number outside 1–65535. The error's text is kubelet's alone (`port "http" not
// found`, "invalid port number: 70000").
var ErrInvalidPort = errors.New("invalid probe port")
