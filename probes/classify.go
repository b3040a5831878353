package probes

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"strings"
	"syscall"
)

// ownResourceErrnos are the errors with which the kernel refuses the prober itself, not the target:
// no descriptor (per process or system-wide), no kernel memory or socket buffers, no ephemeral port
// left, or no process slot or routing entry (EAGAIN from fork or connect).
var ownResourceErrnos = []syscall.Errno{
	syscall.EMFILE, syscall.ENFILE, syscall.ENOBUFS, syscall.ENOMEM, syscall.EADDRNOTAVAIL, syscall.EAGAIN,
}

// exhausted reports whether err (from a dial or from starting an exec command) is the prober's own
// resource exhaustion. What a target does — refuse, reset, time out, answer badly — never is.
func exhausted(err error) bool {
	for _, e := range ownResourceErrnos {
		if errors.Is(err, e) {
			return true
		}
	}
	return false
}

// exhaustedOutcome is the attempt the prober could not make for want of its own resources.
func exhaustedOutcome(err error) (Outcome, error) {
	return Outcome{Result: Unknown, Reason: ReasonExhausted}, fmt.Errorf("%w: %w", ErrExhausted, err)
}

// classifyNetError maps a transport error to a machine-readable Reason.
func classifyNetError(err error) Reason {
	if err == nil {
		return ReasonNone
	}
	var (
		dnsErr   *net.DNSError
		recErr   tls.RecordHeaderError
		alertErr tls.AlertError
		certErr  *tls.CertificateVerificationError
		unkAuth  x509.UnknownAuthorityError
		netErr   net.Error
	)
	switch {
	case errors.As(err, &dnsErr):
		return ReasonDNS
	case errors.Is(err, context.DeadlineExceeded), errors.Is(err, os.ErrDeadlineExceeded):
		return ReasonTimeout
	case errors.As(err, &netErr) && netErr.Timeout():
		return ReasonTimeout
	case errors.Is(err, syscall.ECONNREFUSED):
		return ReasonConnectionRefused
	case errors.Is(err, syscall.ECONNRESET), errors.Is(err, syscall.EPIPE),
		errors.Is(err, io.EOF), errors.Is(err, io.ErrUnexpectedEOF):
		return ReasonConnectionReset
	case errors.As(err, &recErr), errors.As(err, &alertErr), errors.As(err, &certErr), errors.As(err, &unkAuth):
		return ReasonTLS
	case errors.Is(err, context.Canceled):
		return ReasonCanceled
	case strings.Contains(err.Error(), "tls: "):
		return ReasonTLS
	case strings.Contains(err.Error(), "malformed HTTP"), strings.Contains(err.Error(), "server gave HTTP response"):
		return ReasonProtocol
	default:
		return ReasonError
	}
}
