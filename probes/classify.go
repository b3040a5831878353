package probes

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"io"
	"net"
	"os"
	"strings"
	"syscall"
)

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
